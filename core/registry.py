"""Adapters: what each framework integration installs while a cassette is in use.

An adapter declares its ``name``, the module it ``requires`` (it is activated only once
the program imports that module, see ``chaincassette.deferred``), the ``Cassette``
options it reads, and ``activate(cassette)``, which returns a context manager that undoes
everything it did when the block ends. Installed integrations are found through the
``chaincassette.hooks`` entry point group; ``register_hook`` adds one by hand.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from . import options
from .deferred import Hook

ENTRY_POINT_GROUP = "chaincassette.hooks"


@dataclass(frozen=True, eq=False)
class Adapter:
    """One integration's contract with the engine (see the module docstring)."""

    name: str
    activate: Hook
    requires: str | None = None
    options: tuple[str, ...] = field(default=())
    guard: Callable[[], AbstractContextManager[Any] | None] | None = None
    """What the live-call guard installs outside any block (``chaincassette.live_guard``):
    the interception points that then refuse model calls no cassette serves."""

    def __call__(self, cassette: Any) -> AbstractContextManager[Any] | None:
        return self.activate(cassette)


_lock = threading.Lock()
_hooks: list[Hook] = []
_entry_points_loaded = False


def register_hook(hook: Hook) -> Hook:
    """Run ``hook(cassette)`` whenever a ``use_cassette`` block starts.

    The hook (an ``Adapter``, or any callable) may return a context manager; it is
    entered for the block and exited after it, in reverse order of registration. A hook
    with a ``requires`` attribute (a module name) waits until that module is imported;
    its ``options`` attribute names the ``Cassette`` options it reads.
    """
    options.declare(getattr(hook, "options", ()) or ())
    with _lock:
        if hook not in _hooks:
            _hooks.append(hook)
    return hook


def unregister_hook(hook: Hook) -> None:
    with _lock:
        if hook in _hooks:
            _hooks.remove(hook)


def load_entry_points() -> None:
    """Register the adapters of installed integrations (once; a failed one is retried).

    Entry points load outside the lock (an integration may call ``register_hook`` while
    it is imported); one that fails is reported and skipped, never taking the others down.
    """
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    failures = 0
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            register_hook(entry_point.load())
        except Exception as exc:
            failures += 1
            warnings.warn(
                f"chaincassette: cannot load integration {entry_point.name!r} "
                f"({entry_point.value}): {exc}",
                RuntimeWarning,
                stacklevel=3,
            )
    _entry_points_loaded = failures == 0


def registered_hooks() -> list[Hook]:
    """Adapters from entry points and ``register_hook``, in registration order."""
    load_entry_points()
    with _lock:
        return list(_hooks)


options.loader = load_entry_points
