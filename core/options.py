"""The ``Cassette`` options integrations read (``replay_tools``, ...), declared by them.

A misspelled option must be an error, not silently ignored; but the engine knows no
framework. Adapters declare the names they read (``chaincassette.registry`` does it for
every adapter it loads); ``known()`` asks the registry to load the installed adapters
first, through the ``loader`` it installs here, so a third-party adapter's options are
known before its framework is ever imported.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

_lock = threading.Lock()
_declared: set[str] = set()

#: Set by ``chaincassette.registry``: loads the adapters of installed entry points.
loader: Callable[[], None] | None = None


def declare(names: Iterable[str]) -> None:
    with _lock:
        _declared.update(names)


def known() -> set[str]:
    if loader is not None:
        loader()
    with _lock:
        return set(_declared)
