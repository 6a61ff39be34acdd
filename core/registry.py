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
    """Run ``hook(cassette)`` (an ``Adapter``, or any callable with optional ``requires`` and
    ``options``) whenever a ``use_cassette`` block starts; a context manager it returns is
    exited after the block, in reverse order of registration."""
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
    """Register the adapters of installed integrations, once; one that fails is reported,
    skipped and retried next time. Outside the lock: an integration may register on import."""
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
