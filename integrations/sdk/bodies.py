"""The body of a streamed (SSE) response, recorded event by event or replayed from a cassette.

Both are httpx byte streams the SDK's own SSE decoder reads. Recording follows the engine's
stream rule (``chaincassette.streams``) and ends at a terminal event (``wire.TERMINAL_EVENTS``):
OpenAI's SDK closes the response at ``[DONE]``, before the server's end of stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx

from chaincassette import Call
from chaincassette.layers import answering
from chaincassette.streams import arecord_stream, areplay_stream, record_stream, replay_stream

from . import wire

Meta = Callable[[list[Any]], dict[str, Any] | None]


def _same(event: Any) -> Any:
    return event


class RecordingBody(httpx.SyncByteStream):
    """The live SSE body of ``response``, recorded into ``call`` as it is read."""

    def __init__(self, call: Call, response: httpx.Response, meta: Meta) -> None:
        self._call = call
        self._response = response
        self._ended = False
        self._events = record_stream(
            call, self._live_events(), _same, wire.event_bytes, guard=answering, meta=meta
        )

    def _live_events(self) -> Iterator[dict[str, Any]]:
        parser = wire.SSEParser()
        for raw in self._response.iter_bytes():
            for event in parser.feed(raw):
                self._ended = wire.is_terminal(event)  # before the yield: ``__iter__`` reads it
                yield event
                if self._ended:
                    return
        yield from parser.flush()

    def __iter__(self) -> Iterator[bytes]:
        for data in self._events:
            if self._ended:  # finish the recording first: the reader may stop at this event
                rest = list(self._events)
                yield data
                yield from rest
                return
            yield data

    def close(self) -> None:
        self._events.close()  # a recording not finished keeps the prefix it saw
        self._call.abandon()  # a stream never read: nothing to keep (no-op once recorded)
        self._response.close()


class ARecordingBody(httpx.AsyncByteStream):
    """``RecordingBody`` for the async client."""

    def __init__(self, call: Call, response: httpx.Response, meta: Meta) -> None:
        self._call = call
        self._response = response
        self._ended = False
        self._events = arecord_stream(
            call, self._live_events(), _same, wire.event_bytes, guard=answering, meta=meta
        )

    async def _live_events(self) -> AsyncIterator[dict[str, Any]]:
        parser = wire.SSEParser()
        async for raw in self._response.aiter_bytes():
            for event in parser.feed(raw):
                self._ended = wire.is_terminal(event)
                yield event
                if self._ended:
                    return
        for event in parser.flush():
            yield event

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for data in self._events:
            if self._ended:
                rest = [more async for more in self._events]
                yield data
                for more in rest:
                    yield more
                return
            yield data

    async def aclose(self) -> None:
        await self._events.aclose()
        self._call.abandon()
        await self._response.aclose()


class ReplayBody(httpx.SyncByteStream):
    """A recorded SSE body: its events as bytes; a miss past an incomplete recording."""

    def __init__(self, call: Call) -> None:
        self._events = replay_stream(call, wire.event_bytes)

    def __iter__(self) -> Iterator[bytes]:
        yield from self._events

    def close(self) -> None:
        self._events.close()


class AReplayBody(httpx.AsyncByteStream):
    def __init__(self, call: Call) -> None:
        self._events = areplay_stream(call, wire.event_bytes)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for data in self._events:
            yield data

    async def aclose(self) -> None:
        await self._events.aclose()
