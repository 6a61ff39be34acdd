"""``use_cassette`` and ``current_cassette``: which cassette is active, where.

The active cassette lives in a ``ContextVar`` so it follows the program into asyncio
tasks and into threads started through ``contextvars.copy_context()`` (LangChain
runs sync tools that way) without leaking into unrelated threads or tests.
Framework integrations hook in through a small registry, so this module never
imports a framework.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import threading
import warnings
from collections.abc import Callable
from contextlib import ExitStack
from contextvars import ContextVar, Token
from dataclasses import dataclass
from os import PathLike
from types import TracebackType
from typing import Any, TypeVar, cast

from . import cancellation, credentials
from .cassette import Cassette
from .deferred import enter_hook
from .errors import CassetteMiss
from .registry import registered_hooks

F = TypeVar("F", bound=Callable[..., Any])
_Activation = tuple[Cassette, "Token[Cassette | None]", ExitStack]

_current: ContextVar[Cassette | None] = ContextVar("chaincassette_current", default=None)
#: The open ``use_cassette`` blocks of this context, innermost last, with the object that
#: opened each: two tasks may be inside the same ``use_cassette`` object at once. One
#: variable for all of them: a variable per object would stay in the context after its
#: block (a context only grows), one more with every test.
_entered: ContextVar[tuple[tuple[use_cassette, _Activation], ...]] = ContextVar(
    "chaincassette_entered", default=()
)


def current_cassette() -> Cassette | None:
    """The cassette of the innermost active ``use_cassette`` in this context, if any."""
    return _current.get()


@dataclass(eq=False)
class _OpenBlock:
    cassette: Cassette
    outer: Cassette | None


_open_lock = threading.Lock()
_open_blocks: list[_OpenBlock] = []


def serving_cassette() -> Cassette | None:
    """The cassette serving a call made here: this context's, else the innermost block open
    in the process (a plain thread lost the context: replay must not go live for that), or
    ``CassetteMiss`` when the open blocks are not one nesting chain (no guessing)."""
    current = _current.get()
    if current is not None:
        return current
    with _open_lock:
        blocks = list(_open_blocks)
    if not blocks:
        return None
    innermost = blocks[-1]
    one_chain = all(
        inner.outer is outer.cassette or inner.cassette is outer.cassette
        for outer, inner in itertools.pairwise(blocks)
    )
    if one_chain:
        return innermost.cassette
    paths = ", ".join(sorted({str(b.cassette.path) for b in blocks}))
    cassette = innermost.cassette
    raise cassette.report_miss(
        CassetteMiss(
            "a model or tool call came from a thread with no active cassette while several "
            f"use_cassette blocks are open in other tasks or threads ({paths}), so it cannot "
            "be attributed to one of them and is not called live. Start the thread with "
            "contextvars.copy_context().run(...), or open the cassette inside it.",
            path=cassette.path,
            mode=cassette.mode.value,
            request={},
            key="",
        )
    )


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

    def _make(self) -> Cassette:
        if isinstance(self._target, Cassette):
            return self._target
        cassette = Cassette(self._target, **self._options)
        cassette.opened_by = "use_cassette"
        return cassette

    def __enter__(self) -> Cassette:
        cassette = self._make()
        block = _OpenBlock(cassette, _current.get())
        token = _current.set(cassette)
        stack = ExitStack()
        _opened(block)
        stack.callback(_closed, block)
        try:
            stack.enter_context(credentials.while_replaying(cassette))
            for hook in registered_hooks():
                enter_hook(hook, cassette, stack)
        except BaseException:
            stack.close()
            _reset(token)
            raise
        # runs first on exit: streams left open are kept as the prefix they saw
        stack.callback(cassette.flush_open_streams)
        _entered.set((*_entered.get(), (self, (cassette, token, stack))))
        return cassette

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        entered = _entered.get()
        mine = [n for n, (owner, _) in enumerate(entered) if owner is self]
        if not mine:
            raise RuntimeError(
                "use_cassette exited in another context than it was entered in "
                "(an async generator finalized elsewhere?); enter and exit it in one task"
            )
        cassette, token, stack = entered[mine[-1]][1]
        _entered.set(entered[: mine[-1]] + entered[mine[-1] + 1 :])
        try:
            stack.__exit__(exc_type, exc, tb)
        finally:
            _reset(token)
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


def _opened(block: _OpenBlock) -> None:
    with _open_lock:
        _open_blocks.append(block)
        block.cassette.in_block += 1


def _closed(block: _OpenBlock) -> None:
    with _open_lock:
        if block in _open_blocks:
            _open_blocks.remove(block)
            block.cassette.in_block -= 1


def _reset(token: Token[Cassette | None]) -> None:
    try:
        _current.reset(token)
    except ValueError:  # exited in another context (e.g. a generator finalized elsewhere)
        _current.set(token.old_value if token.old_value is not Token.MISSING else None)


def _save(cassette: Cassette, body_error: BaseException | None) -> None:
    try:
        # a block ending normally shows the program went on past the calls it cancelled
        cassette.settle_cancellations(cancellation.ends_normally(body_error))
        cassette.save()
    except Exception as save_error:  # never hide the error the user's code raised
        if body_error is None:
            raise
        note = f"chaincassette: also failed to save the cassette: {save_error}"
        if hasattr(body_error, "add_note"):
            body_error.add_note(note)
        else:  # Python 3.10
            warnings.warn(note, RuntimeWarning, stacklevel=3)
