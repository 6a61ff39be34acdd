"""Class attributes replaced while any cassette block needs them, put back by the last one.

The integrations wrap framework classes (chat models, LLM endpoints, tools) for the
length of ``use_cassette`` blocks that may overlap in tasks and threads. One shared,
reference-counted record of what was replaced makes every block's exit safe.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from .layers import answering

T = TypeVar("T")

_MISSING = object()


class SharedPatches:
    """Patches applied by the first ``install`` and undone by the matching last ``uninstall``.

    ``apply(patches)`` makes the initial replacements through ``patches.replace``; classes
    wrapped later (defined inside a block, or first used there) go through ``replace`` too
    and are listed in ``wrapped`` until everything is restored.
    """

    def __init__(self, apply: Callable[[SharedPatches], None]) -> None:
        self._apply = apply
        self.lock = threading.RLock()
        self.users = 0
        self.wrapped: set[type] = set()
        self._restore: list[tuple[Any, str, Any]] = []
        self._undo_callbacks: list[Callable[[], None]] = []

    @property
    def active(self) -> bool:
        return self.users > 0

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
        with self.lock:
            self.users += 1
            if self.users > 1:
                return
            try:
                self._apply(self)
            except BaseException:
                self.users = 0
                self._undo()
                raise

    def uninstall(self) -> None:
        with self.lock:
            if self.users == 0:
                return
            self.users -= 1
            if not self.users:
                self._undo()

    @contextmanager
    def installed(self) -> Iterator[None]:
        self.install()
        try:
            yield
        finally:
            self.uninstall()

    def _undo(self) -> None:
        while self._undo_callbacks:
            self._undo_callbacks.pop()()
        while self._restore:
            owner, name, original = self._restore.pop()
            if original is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self.wrapped.clear()


class PassThrough:
    """A per-context switch an interception point raises around the provider's own call, so
    the provider's nested calls (a ``super()`` chain) reach it untouched and are recorded
    once, by the outer call; raising it raises ``layers.answering`` too, so the layers
    underneath (a provider SDK's transport) step aside as well."""

    def __init__(self, name: str) -> None:
        self._var: ContextVar[bool] = ContextVar(name, default=False)

    @property
    def active(self) -> bool:
        return self._var.get()

    @contextmanager
    def raised(self) -> Iterator[None]:
        token = self._var.set(True)
        try:
            with answering():
                yield
        finally:
            self._var.reset(token)

    def iterate(self, chunks: Iterator[T]) -> Iterator[T]:
        """Drive a live stream with the switch raised during each pull only (a generator
        cannot hold a context variable across its ``yield``: the consumer's code runs there)."""
        while True:
            token = self._var.set(True)
            try:
                with answering():
                    chunk = next(chunks)
            except StopIteration:
                return
            finally:
                self._var.reset(token)
            yield chunk

    async def aiterate(self, chunks: AsyncIterator[T]) -> AsyncIterator[T]:
        """``iterate`` for an async stream."""
        while True:
            token = self._var.set(True)
            try:
                with answering():
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                return
            finally:
                self._var.reset(token)
            yield chunk


_MISSING = object()


def watch_subclasses(
    patches: SharedPatches, base: type, wrap: Callable[[type], None], *, hook: str
) -> None:
    """Call ``wrap`` on every subclass of ``base``: those that exist now, and those defined
    while ``patches`` has users (a provider class imported after ``use_cassette`` began).

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
        with patches.lock:
            if patches.users:
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
