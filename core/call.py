"""One call through a cassette: the record/replay protocol every interception point uses.

``cassette.begin(request)`` returns a ``Call``: either a hit (``call.response`` is a fresh
copy of the recording) or a miss the adapter answers by calling the live model and
handing the outcome to ``call.record(...)``, ``call.fail(error)``, or ``call.abandon()``
when there is nothing to keep. In ``replay`` mode ``begin`` raises ``CassetteMiss``
instead, so no adapter can reach the provider by forgetting a check.

What the protocol owns, once for every adapter:

- **occurrences**: the n-th ``begin`` of a key in this run is occurrence n, which names
  the replayed answer (``call.id``) the same way in every run;
- **lookup order**: identical requests that finish out of order (``asyncio.gather``,
  threads) are recorded in the order they were *asked*, because replay serves a key's
  recordings first-in-first-out by lookup;
- **autosave**: a cassette no ``use_cassette`` block will save (a global
  ``CassetteCache``, a ``CassetteLLM`` given a path) is written after each recording;
- **completion order**: a live call that overlapped others stores when it began and
  completed among them, and a hit is handed back inside ``with call.turn():`` (or
  ``async with``), which keeps it behind the calls that completed before it when it was
  recorded (``chaincassette.order``: bounded, never waiting on the program);
- **cancellations**: an async live call the program cancels (its own timeout) is kept
  once the run shows the program went on, and its hit waits to be cancelled again
  (``chaincassette.cancellation``).

A ``Call`` knows its cassette only through ``CallOwner``, the few things it asks of it,
so this module never imports the cassette's.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from . import cancellation, credentials, miss
from .canonical import fresh_copy, json_copy_text
from .decoding import decoded
from .error_codec import encode_error, rebuild_error, recordable
from .errors import CassetteMiss
from .modes import RecordMode
from .order import BRANCH, NO_TURN, Handing, NoTurn, RecordClock, ReplayOrder, Turn, with_branch
from .redact import RecordingScan, Redactor

T = TypeVar("T")


class CallOwner(Protocol):
    """What a ``Call`` asks of its cassette (``chaincassette.Cassette`` is one)."""

    path: Path
    mode: RecordMode
    mode_argument: RecordMode | None
    options: dict[str, Any]
    record_timing: bool
    redactor: Redactor
    in_block: int
    record_order: RecordOrder
    record_clock: RecordClock
    replay_order: ReplayOrder
    open_streams: set[Any]
    cancellations: cancellation.Pending

    def keep(
        self,
        key: str,
        request: dict[str, Any],
        response: Any,
        meta: dict[str, Any],
        *,
        scan: RecordingScan | None = None,
    ) -> None:
        """Store a recording of ``key`` (``response`` is already a fresh JSON copy, masked
        by ``scan``, which redacts the rest)."""

    @property
    def interactions(self) -> list[Any]:
        """Copies of the recorded interactions (a broken one is named by its index)."""

    def save(self) -> bool: ...

    def held_cancelled(self) -> None:
        """A cancelled call of this cassette is held (``Pending``): the exit decides it."""

    def report_miss(self, error: CassetteMiss) -> CassetteMiss: ...


def message_id(key: str, occurrence: int) -> str:
    """The ID a replayed answer carries: stable across runs, unique per call."""
    return f"cassette-{key[:16]}-{occurrence}"


class RecordOrder:
    """Runs recordings of one key in ticket (lookup) order, never blocking a finisher.

    A miss takes a ticket; a finished recording waits until every earlier ticket of the
    same key is recorded or abandoned, and the last finisher runs the waiting ones.
    """

    def __init__(self, lock: threading.RLock) -> None:
        # The cassette's own lock: recording takes it too, so one lock order for both.
        self._lock = lock
        # key -> [tickets issued, next ticket to run, {ticket: action or None}]
        self._slots: dict[str, list[Any]] = {}

    def ticket(self, key: str) -> int:
        with self._lock:
            slot = self._slots.setdefault(key, [0, 0, {}])
            slot[0] += 1
            return int(slot[0] - 1)

    def done(self, key: str, ticket: int, action: Callable[[], None] | None) -> None:
        """Record ``ticket``'s outcome (``action``) and run every one whose turn has come;
        one that raises (an autosave on a full disk) stops none of those after it: the
        first error is raised once all have run."""
        failed: BaseException | None = None
        with self._lock:
            slot = self._slots.setdefault(key, [0, 0, {}])
            waiting: dict[int, Any] = slot[2]
            waiting[ticket] = action
            while slot[1] in waiting:  # under the lock: two finishers never reorder
                run = waiting.pop(slot[1])
                slot[1] += 1
                if run is None:
                    continue
                try:
                    run()
                except BaseException as error:
                    failed = failed or error
        if failed is not None:
            raise failed


class Call:
    """A request on its way through a cassette (see the module docstring)."""

    __slots__ = (
        "__weakref__",
        "_began",
        "_done",
        "_lock",
        "_scan",
        "_ticket",
        "_turn",
        "autosave",
        "cassette",
        "hit",
        "key",
        "meta",
        "occurrence",
        "recording",
        "request",
        "response",
        "source",
        "started",
    )

    def __init__(
        self,
        cassette: CallOwner,
        key: str,
        request: dict[str, Any],
        occurrence: int,
        *,
        response: Any = None,
        hit: bool = False,
        recording: bool = True,
        meta: dict[str, Any] | None = None,
        autosave: bool = False,
        ticket: int | None = None,
        began: int | None = None,
        turn: Turn | None = None,
        source: dict[str, Any] | None = None,
    ) -> None:
        self.cassette = cassette
        self.key = key
        #: the normalized request (what the key is the hash of): read it, never change it
        self.request = request
        self.occurrence = occurrence
        #: the request as the integration built it, on a miss: the secrets it sends in a
        #: key format are ``<secret>`` in ``request``, and a response repeating one is masked
        self.source = source
        #: the redaction of this recording, made at its first use (``_scanning``)
        self._scan: RecordingScan | None = None
        #: the recording (a fresh copy) on a hit; ``None`` on a miss
        self.response = response
        self.hit = hit
        #: whether a live outcome of this call is kept (false in mode ``off``)
        self.recording = recording and not hit
        #: what a recording stores with it on a miss; the recording's own meta on a hit
        self.meta = dict(meta or {})
        self.autosave = autosave
        #: when the call began (``time.perf_counter``), which ``duration_ms`` counts from;
        #: a layer moves it past a wait that is not the call's own (an SDK's back-off)
        self.started = time.perf_counter()
        self._ticket = ticket
        self._done = False
        self._lock = threading.Lock()
        #: the recording clock's tick when this live call began (``order``)
        self._began = began
        #: a hit's place in its recording's completion order (``order``)
        self._turn = turn
        if turn is not None:  # a hit its layer never hands back still frees its successors
            weakref.finalize(self, cassette.replay_order.handed_back, turn)

    @property
    def id(self) -> str:
        """Deterministic ID for the answer of this call (same in record and replay)."""
        return message_id(self.key, self.occurrence)

    def turn(self) -> Handing | NoTurn | cancellation.Replayed:
        """Where a hit is handed back to the program: ``with call.turn():`` (or ``async
        with``) around it waits until the calls that completed before this one when it was
        recorded, and run now, are handed back (bounded: ``chaincassette.order``), and
        marks this one handed back when it ends. A call that keeps no order waits for
        nothing; a recorded cancellation waits to be cancelled (``cancellation.Replayed``)."""
        turn = self._turn
        inner = NO_TURN if turn is None else Handing(self.cassette.replay_order, turn)
        duration = cancellation.recorded_ms(self.response) if self.hit else None
        if duration is None:
            return inner
        return cancellation.Replayed(inner, duration, self._not_cancelled)

    def _not_cancelled(self, waited: float | None) -> BaseException:
        """The miss of a recorded cancellation nothing cancelled in this replay."""
        owner = self.cassette
        duration = cancellation.recorded_ms(self.response) or 0.0
        error = miss.not_cancelled(
            owner.path,
            owner.mode,
            fresh_copy(self.request),
            self.key,
            duration,
            waited,
            argument=owner.mode_argument,
        )
        return owner.report_miss(error)

    def raise_if_error(self) -> Any:
        """The recorded response, or the recorded error raised again."""
        response = self.response
        if cancellation.recorded_ms(response) is not None:  # a layer that never waited
            raise self._not_cancelled(None)
        if isinstance(response, dict) and len(response) == 1 and "error" in response:
            error = response["error"]
            if isinstance(error, dict):
                raised = decoded(self, rebuild_error, error)  # refused: CassetteFormatError
                if hasattr(raised, "add_note"):  # Python 3.11+; its text stays the live one
                    raised.add_note(
                        f"chaincassette: replayed from {self.cassette.path}, where the "
                        "recording run stored it; re-record the cassette to call the provider "
                        "again"
                    )
                raise raised
        return response

    def answer(self, live: Callable[[], T]) -> T:
        """The recording on a hit; else ``live()``, recorded. The value is always a fresh
        JSON copy, identical in record and replay (``live`` must return JSON data)."""
        if self.hit:
            with self.turn():
                return self.response
        try:
            response = live()
        except BaseException:
            self.abandon()
            raise
        return self.record(response)

    # -- what the adapter reports ------------------------------------------------------------

    def record(self, response: Any, *, meta: dict[str, Any] | None = None) -> Any:
        """Keep the live ``response``; returns the fresh copy a replay would return (a
        ``TypeError`` when a cassette cannot store it: then the call keeps nothing, and
        the next recordings of its key no longer wait for it)."""
        try:
            stored, text = json_copy_text(response, what="the response")
        except BaseException:
            self.abandon()
            raise
        if not self.recording:
            self._finish(None)
            return fresh_copy(stored)
        # stored masked, and this run gets what a replay will get
        scan = self._scanning()
        scan.text = text
        stored = scan.mask_response(stored, where=str(self.cassette.path))
        self._finish(self._keeper(stored, scan, meta))
        return fresh_copy(stored)

    def _keeper(
        self, stored: Any, scan: RecordingScan, meta: dict[str, Any] | None
    ) -> Callable[[], None]:
        """What keeps ``stored`` (this call's outcome, completed now) in the cassette."""
        info = {**self.meta, **(meta or {})}
        order = with_branch(self._ended(), info.pop(BRANCH, None))
        if order is not None:
            info["order"] = order
        if self.cassette.record_timing:
            info["duration_ms"] = round((time.perf_counter() - self.started) * 1000, 1)
        cassette, key, request, autosave = self.cassette, self.key, self.request, self.autosave

        def keep() -> None:
            cassette.keep(key, request, stored, info, scan=scan)
            if autosave and not cassette.in_block:
                cassette.save()

        return keep

    def _scanning(self) -> RecordingScan:
        """This recording's redaction: its request is redacted at the first use, and the
        secrets it sent learned before any part of the response is masked."""
        scan = self._scan
        if scan is None:
            scan = RecordingScan(self.cassette.redactor, request=self.request, source=self.source)
            self._scan = scan
        return scan

    def mask_response(self, response: Any, *, where: str | None = None) -> Any:
        """A part of the live response as it will be stored and replayed (a tool's result
        the program sees before it is recorded): ``Redactor.mask_response``, with what this
        call's request sent masked too."""
        return self._scanning().mask_response(response, where=where)

    def mask_chunk(self, chunk: Any) -> Any:
        """A stream's live chunk as it is stored and replays (no warning: the recording of
        the whole stream says what was masked)."""
        return self._scanning().mask_values(chunk)

    def record_error(self, error: BaseException, *, meta: dict[str, Any] | None = None) -> None:
        """Keep the exception the live call raised; a replay raises it again.

        Its text, attributes and headers go through the cassette's redactor first: a
        provider's "invalid API key sk-..." message must not put the key on disk.
        """
        encoded = self.cassette.redactor.redact(encode_error(error), check_names=True)
        self.record({"error": encoded}, meta=meta)

    def fail(self, error: BaseException, *, meta: dict[str, Any] | None = None) -> None:
        """The live call raised ``error``: record it when it is a provider's answer
        (``error_codec.recordable``), or, for an async call the program cancelled, the
        cancellation (``cancellation``); else keep nothing. The caller re-raises ``error``."""
        if isinstance(error, asyncio.CancelledError) and self.recording and _in_task():
            self._hold_cancelled(meta)
            return
        if recordable(error) and self.recording and not credentials.explained(error):
            try:
                self.record_error(error, meta=meta)
                return
            except Exception:  # an error that cannot be stored must not hide the real one
                pass
        self.abandon()

    def abandon(self) -> None:
        """Nothing to keep (the live call failed uncounted, or was never made)."""
        self._finish(None)

    def _hold_cancelled(self, meta: dict[str, Any] | None) -> None:
        """Keep this call, cancelled now, once the run shows the program went on past it
        (``cancellation.Pending``); later recordings of its key wait for the verdict."""
        with self._lock:
            if self._done:
                return
        stored = cancellation.stored((time.perf_counter() - self.started) * 1000)
        keep = self._keeper(stored, self._scanning(), meta)
        cassette = self.cassette

        def settle(kept: bool) -> None:
            self._finish(keep if kept else None)

        cassette.cancellations.hold(settle, in_block=lambda: cassette.in_block > 0)
        cassette.held_cancelled()

    def _ended(self) -> dict[str, Any] | None:
        """This live call completed now: its ``order``, if it overlapped another call."""
        with self._lock:
            began, self._began = self._began, None
        return None if began is None else self.cassette.record_clock.end(began)

    def _finish(self, action: Callable[[], None] | None) -> None:
        self._ended()
        if self._turn is not None:
            self.cassette.replay_order.handed_back(self._turn)
        with self._lock:
            if self._done:
                return
            self._done = True
        if self._ticket is None:
            if action is not None:
                action()
            return
        self.cassette.record_order.done(self.key, self._ticket, action)


def _in_task() -> bool:
    """Whether an asyncio task runs here (only a task's call can be cancelled)."""
    try:
        return asyncio.current_task() is not None
    except RuntimeError:  # no event loop runs in this thread
        return False
