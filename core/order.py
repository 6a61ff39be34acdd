"""Replay keeps the recorded order of concurrent calls.

**Recording.** Each live call takes a tick from its cassette's ``RecordClock`` when it
begins and another when it completes (its answer recorded: a whole response, or a
stream's last chunk). A call that overlapped another one stores both ticks and a tag
naming this recording in its meta: ``order: {recording: 1a2b3c4d, began: 5, done: 8}``.
A call that ran alone stores nothing, so a sequential program's cassette holds no order.

**Replay.** The calls of the same recording whose done tick lies between a call's began
and done ticks completed while it ran: they are its *predecessors*, and so is the call that
completed last before it (one that completed before it began: a program whose workers free
up in the order its calls complete begins calls sooner on replay, so a call could otherwise
overtake one that completed before it began). Where its layer hands
a hit to the program, ``Call.turn()`` holds it back until every predecessor has been
handed back (a whole answer returned, a stream's last chunk yielded), then for a short
settle after the last of them (``SETTLE_TASK``, ``SETTLE_THREAD``), so that the program
sees the predecessor's result first.

**The bound.** A replay never waits for the program, only for calls that are about to
be handed back:

- a predecessor that has not begun yet is waited for at most ``START_GRACE``: concurrent
  siblings begin within milliseconds of each other, and one that does not (the program now
  awaits in another order, or no longer makes the call) is then given up for the rest of
  the run, so it costs one grace period, once;
- a predecessor in flight is waited for at most ``IN_FLIGHT_WAIT`` in all: a replayed call
  is handed back in microseconds, so one in flight longer is held by the program itself
  (a stream its consumer reads slowly, or not at all); it is then given up for the run;
- never for a predecessor that cannot move while the waiter waits: one begun in the same
  thread when the waiter blocks that thread (a sync call; a stream generator the same
  thread pulls), one begun in the same task when an async waiter awaits, and, for a sync
  call made inside a running event loop (which it blocks), any predecessor not begun yet
  (it could only begin on that loop).

**Branches.** Identical requests made at once by different branches of a program (three
LangGraph nodes after ``START`` asking the same thing, ``Send`` branches about one subject)
are looked up in whatever order their threads run, so serving them first-come-first-served
could hand one branch the answer recorded for another. An integration that knows which
branch makes a call passes it as ``meta[BRANCH]``; a call that overlapped others stores it
in its ``order`` (``branch: joke#2``), and a replay serves each branch the next recording
no other branch made (``own_recording``); a call whose branch is unknown, or matches none,
keeps first-come-first-served.

So waits form no cycle (a predecessor completed earlier, strictly) and none outlasts its
bound: at worst a call costs ``IN_FLIGHT_WAIT`` once, and the order degrades to the one
the program makes, never to a hang.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import secrets
import threading
import time
from collections.abc import Iterable
from typing import Any

#: Meta field of a recording that overlapped another call.
FIELD = "order"
#: How long a hit waits for a predecessor that has not begun (seconds).
START_GRACE = 0.25
#: How long a hit waits, in all, for predecessors in flight (seconds).
IN_FLIGHT_WAIT = 2.0
#: How long a hit keeps behind its last predecessor's hand-back, so that the program has
#: taken that result before this one arrives (seconds): a predecessor in the waiter's own
#: thread (a task of its loop) runs on as soon as the waiter yields, one in another thread
#: when the OS schedules it (under load, later: 10 ms left 11 of 100 sync replays of a
#: LangGraph Send map-reduce out of order at load 6, 50 ms none of 180 at load 5 to 7).
SETTLE_TASK = 0.01
SETTLE_THREAD = 0.05

#: Meta field an integration sets to the branch of the program making a call.
BRANCH = "branch"

PENDING, FLIGHT, DONE, LATE, STUCK = range(5)
Owner = tuple[int, int | None]


def current_owner() -> Owner:
    """(thread, task) of the code running now: who can move a call begun here."""
    thread = threading.get_ident()
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop runs in this thread
        return thread, None
    return thread, None if task is None else id(task)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class RecordClock:
    """The ticks of one cassette's live calls in this run (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tick = 0
        self._running = 0
        self._tag: str | None = None

    def begin(self) -> int:
        with self._lock:
            self._tick += 1
            self._running += 1
            return self._tick

    def end(self, began: int) -> dict[str, Any] | None:
        """The ``order`` a call that began at tick ``began`` stores, ``None`` if it ran alone."""
        with self._lock:
            self._tick += 1
            done = self._tick
            alone = self._running == 1 and done == began + 1
            self._running -= 1
            if alone:
                return None
            if self._tag is None:  # made once a recording overlaps: sequential files stay quiet
                self._tag = secrets.token_hex(4)
            return {"recording": self._tag, "began": began, "done": done}


def parse(meta: dict[str, Any]) -> tuple[str, int, int] | None:
    """(recording, began, done) of a recording's meta; ``None`` when absent or hand-broken
    (a broken order is no reason to refuse a replay: the call just keeps no order)."""
    value = meta.get(FIELD)
    if not isinstance(value, dict):
        return None
    tag, began, done = value.get("recording"), value.get("began"), value.get("done")
    if isinstance(tag, str) and type(began) is int and type(done) is int and began < done:
        return tag, began, done
    return None


def with_branch(order: dict[str, Any] | None, branch: Any) -> dict[str, Any] | None:
    """The ``order`` a call stores, naming its branch: only a call that overlapped others
    keeps one (a sequential program's cassette stays as it was)."""
    if order is None or not isinstance(branch, str):
        return order
    return {**order, BRANCH: branch}


def branch_of(meta: dict[str, Any]) -> str | None:
    """The branch a recording was made by, ``None`` when it names none (or a broken one)."""
    value = meta.get(FIELD)
    branch = value.get(BRANCH) if isinstance(value, dict) else None
    return branch if isinstance(branch, str) else None


def own_recording(metas: Iterable[dict[str, Any]], branch: Any) -> int:
    """Which of a key's recordings not yet played (``metas``, in their order) a call of
    ``branch`` replays: the first not made by another branch (a call that ran alone names
    none: any branch may have made it), else the first (first-come-first-served). Read
    lazily: a key played thousands of times costs a look at its next recording."""
    if isinstance(branch, str):
        for index, meta in enumerate(metas):
            if branch_of(meta) in (None, branch):
                return index
    return 0


class NoTurn:
    """The turn of a call that keeps no order: nothing to wait for."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


NO_TURN = NoTurn()


class Turn:
    """One recorded call's place in its recording's order, for its first replay in a run
    (state only: it never refers back to its ``ReplayOrder``, so the two make no cycle)."""

    __slots__ = ("began", "done", "handed_at", "owner", "recording", "state")

    def __init__(self, recording: str, began: int, done: int) -> None:
        self.recording = recording
        self.began = began
        self.done = done
        self.state = PENDING
        self.owner: Owner | None = None
        self.handed_at = 0.0


class Handing:
    """``with`` / ``async with`` around handing a hit back: entering waits for its
    predecessors (bounded), leaving marks it handed back. Entering twice waits again (at
    once), leaving twice changes nothing."""

    __slots__ = ("book", "turn")

    def __init__(self, book: ReplayOrder, turn: Turn) -> None:
        self.book = book
        self.turn = turn

    def __enter__(self) -> None:
        try:
            self.book.wait(self.turn)
        except BaseException:
            self.book.handed_back(self.turn)
            raise

    def __exit__(self, *exc: object) -> None:
        self.book.handed_back(self.turn)

    async def __aenter__(self) -> None:
        try:
            await self.book.await_turn(self.turn)
        except BaseException:  # cancelled while waiting: it is handed back all the same
            self.book.handed_back(self.turn)
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.book.handed_back(self.turn)


class _Wait:
    """What one waiter still waits for, and until when (read under the book's lock)."""

    __slots__ = (
        "deadline",
        "gave_up",
        "grace_end",
        "me",
        "predecessors",
        "same_thread",
        "skip_pending",
    )

    def __init__(self, predecessors: list[Turn], *, sync: bool) -> None:
        now = time.monotonic()
        self.predecessors = predecessors
        self.me = current_owner()
        self.same_thread = sync  # a sync waiter blocks its whole thread
        self.skip_pending = sync and _loop_running()  # ... and the event loop it runs
        self.grace_end = now + START_GRACE
        self.deadline = now + IN_FLIGHT_WAIT
        self.gave_up = 0

    def _moves(self, turn: Turn) -> bool:
        """Whether ``turn`` (in flight) can be handed back while this waiter waits."""
        owner = turn.owner
        if owner is None:
            return True
        return owner[0] != self.me[0] if self.same_thread else owner != self.me

    def until(self, now: float) -> float | None:
        """When to look again, or ``None`` once nothing is left to wait for; predecessors
        whose bound has passed are given up for the run (``LATE``, ``STUCK``)."""
        wake: float | None = None
        for turn in self.predecessors:
            if turn.state == FLIGHT and self._moves(turn):
                if now >= self.deadline:
                    turn.state, self.gave_up = STUCK, self.gave_up + 1
                    continue
                wake = self.deadline if wake is None else min(wake, self.deadline)
            elif turn.state == PENDING and not self.skip_pending:
                if now >= self.grace_end:
                    turn.state, self.gave_up = LATE, self.gave_up + 1
                    continue
                wake = self.grace_end if wake is None else min(wake, self.grace_end)
        return wake

    def settled_at(self) -> float:
        """When the last predecessor handed back has had its settle: a task's of this
        thread runs on as soon as the waiter yields, another thread's when scheduled."""
        return max((self._settled(t) for t in self.predecessors if t.state == DONE), default=0.0)

    def _settled(self, turn: Turn) -> float:
        same_thread = turn.owner is not None and turn.owner[0] == self.me[0]
        return turn.handed_at + (SETTLE_TASK if same_thread else SETTLE_THREAD)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class ReplayOrder:
    """The turns of one cassette's recordings in this run: which are in flight, which
    were handed back, and who waits for them (sync waiters on a condition, async ones on
    futures of their own loops)."""

    def __init__(self, interactions: Iterable[Any]) -> None:
        #: the cassette's interactions (its own list, read when first needed: no
        #: reference back to the cassette, which must go with its last user)
        self._interactions = interactions
        # Reentrant: a hit no layer handed back is handed back by its finalizer, which the
        # collector may run anywhere, this very lock held (``Call``).
        self._cond = threading.Condition(threading.RLock())
        self._turns: dict[int, Turn] | None = None
        self._done: dict[str, tuple[list[int], list[Turn]]] = {}
        self._async: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._given_up = 0

    @property
    def given_up(self) -> int:
        """How often a hit stopped waiting for a predecessor in this run (its bound passed:
        the program no longer makes that call, or holds it): 0 when every turn came."""
        return self._given_up

    def began(self, interaction: Any) -> Turn | None:
        """The turn of ``interaction``'s first replay in this run, now in flight; ``None``
        when it keeps no order (or is played again: ``allow_playback_repeats``)."""
        if FIELD not in interaction.meta:
            return None
        with self._cond:
            turns = self._turns if self._turns is not None else self._index()
            turn = turns.get(id(interaction))
            if turn is None or turn.state not in (PENDING, LATE):
                return None
            turn.state, turn.owner = FLIGHT, current_owner()
            self._changed()
        return turn

    def _index(self) -> dict[int, Turn]:
        """Every recording's turn, and each recording's turns by done tick (under the lock)."""
        turns: dict[int, Turn] = {}
        by_tag: dict[str, list[Turn]] = {}
        for interaction in self._interactions:
            found = parse(interaction.meta)
            if found is not None:
                turn = turns[id(interaction)] = Turn(*found)
                by_tag.setdefault(turn.recording, []).append(turn)
        for tag, listed in by_tag.items():
            listed.sort(key=lambda t: t.done)
            self._done[tag] = ([t.done for t in listed], listed)
        self._turns = turns
        return turns

    def _predecessors(self, turn: Turn) -> list[Turn]:
        """The calls that completed while ``turn`` ran, and always the one that completed
        last before it: a call that began only once another had completed (a worker pool
        frees a worker) may begin before it on replay, where answers come at once."""
        ticks, turns = self._done.get(turn.recording, ([], []))
        end = bisect.bisect_left(ticks, turn.done)
        return turns[max(0, min(bisect.bisect_right(ticks, turn.began), end - 1)) : end]

    def handed_back(self, turn: Turn) -> None:
        with self._cond:
            if turn.state == DONE:
                return
            turn.state, turn.handed_at = DONE, time.monotonic()
            self._changed()

    def _changed(self) -> None:
        """Wake every waiter to look again (under the lock)."""
        self._cond.notify_all()
        waiting, self._async = self._async, []
        for loop, future in waiting:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits there
                loop.call_soon_threadsafe(_wake, future)

    def wait(self, turn: Turn) -> None:
        """Block until ``turn``'s predecessors are handed back, or their bound has passed."""
        predecessors = self._predecessors(turn)
        if not predecessors:
            return
        wait = _Wait(predecessors, sync=True)
        with self._cond:
            while (until := wait.until(time.monotonic())) is not None:
                self._cond.wait(max(0.0, until - time.monotonic()))
            settled = wait.settled_at()
            self._given_up += wait.gave_up
        pause = settled - time.monotonic()
        if pause > 0:
            time.sleep(pause)

    async def await_turn(self, turn: Turn) -> None:
        """``wait`` for a coroutine: the event loop runs on meanwhile."""
        predecessors = self._predecessors(turn)
        if not predecessors:
            return
        loop = asyncio.get_running_loop()
        wait = _Wait(predecessors, sync=False)
        while True:
            with self._cond:
                until = wait.until(time.monotonic())
                if until is None:
                    settled = wait.settled_at()
                    self._given_up += wait.gave_up
                    break
                future: asyncio.Future[None] = loop.create_future()
                self._async.append((loop, future))
            await asyncio.wait([future], timeout=max(0.0, until - time.monotonic()))
        pause = settled - time.monotonic()
        if pause > 0:
            await asyncio.sleep(pause)
