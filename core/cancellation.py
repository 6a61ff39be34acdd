"""A call the program cancelled while it was recorded, kept and replayed as it happened.

A program's own timer (``asyncio.wait_for``, ``asyncio.timeout``, a ``TaskGroup`` whose
other task failed, LangGraph's ``step_timeout``) cancels an async model call in flight.
The cancellation is no answer of the provider, but it is what the program saw, so it is
kept as the interaction's response ``{cancelled: {duration_ms: N}}``: how long the call
ran before it was cancelled.

**Recording: kept only when the program went on.** A cancellation also ends a run that
is being stopped (Ctrl-C under ``asyncio.run`` cancels the main task; ``SystemExit`` or
``KeyboardInterrupt`` out of the loop has every task cancelled as it shuts down). Such a
cancellation is no part of the program and must not be replayed. So a cancelled call is
held (``Pending``) until the run shows which it was:

- kept when the task that ran it ends without being cancelled (the program caught it:
  ``asyncio.timeout``, ``wait_for`` running in the same task);
- for a cassette no ``use_cassette`` block has open, kept at once when, as the call is
  cancelled, the loop runs another task nobody is cancelling (the caller of Python
  3.11's ``wait_for``, which runs the call in a task of its own). Ctrl-C cancels the main
  task itself, and a loop shutting down all of them; a program that runs background
  tasks of its own is taken at its word here (a block is the sure way);
- else decided when the ``use_cassette`` block ends: kept when it ends normally or by an
  ``Exception`` (a ``TaskGroup``'s ``ExceptionGroup``, the program's ``TimeoutError``),
  dropped when it ends by ``KeyboardInterrupt``, ``SystemExit`` or the cancellation itself
  (the pytest fixture's block drops them when Ctrl-C interrupted the session);
- dropped when the process exits with it still held.

**Replay: the call waits as it did.** Its hit is handed back by waiting (asynchronously)
until the program cancels it again, so the program's own timer fires as when recorded;
the wait is bounded (``bound``). A sync call cannot be cancelled, so it gets the
error at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, Protocol

#: The response field of a cancelled interaction.
FIELD = "cancelled"
#: A replay waits at most this many times the recorded duration, plus ``MARGIN_S``.
FACTOR = 2.0
MARGIN_S = 1.0


def stored(duration_ms: float) -> dict[str, Any]:
    """The response a cancelled call is kept as."""
    return {FIELD: {"duration_ms": round(duration_ms, 1)}}


def recorded_ms(response: Any) -> float | None:
    """How long a recorded cancelled call ran (ms), or ``None`` when ``response`` is no
    cancellation (a hand-broken duration counts as 0: the wait is then ``MARGIN_S``)."""
    if not (isinstance(response, dict) and len(response) == 1 and FIELD in response):
        return None
    value = response[FIELD]
    duration = value.get("duration_ms") if isinstance(value, dict) else None
    if isinstance(duration, int | float) and not isinstance(duration, bool) and duration >= 0:
        return float(duration)
    return 0.0


def bound(duration_ms: float) -> float:
    """How long (s) a replay waits for the program to cancel a call recorded as cancelled
    after ``duration_ms``: generous, since a replay runs the rest of the program faster."""
    return FACTOR * duration_ms / 1000 + MARGIN_S


class _Inner(Protocol):
    """The hand-back a replayed cancellation happens inside (``order``'s turn)."""

    def __enter__(self) -> None: ...

    def __exit__(self, *exc: object) -> None: ...

    async def __aenter__(self) -> None: ...

    async def __aexit__(self, *exc: object) -> None: ...


class Replayed:
    """``with`` / ``async with`` around handing back a recorded cancellation: entering
    waits its turn (``inner``), then, async, until the program cancels it (the
    ``CancelledError`` goes to the program) or ``bound`` passes; then, or at once when
    sync, it raises ``not_cancelled(waited_s)``. The body never runs."""

    __slots__ = ("duration_ms", "inner", "not_cancelled")

    def __init__(
        self,
        inner: _Inner,
        duration_ms: float,
        not_cancelled: Callable[[float | None], BaseException],
    ) -> None:
        self.inner = inner
        self.duration_ms = duration_ms
        self.not_cancelled = not_cancelled

    def __enter__(self) -> None:
        self.inner.__enter__()
        self.inner.__exit__(None, None, None)
        raise self.not_cancelled(None)

    def __exit__(self, *exc: object) -> None:
        return None

    async def __aenter__(self) -> None:
        await self.inner.__aenter__()
        waited = bound(self.duration_ms)
        try:
            await asyncio.sleep(waited)
        finally:  # cancelled as recorded, or not: handed back either way
            await self.inner.__aexit__(None, None, None)
        raise self.not_cancelled(waited)

    async def __aexit__(self, *exc: object) -> None:
        return None


def _carries_on(cancelled: asyncio.Task[Any]) -> bool:
    """Whether the loop of ``cancelled`` (a task being cancelled) runs another task nobody
    is cancelling: the program goes on past the cancellation (Python 3.11+ can tell)."""
    try:
        tasks = asyncio.all_tasks(cancelled.get_loop())
    except RuntimeError:
        return False
    return any(t is not cancelled and not t.done() and _unhindered(t) for t in tasks)


def _unhindered(task: asyncio.Task[Any]) -> bool:
    """Whether nobody is cancelling ``task`` (``False`` where Python cannot tell: 3.10)."""
    cancelling = getattr(task, "cancelling", None)
    return cancelling is not None and not cancelling()


class Pending:
    """The cancelled calls of one cassette whose fate the run has not shown yet (see the
    module docstring). ``settle(keep)`` is each one's: its recording kept, or nothing."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, Callable[[bool], None]] = {}
        self._next = 0

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, settle: Callable[[bool], None], *, in_block: Callable[[], bool]) -> None:
        """Hold a call cancelled in the running task (``in_block()``: whether a
        ``use_cassette`` block has its cassette open, which then decides)."""
        task = asyncio.current_task()
        with self._lock:
            number = self._next
            self._next += 1
            self._held[number] = settle
        if task is None:  # no task to watch: the block, or the exit, decides
            return
        if not in_block() and _carries_on(task):
            self._decide(number, True)
            return

        def ended(task: asyncio.Task[Any]) -> None:
            if not task.cancelled():
                self._decide(number, True)

        task.add_done_callback(ended)

    def settle_all(self, keep: bool) -> None:
        """Decide every call still held: ``keep`` their recordings, or drop them."""
        with self._lock:
            numbers = list(self._held)
        for number in numbers:
            self._decide(number, keep)

    def _decide(self, number: int, keep: bool) -> None:
        with self._lock:
            settle = self._held.pop(number, None)
        if settle is not None:
            settle(keep)


def ends_normally(error: BaseException | None) -> bool:
    """Whether a block ending by ``error`` keeps the cancelled calls it holds: it ended
    normally or by an ``Exception``, not by an interrupt, an exit or a cancellation."""
    return error is None or isinstance(error, Exception)
