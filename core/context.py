"""``use_cassette`` and ``current_cassette``: which cassette is active, where.

The active cassette lives in a ``ContextVar`` so it follows the program into asyncio
tasks and into threads started through ``contextvars.copy_context()`` (LangChain
runs sync tools that way) without leaking into unrelated threads or tests.
Framework integrations hook in through a small registry, so this module never
imports a framework.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from contextvars import ContextVar, Token
from importlib import metadata
from os import PathLike
from types import TracebackType
from typing import Any, TypeVar, cast

from .cassette import Cassette
from .deferred import enter_hook

F = TypeVar("F", bound=Callable[..., Any])
_Activation = tuple[Cassette, "Token[Cassette | None]", ExitStack]
ActivationHook = Callable[[Cassette], "AbstractContextManager[Any] | None"]

HOOK_ENTRY_POINT_GROUP = "chaincassette.hooks"

_current: ContextVar[Cassette | None] = ContextVar("chaincassette_current", default=None)
_hooks: list[ActivationHook] = []
_hooks_lock = threading.Lock()
_entry_points_loaded = False


def current_cassette() -> Cassette | None:
    """The cassette of the innermost active ``use_cassette`` in this context, if any."""
    return _current.get()


def register_hook(hook: ActivationHook) -> ActivationHook:
    """Run ``hook(cassette)`` whenever a ``use_cassette`` block starts.

    The hook may return a context manager; it is entered for the block and exited
    after it, in reverse order of registration. Integrations use this to install
    what their framework needs (a global LLM cache, a callback handler, a patch).
    A hook with a ``requires`` attribute (a module name) waits until that module is
    imported (see ``chaincassette.deferred``).
    """
    with _hooks_lock:
        if hook not in _hooks:
            _hooks.append(hook)
    return hook


def unregister_hook(hook: ActivationHook) -> None:
    with _hooks_lock:
        if hook in _hooks:
            _hooks.remove(hook)


def registered_hooks() -> list[ActivationHook]:
    """Hooks from entry points (group ``chaincassette.hooks``, loaded once) and ``register_hook``.

    Entry points load outside the lock (an integration may call ``register_hook`` while
    it is imported); one that fails to load is reported and skipped, never taking the
    others down with it, and is tried again next time.
    """
    global _entry_points_loaded
    if not _entry_points_loaded:
        failures = 0
        for entry_point in metadata.entry_points(group=HOOK_ENTRY_POINT_GROUP):
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
    with _hooks_lock:
        return list(_hooks)


class use_cassette:
    """Activate a cassette for a block or a function.

    ``with use_cassette("tests/cassettes/agent.yaml"):`` (or ``async with``), or as a
    decorator on a sync or async function (given a path, each call gets its own cassette
    state; given a ``Cassette`` object, calls share it and its playback position).
    On exit the cassette is saved, also when the block raised: recordings cost money.
    """

    def __init__(self, path_or_cassette: str | PathLike[str] | Cassette, **options: Any) -> None:
        if isinstance(path_or_cassette, Cassette) and options:
            raise TypeError("pass options to Cassette(...) or a path to use_cassette, not both")
        self._target = path_or_cassette
        self._options = options
        # One stack per context: two tasks may be inside the same use_cassette object at once.
        self._active: ContextVar[tuple[_Activation, ...]] = ContextVar(
            f"chaincassette_use_cassette_{id(self)}", default=()
        )

    def _make(self) -> Cassette:
        if isinstance(self._target, Cassette):
            return self._target
        return Cassette(self._target, **self._options)

    def __enter__(self) -> Cassette:
        cassette = self._make()
        token = _current.set(cassette)
        stack = ExitStack()
        try:
            for hook in registered_hooks():
                enter_hook(hook, cassette, stack)
        except BaseException:
            stack.close()
            _reset(token, None)
            raise
        self._active.set((*self._active.get(), (cassette, token, stack)))
        return cassette

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        active = self._active.get()
        if not active:
            raise RuntimeError(
                "use_cassette exited in another context than it was entered in "
                "(an async generator finalized elsewhere?); enter and exit it in one task"
            )
        *outer, (cassette, token, stack) = active
        self._active.set(tuple(outer))
        try:
            stack.__exit__(exc_type, exc, tb)
        finally:
            _reset(token, None)
            _save(cassette, exc)

    async def __aenter__(self) -> Cassette:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def __call__(self, func: F) -> F:
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                async with self.__class__(self._target, **self._options):
                    return await func(*args, **kwargs)

            return cast(F, async_wrapper)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__(self._target, **self._options):
                return func(*args, **kwargs)

        return cast(F, wrapper)


def _reset(token: Token[Cassette | None], fallback: Cassette | None) -> None:
    try:
        _current.reset(token)
    except ValueError:  # exited in another context (e.g. a generator finalized elsewhere)
        _current.set(token.old_value if token.old_value is not Token.MISSING else fallback)


def _save(cassette: Cassette, body_error: BaseException | None) -> None:
    if body_error is None:
        cassette.save()
        return
    try:
        cassette.save()
    except Exception as save_error:  # never hide the error the user's code raised
        note = f"chaincassette: also failed to save the cassette: {save_error}"
        if hasattr(body_error, "add_note"):
            body_error.add_note(note)
        else:  # Python 3.10
            warnings.warn(note, RuntimeWarning, stacklevel=3)


@contextlib.contextmanager
def activated(cassette: Cassette) -> Iterator[Cassette]:
    """Make ``cassette`` current without running hooks or saving (for integrations)."""
    token = _current.set(cassette)
    try:
        yield cassette
    finally:
        _reset(token, None)
