"""The one bounded memo: what a cassette remembers to make its next call cheaper.

Every memo in chaincassette belongs to one ``Cassette`` and dies with it; none is shared
between cassettes or held by a module. A memo is only a shortcut: emptied when full, it
loses time, never an answer. Its values are the owner's; whoever reads one hands out a
copy or an immutable value.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """At most ``max_entries`` values, weighing at most ``max_weight`` in all (``weigh(key,
    value)`` of each entry, its size in whatever unit the owner counts); cleared when either
    is exceeded. Safe for threads: two threads computing one entry both get a right answer."""

    __slots__ = ("_entries", "_lock", "_weight", "get", "max_entries", "max_weight", "weigh")

    def __init__(
        self,
        max_entries: int,
        *,
        max_weight: int | None = None,
        weigh: Callable[[K, V], int] | None = None,
    ) -> None:
        self.max_entries = max_entries
        self.max_weight = max_weight
        self.weigh = weigh
        self._entries: dict[K, V] = {}
        self._weight = 0
        self._lock = threading.Lock()
        #: the value remembered for a key, or ``None``: the dict's own ``get`` (a memo is
        #: asked in the innermost loops; ``put`` only ever clears this same dict)
        self.get: Callable[[K], V | None] = self._entries.get

    def put(self, key: K, value: V) -> None:
        weight = self.weigh(key, value) if self.weigh is not None else 0
        if self.max_weight is not None and weight > self.max_weight:
            return  # one huge value would crowd out every other
        with self._lock:
            full = len(self._entries) >= self.max_entries
            if full or (self.max_weight is not None and self._weight + weight > self.max_weight):
                self._entries.clear()
                self._weight = 0
            self._entries[key] = value
            self._weight += weight

    def __len__(self) -> int:
        return len(self._entries)
