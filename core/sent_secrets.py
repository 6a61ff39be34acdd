"""The secrets a cassette's requests sent, so that a response repeating one is masked too.

A program puts a session token or a key in a prompt; the stored request masks it (a known
format, or a token that reads as random), and a model that repeats it, or a tool that
returns it, must not put it on disk right below. ``SentSecrets`` holds, for one cassette
(``Redactor.sent``), each value a request's redaction masked and the kind it was masked as;
``chaincassette.redact`` masks them in responses the way it masks the values of secret
variables. The values are held in memory only, never written anywhere.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence

from . import secret_env

#: What a response pass reads: the pattern of every spelling (longest first), the kind of
#: each spelling, and whether every spelling reads the same in JSON text.
Sent = tuple[re.Pattern[str] | None, dict[str, str], bool]
NOTHING_SENT: Sent = (None, {}, True)
#: The values one cassette masks in responses at most: every string of every response is
#: searched for all of them (a program sends a few; past this, a response is kept as it
#: came, as before: a random token stored, a known format refused).
MAX_VALUES = 64


def matcher(labels: dict[str, str], plain: Callable[[str], bool]) -> Sent:
    """What a pass masks with: one pattern of every spelling in ``labels``, longest first
    (a value holding a shorter one is masked whole), a copy of ``labels`` (spelling -> its
    label), and whether JSON text holds every spelling verbatim (``plain``). The secret
    variables' values are matched the same way (``redact._EnvValues``)."""
    ordered = sorted(labels, key=lambda v: (-len(v), v))
    pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
    return pattern, dict(labels), all(map(plain, ordered))


class SentSecrets:
    """The values a cassette's requests had masked, each with its kind (``random-token``,
    ``openai-key``...). ``spellings(value)`` gives how a value may sit in a response (a JSON
    string, a ``repr``), ``allow`` the patterns of ``allow_secrets`` (a value one matches
    whole goes through), and ``plain(spelling)`` whether JSON text holds it verbatim. (The
    patterns, not the redactor's method: a cassette goes with its last reference, no cycle.)"""

    def __init__(
        self,
        spellings: Callable[[str], list[str]],
        allow: Sequence[re.Pattern[str]],
        plain: Callable[[str], bool],
    ) -> None:
        self._spellings = spellings
        self._allow = tuple(allow)
        self._plain = plain
        self._lock = threading.Lock()
        self._values: set[str] = set()  # every value offered, kept or not: judged once
        self._kept = 0
        self._kinds: dict[str, str] = {}  # spelled value -> kind
        self._current: Sent = NOTHING_SENT  # replaced whole, never changed

    def learn(self, found: Iterable[tuple[str, str]]) -> None:
        """Remember each (value, kind) a request's redaction masked; one too short or too
        plain to be a secret (the rules of ``secret_env.worth_masking``), or allowed, is
        never masked in a response."""
        new = [(value, kind) for value, kind in found if value not in self._values]
        if not new:
            return
        with self._lock:
            changed = False
            for value, kind in new:
                if value in self._values:
                    continue
                self._values.add(value)
                if self._kept >= MAX_VALUES or not self._worth_masking(value):
                    continue
                self._kept += 1
                for spelled in self._spellings(value):
                    if spelled not in self._kinds:
                        self._kinds[spelled] = kind
                        changed = True
            if changed:
                self._current = matcher(self._kinds, self._plain)

    def _worth_masking(self, value: str) -> bool:
        if any(allowed.fullmatch(value) for allowed in self._allow):
            return False
        return secret_env.worth_masking(value)

    def current(self) -> Sent:
        """What a pass masks: the values learned so far (``NOTHING_SENT`` before any)."""
        return self._current

    def __len__(self) -> int:
        return len(self._current[1])
