"""Keys of requests a program sends again and again, computed once per cassette.

A replayed agent or test suite asks the same cassette the same question many times
(``allow_playback_repeats``, loops, one graph run per test). Building, normalizing and
hashing the request is most of what a replayed call costs, so an adapter that can name a
request cheaply (LangChain's ``prompt`` and ``llm_string`` strings, say) passes that name
as ``identity`` and the work is done once. Normalizers are pure functions of the request,
so the memo is exact; it lives in one cassette because the pipeline is that cassette's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from .canonical import key_of

Request = dict[str, Any]

#: Enough for every distinct request of a large agent run; emptied when full (a suite
#: that sends more distinct requests than this only loses the shortcut, never an answer).
MAX_ENTRIES = 4096


class KeyMemo:
    """``identity -> (normalized request, key)`` for one cassette's pipeline."""

    __slots__ = ("_entries", "_normalize")

    def __init__(self, normalize: Callable[[Request], Request]) -> None:
        self._normalize = normalize
        self._entries: dict[Hashable, tuple[Request, str]] = {}

    def keyed(
        self, request: Request | Callable[[], Request], identity: Hashable | None = None
    ) -> tuple[Request, str]:
        """The normalized request and its key; ``request`` may be a builder, called only
        when ``identity`` has not been seen.

        The normalized request is shared by every call with this identity: callers read
        it (miss reports, recording copies it through the redactor), never change it.
        """
        if identity is not None:
            found = self._entries.get(identity)
            if found is not None:
                return found
        built = request() if callable(request) else request
        normalized = self._normalize(built)
        entry = (normalized, key_of(normalized))
        if identity is not None:
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
            self._entries[identity] = entry
        return entry
