"""Streams: recorded chunk by chunk, replayed chunk by chunk, with one ``complete`` rule.

A recorded stream is ``{"chunks": [...]}``; a stream its consumer stopped reading early
(``break``, ``aclose()``, or still open when its ``use_cassette`` block ended) is stored
as the prefix it saw with ``"complete": false``. A missing ``complete`` means complete.
A replay serves the chunks and raises ``CassetteMiss`` only when its consumer reads past
an incomplete recording: such a prefix is never replayed as a whole answer. A provider
error before the first chunk (a rate limit, a refused request) is recorded like any
call's error (``Call.fail``) and raised again by the replay, where it was raised live:
when the stream was asked for, or (meta ``failed_at: first_chunk``) at its first pull,
after the call had returned the stream; an error in the middle of a stream records
nothing (the next run calls again).

``guard`` is a context-manager factory entered around each pull from the live stream:
adapters use it to let a provider's own ``super()._stream`` chain pass through.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from .call import Call
from .canonical import fresh_copy
from .decoding import decoded
from .errors import CassetteMiss
from .miss import command

Guard = Callable[[], AbstractContextManager[Any]]
Seal = Callable[[list[Any]], list[Any]]
"""The encoded chunks as they are stored, given all of them (an adapter writing out the
final answer in the last chunk); each chunk was already served as it came."""

COMPLETE = "complete"
#: Meta of a stream whose live error came at its first pull, not from the call that
#: returned the stream (LlamaIndex's OpenAI and the SDKs send, or read, only then).
FAILED_AT = "failed_at"
FIRST_CHUNK = "first_chunk"


def is_stream(response: Any) -> bool:
    return isinstance(response, dict) and "chunks" in response


def is_complete(response: dict[str, Any]) -> bool:
    return response.get(COMPLETE, True) is not False


def failed_at_first_chunk(call: Call) -> bool:
    """Whether a hit is a stream whose live error came at its first pull: its replay
    returns the stream and raises the error there (``replay_stream``)."""
    return call.meta.get(FAILED_AT) == FIRST_CHUNK


def replays_as_stream(call: Call) -> bool:
    """Whether a hit is handed back as a stream (chunks, or an error at its first pull)."""
    return is_stream(call.response) or failed_at_first_chunk(call)


def stored_stream(chunks: list[Any], complete: bool) -> dict[str, Any]:
    return {"chunks": chunks} if complete else {"chunks": chunks, COMPLETE: False}


def check_complete(call: Call, served: int) -> None:
    """Raise ``CassetteMiss`` when this run wants more than an incomplete recording has."""
    response = call.response
    if not is_stream(response) or is_complete(response):
        return
    cassette = call.cassette
    count = len(response.get("chunks") or [])
    wanted = "more chunks" if served else "the whole answer"
    error = CassetteMiss(
        f"the recording of this stream in {cassette.path} stopped after {count} "
        f"chunk{'s' if count != 1 else ''} (mode {cassette.mode.value!r}): the recorded "
        f"consumer stopped reading early, and this run asks for {wanted}. An incomplete "
        "stream is never replayed as complete: re-record it with the program that reads "
        f"further: {command(cassette.path, 'record', cassette.mode_argument)}",
        path=cassette.path,
        mode=cassette.mode.value,
        request=fresh_copy(call.request),
        key=call.key,
        played=count,
    )
    raise cassette.report_miss(error)


def _recorded_chunks(response: Any) -> list[Any]:
    chunks = response.get("chunks") or []
    if not isinstance(chunks, list):
        raise TypeError(f"'chunks' must be a list, found {type(chunks).__name__}")
    return list(chunks)


def _as_stored(call: Call, encoded: Any) -> Any:
    """A live chunk as it is stored and replays: the values of secret variables, and what
    the cassette's requests sent, masked (``Redactor.mask_response`` masks the ones a stream
    split across chunks, in the stored copy only: the run saw those pieces as they came)."""
    return call.mask_chunk(encoded) if call.recording else encoded


def replay_stream(call: Call, decode: Callable[[Any], Any]) -> Iterator[Any]:
    """The recorded chunks of a hit, decoded; a miss past an incomplete recording; the
    recorded error raised at the first pull. The first pull waits for the calls that
    completed before this one when it was recorded (``Call.turn``)."""
    with call.turn():
        call.raise_if_error()
        chunks = decoded(call, _recorded_chunks, call.response)
        for chunk in chunks:
            yield decoded(call, decode, chunk)
        check_complete(call, len(chunks))


async def areplay_stream(call: Call, decode: Callable[[Any], Any]) -> AsyncIterator[Any]:
    async with call.turn():
        call.raise_if_error()
        chunks = decoded(call, _recorded_chunks, call.response)
        for chunk in chunks:
            yield decoded(call, decode, chunk)
        check_complete(call, len(chunks))


class StreamRecording:
    """The chunks of one live stream so far, stored exactly once; registered with its
    cassette while it runs, so a block that ends before the generator is finalized (an async
    generator closed early, later, by the loop) keeps the prefix (``flush_open_streams``)."""

    def __init__(self, call: Call, seal: Seal | None = None) -> None:
        self.call = call
        self.chunks: list[Any] = []
        self._seal = seal
        self._lock = threading.Lock()
        self._done = False
        call.cassette.open_streams.add(self)

    def finish(
        self,
        complete: bool | None,
        meta: dict[str, Any] | None = None,
        error: BaseException | None = None,
    ) -> None:
        """Store the chunks (complete or not), or nothing (``None``), once; an ``error``
        before the first chunk is recorded as the call's outcome."""
        with self._lock:
            if self._done:
                return
            self._done = True
            chunks = list(self.chunks)
        self.call.cassette.open_streams.discard(self)
        if complete is None:
            if error is not None and not chunks:
                self.call.fail(error, meta={FAILED_AT: FIRST_CHUNK})
            else:
                self.call.abandon()
        else:
            chunks = self._seal(chunks) if self._seal is not None else chunks
            self.call.record(stored_stream(chunks, complete), meta=meta)


def _pull(source: Iterator[Any], guard: Guard | None) -> tuple[bool, Any]:
    with guard() if guard is not None else contextlib.nullcontext():
        try:
            return True, next(source)
        except StopIteration:
            return False, None


def record_stream(
    call: Call,
    live: Iterator[Any],
    encode: Callable[[Any], Any],
    decode: Callable[[Any], Any],
    *,
    guard: Guard | None = None,
    meta: Callable[[list[Any]], dict[str, Any] | None] | None = None,
    seal: Seal | None = None,
) -> Iterator[Any]:
    """Yield each live chunk as its replayed form (``decode(encode(chunk))``) and record
    them all when the stream ends; ``meta(chunks)`` adds meta computed from the chunks,
    ``seal(chunks)`` is what is stored of them."""
    recording = StreamRecording(call, seal)
    source = iter(live)
    try:
        while True:
            more, chunk = _pull(source, guard)
            if not more:
                break
            encoded = _as_stored(call, encode(chunk))
            recording.chunks.append(encoded)
            yield decode(encoded)
    except GeneratorExit:  # the consumer stopped early: keep the prefix it saw
        _close(source)
        recording.finish(False, meta(recording.chunks) if meta else None)
        raise
    except BaseException as error:
        recording.finish(None, error=error)
        raise
    recording.finish(True, meta(recording.chunks) if meta else None)


async def arecord_stream(
    call: Call,
    live: AsyncIterator[Any],
    encode: Callable[[Any], Any],
    decode: Callable[[Any], Any],
    *,
    guard: Guard | None = None,
    meta: Callable[[list[Any]], dict[str, Any] | None] | None = None,
    seal: Seal | None = None,
) -> AsyncIterator[Any]:
    recording = StreamRecording(call, seal)
    source = live.__aiter__()
    try:
        while True:
            with guard() if guard is not None else contextlib.nullcontext():
                try:
                    chunk = await source.__anext__()
                except StopAsyncIteration:
                    break
            encoded = _as_stored(call, encode(chunk))
            recording.chunks.append(encoded)
            yield decode(encoded)
    except GeneratorExit:
        recording.finish(False, meta(recording.chunks) if meta else None)
        close = getattr(source, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()
        raise
    except BaseException as error:
        recording.finish(None, error=error)
        raise
    recording.finish(True, meta(recording.chunks) if meta else None)


def _close(source: Iterator[Any]) -> None:
    close = getattr(source, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            close()
