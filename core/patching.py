"""Class attributes replaced once per process, routing each call to the cassette serving it.

The integrations wrap framework classes (chat models, LLM endpoints, tools, embeddings).
They are wrapped the first time a cassette needs them and stay wrapped: each wrapper asks,
per call, which cassette serves it (none: the call passes through untouched, or the
live-call guard refuses it). Entering a cassette then costs nothing of this, and
``undo_all`` puts every attribute back as it was (the pytest plugin does at session end).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from .packages import forgotten

_MISSING = object()


class Patches:
    """One integration's replacements: ``apply(patches)`` makes them through ``replace`` on
    the first ``install``; classes wrapped later (defined after it, or first used since) go
    through ``replace`` too and are listed in ``wrapped`` until ``undo``."""

    def __init__(self, apply: Callable[[Patches], None]) -> None:
        self._apply = apply
        self.lock = threading.RLock()
        self.active = False
        self.wrapped: set[type] = set()
        self._restore: list[tuple[Any, str, Any]] = []
        self._undo_callbacks: list[Callable[[], None]] = []
        _drop_forgotten()
        _registry.append(self)

    @property
    def stale(self) -> bool:
        """Made by a copy of its module that ``sys.modules`` no longer holds."""
        return forgotten(self._apply)

    def replace(self, owner: Any, name: str, value: Any) -> None:
        """Set ``owner.name`` to ``value``, remembering the class's own attribute (or none)."""
        with self.lock:
            self._restore.append((owner, name, owner.__dict__.get(name, _MISSING)))
            setattr(owner, name, value)

    def wrap_methods(
        self,
        cls: type,
        names: Iterable[str],
        wrapper_for: Callable[[str, Callable[..., Any]], Callable[..., Any]],
    ) -> bool:
        """Replace each method of ``names`` that ``cls`` itself defines (concrete ones only:
        inherited methods are wrapped on the class that defines them) by
        ``wrapper_for(name, original)``; once per class. Whether ``cls`` was new."""
        with self.lock:
            if cls in self.wrapped:
                return False
            self.wrapped.add(cls)
            for name in names:
                original = cls.__dict__.get(name)
                if original is None or not callable(original):
                    continue
                if getattr(original, "__isabstractmethod__", False):
                    continue
                self.replace(cls, name, wrapper_for(name, original))
            return True

    def on_undo(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when everything is restored (for state that is not an attribute,
        such as a global set through a framework's setter), before the attributes."""
        with self.lock:
            self._undo_callbacks.append(callback)

    def install(self) -> None:
        """Make the replacements, once (later calls cost a flag check)."""
        if self.active:
            return
        with self.lock:
            if self.active:
                return
            try:
                self._apply(self)
            except BaseException:
                self.undo()
                raise
            self.active = True

    def undo(self) -> None:
        with self.lock:
            self.active = False
            while self._undo_callbacks:
                self._undo_callbacks.pop()()
            while self._restore:
                owner, name, original = self._restore.pop()
                if original is _MISSING:
                    delattr(owner, name)
                else:
                    setattr(owner, name, original)
            self.wrapped.clear()


#: Every integration's ``Patches``, in creation order: what ``undo_all`` puts back.
_registry: list[Patches] = []


def _drop_forgotten() -> None:
    """Undo and drop the patches of module copies ``sys.modules`` no longer holds: an
    in-process pytest run (``pytester``) forgets the integrations it imported, and the next
    imports them again; the registry kept every copy, and the classes it wrapped, for good."""
    for patches in [p for p in _registry if p.stale]:
        patches.undo()
        _registry.remove(patches)


def installed() -> list[Patches]:
    """The patches installed now (a runner undoes, at its end, those it found not installed)."""
    return [patches for patches in _registry if patches.active]


def undo_all() -> None:
    """Put back every attribute any integration replaced (the latest first); the next
    cassette installs them again."""
    for patches in reversed(_registry):
        patches.undo()


def watch_subclasses(
    patches: Patches, base: type, wrap: Callable[[type], None], *, hook: str
) -> None:
    """Call ``wrap`` on every subclass of ``base``: those that exist now, and those defined
    while ``patches`` are installed (a provider class imported after the first cassette).

    ``hook`` is the class-creation hook to extend: ``__init_subclass__``, or pydantic's
    ``__pydantic_init_subclass__``, which runs once the class is complete (LlamaIndex applies
    its spans to methods only then, so wrapping earlier would be overwritten).
    """
    own = base.__dict__.get(hook, _MISSING)

    def on_subclass(cls: type, **kwargs: Any) -> None:
        if own is _MISSING:
            getattr(super(base, cls), hook)(**kwargs)
        else:
            own.__func__(cls, **kwargs)
        with patches.lock:  # the hook exists only while the patches are installed
            wrap(cls)

    patches.replace(base, hook, classmethod(on_subclass))
    for cls in all_subclasses(base):
        wrap(cls)


def all_subclasses(cls: type) -> list[type]:
    """Every subclass of ``cls``, at any depth, each once."""
    seen: list[type] = []
    stack: list[type] = list(cls.__subclasses__())
    while stack:
        sub = stack.pop()
        if sub not in seen:
            seen.append(sub)
            stack.extend(sub.__subclasses__())
    return seen
