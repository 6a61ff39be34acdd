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

from .canonical import fresh_copy, key_of
from .chat_keys import ChatKeys

Request = dict[str, Any]

#: The prefix tree of every cassette with the default pipeline: a suite replays the same
#: conversation (or its system prompt and first question) in test after test, each with a
#: fresh cassette, and the message dicts it hands are the same objects (``stable_messages``).
SHARED_CHAT_KEYS = ChatKeys()

#: Enough for every distinct request of a large agent run; emptied when full (a suite
#: that sends more distinct requests than this only loses the shortcut, never an answer).
MAX_ENTRIES = 4096
#: Characters of text identities held (LangChain's carry the serialized conversation, so an
#: agent's grow with its history: 200 turns of 2 KB would otherwise keep ~40 MB alive).
MAX_CHARS = 4_000_000


class KeyMemo:
    """``identity -> (normalized request, key)`` for one cassette's pipeline."""

    __slots__ = ("_chars", "_chat", "_entries", "_normalize")

    def __init__(self, normalize: Callable[[Request], Request], *, by_prefix: bool = False) -> None:
        self._normalize = normalize
        self._entries: dict[Hashable, tuple[Request, str]] = {}
        self._chars = 0
        #: prefix-resumable keys (see ``chat_keys``), for the default pipeline (which also
        #: never changes what it is given; any other pipeline is handed a copy): one tree
        #: for every such cassette of the process, the pipeline being the same
        self._chat = SHARED_CHAT_KEYS if by_prefix else None

    def keyed(
        self,
        request: Request | Callable[[], Request],
        identity: Hashable | None = None,
        *,
        stable_messages: bool = False,
    ) -> tuple[Request, str]:
        """The normalized request and its key; ``request`` may be a builder, called only
        when ``identity`` has not been seen.

        ``stable_messages``: the request's message dicts are the caller's own, never
        changed, and handed again (the very objects) in later requests that extend this
        one, so the work done for them is resumed (``chat_keys``).

        The normalized request is shared by every call with this identity: callers read
        it (miss reports, recording copies it through the redactor), never change it.
        """
        if identity is not None:
            found = self._entries.get(identity)
            if found is not None:
                return found
        built = request() if callable(request) else request
        entry = None
        if self._chat is None:  # a user's step may change what it is given: adapters share
            built = fresh_copy(built)  # parts of their requests between calls
        elif stable_messages:
            entry = self._chat.keyed(built)
        if entry is None:
            normalized = self._normalize(built)
            entry = (normalized, key_of(normalized))
        if identity is not None:
            size = _text_size(identity)
            if len(self._entries) >= MAX_ENTRIES or self._chars + size > MAX_CHARS:
                self._entries.clear()
                self._chars = 0
            self._entries[identity] = entry
            self._chars += size
        return entry


def _text_size(identity: Hashable) -> int:
    """The characters of text an identity holds (its normalized request holds about as many)."""
    if isinstance(identity, str):
        return len(identity)
    if isinstance(identity, tuple):
        return sum(len(part) for part in identity if isinstance(part, str))
    return 0
