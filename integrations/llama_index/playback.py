"""The record/replay mechanics shared by ``CassetteLLM`` and the class-level interception.

Both intercept the same eight endpoints and must behave identically: the same stored
shapes (a whole response, or every chunk of a stream with ``complete``), the same meta,
the same decorated replay helpers that fire LlamaIndex's events around a recorded answer,
and one switch (``passing_through``) that lets a live call reach the provider untouched,
so a call that one layer is already recording is never recorded twice.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback

from chaincassette import Cassette, CassetteMiss, Lookup
from chaincassette.usage import count_tokens

from . import codec

FRAMEWORK = "llama_index"
#: The eight transport endpoints; everything else in ``LLM`` is built on them.
ENDPOINTS = (
    "chat",
    "achat",
    "stream_chat",
    "astream_chat",
    "complete",
    "acomplete",
    "stream_complete",
    "astream_complete",
)

_pending: ContextVar[Any] = ContextVar("chaincassette_llama_index_pending", default=None)
_inside: ContextVar[bool] = ContextVar("chaincassette_llama_index_inside", default=False)


# -- handing a recorded answer to a decorated helper -----------------------------------------


@contextmanager
def pending(payload: Any) -> Iterator[None]:
    """Make ``payload`` the answer the next replay helper in this context returns."""
    token = _pending.set(payload)
    try:
        yield
    finally:
        _pending.reset(token)


def take_pending() -> Any:
    payload = _pending.get()
    _pending.set(None)
    return payload


# -- letting a live call through ------------------------------------------------------------


@contextmanager
def passing_through() -> Iterator[None]:
    """Calls made in this block go straight to the provider: one layer already records them."""
    token = _inside.set(True)
    try:
        yield
    finally:
        _inside.reset(token)


def is_passing_through() -> bool:
    return _inside.get()


def guarded(chunks: Iterator[Any]) -> Generator[Any, None, None]:
    """Drive a live stream with interception switched off (a provider may call itself)."""
    try:
        while True:
            with passing_through():
                try:
                    chunk = next(chunks)
                except StopIteration:
                    return
            yield chunk
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


async def aguarded(chunks: AsyncIterator[Any]) -> AsyncGenerator[Any, None]:
    try:
        while True:
            with passing_through():
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    return
            yield chunk
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()


# -- recording -------------------------------------------------------------------------------


def record(
    cassette: Cassette,
    found: Lookup,
    endpoint: str,
    response: dict[str, Any],
    llm_info: dict[str, Any] | None = None,
) -> Any:
    """Store a live answer with its meta; returns what a replay would return."""
    meta: dict[str, Any] = {"framework": FRAMEWORK, "endpoint": endpoint}
    if response.get("chunks"):  # usage is cumulative: the last chunk has the total
        meta["tokens"] = count_tokens(response["chunks"][-1]) or None
    if llm_info is not None:
        meta["llm"] = llm_info
    return cassette.record(found, response, meta=meta)


def json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class _Recording:
    """One live stream being recorded: its chunks so far, stored exactly once.

    Registered with its cassette while it runs, so that a ``use_cassette`` block that ends
    before the stream's generator is finalized (an async generator closed early is only
    finalized later, by the event loop) still saves the prefix it saw.
    """

    def __init__(self, cassette: Cassette, store: Callable[[dict[str, Any]], Any]) -> None:
        self.cassette = cassette
        self.chunks: list[dict[str, Any]] = []
        self._store = store
        self._done = False
        self._lock = threading.Lock()
        with _open_lock:
            _open.setdefault(cassette, set()).add(self)

    def finish(self, complete: bool | None) -> None:
        """Store the chunks (``complete`` true or false), or nothing (``None``), once."""
        with self._lock:
            if self._done:
                return
            self._done = True
            chunks = list(self.chunks)
        with _open_lock:
            _open.get(self.cassette, set()).discard(self)
        if complete is not None:
            self._store({"chunks": chunks, "complete": complete})


_open: weakref.WeakKeyDictionary[Cassette, set[_Recording]] = weakref.WeakKeyDictionary()
_open_lock = threading.Lock()


def flush_open_streams(cassette: Cassette) -> None:
    """Store every stream of ``cassette`` still being recorded as an incomplete prefix."""
    with _open_lock:
        recordings = list(_open.pop(cassette, ()))
    for recording in recordings:
        recording.finish(complete=False)


def record_stream(
    live: Iterator[Any],
    encode: Callable[[Any], dict[str, Any]],
    decode: Callable[[Any], Any],
    store: Callable[[dict[str, Any]], Any],
    cassette: Cassette,
) -> Generator[Any, None, None]:
    """Yield the live chunks (as their replayed form) and ``store`` them all at the end.

    A consumer that stops early closes this generator: the prefix is stored with
    ``complete: false`` (by ``flush_open_streams`` if the cassette's block ends first).
    A provider error stores nothing (the next run retries).
    """
    recording = _Recording(cassette, store)
    source = guarded(live)
    try:
        for chunk in source:
            encoded = encode(chunk)
            recording.chunks.append(encoded)
            yield decode(encoded)
    except GeneratorExit:
        source.close()
        recording.finish(complete=False)
        raise
    except BaseException:
        recording.finish(complete=None)
        raise
    recording.finish(complete=True)


async def arecord_stream(
    live: AsyncIterator[Any],
    encode: Callable[[Any], dict[str, Any]],
    decode: Callable[[Any], Any],
    store: Callable[[dict[str, Any]], Any],
    cassette: Cassette,
) -> AsyncGenerator[Any, None]:
    recording = _Recording(cassette, store)
    source = aguarded(live)
    try:
        async for chunk in source:
            encoded = encode(chunk)
            recording.chunks.append(encoded)
            yield decode(encoded)
    except GeneratorExit:
        recording.finish(complete=False)
        await source.aclose()
        raise
    except BaseException:
        recording.finish(complete=None)
        raise
    recording.finish(complete=True)


# -- replaying -------------------------------------------------------------------------------


def incomplete(cassette: Cassette, payload: dict[str, Any]) -> CassetteMiss:
    count = len(payload.get("chunks") or [])
    return CassetteMiss(
        f"the recording of this stream in {cassette.path} was closed early by its "
        f"consumer after {count} chunk{'s' if count != 1 else ''}, and this run reads further; "
        "an incomplete stream is never replayed as complete: re-record it",
        path=cassette.path,
        mode=cassette.mode.value,
        request={},
        key="",
        played=count,
    )


def replay_chunks(
    cassette: Cassette, payload: dict[str, Any], decode: Callable[[Any], Any]
) -> Generator[Any, None, None]:
    for chunk in payload.get("chunks") or []:
        yield decode(chunk)
    if not payload.get("complete"):
        raise cassette.report_miss(incomplete(cassette, payload))


async def areplay_chunks(
    cassette: Cassette, payload: dict[str, Any], decode: Callable[[Any], Any]
) -> AsyncGenerator[Any, None]:
    for chunk in payload.get("chunks") or []:
        yield decode(chunk)
    if not payload.get("complete"):
        raise cassette.report_miss(incomplete(cassette, payload))


def replay_helpers(cassette_of: Callable[[Any], Cassette]) -> dict[str, Callable[..., Any]]:
    """Fresh replay helpers, one per endpoint, named like it and decorated like a provider's.

    Each returns the pending recorded answer; the ``llm_*_callback`` decorator around it
    fires the Start/InProgress/End events and legacy callbacks a live call fires.
    ``cassette_of(llm)`` names the cassette in an incomplete-stream miss. Fresh functions
    every time: LlamaIndex's decorators mark the function they wrap.
    """

    def chat(_self: Any, messages: Any, **kwargs: Any) -> Any:
        return codec.decode_chat(take_pending()["response"])

    async def achat(_self: Any, messages: Any, **kwargs: Any) -> Any:
        return codec.decode_chat(take_pending()["response"])

    def stream_chat(_self: Any, messages: Any, **kwargs: Any) -> Any:
        return replay_chunks(cassette_of(_self), take_pending(), codec.decode_chat)

    async def astream_chat(_self: Any, messages: Any, **kwargs: Any) -> Any:
        return areplay_chunks(cassette_of(_self), take_pending(), codec.decode_chat)

    def complete(_self: Any, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        return codec.decode_completion(take_pending()["response"])

    async def acomplete(_self: Any, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        return codec.decode_completion(take_pending()["response"])

    def stream_complete(_self: Any, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        return replay_chunks(cassette_of(_self), take_pending(), codec.decode_completion)

    async def astream_complete(
        _self: Any, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> Any:
        return areplay_chunks(cassette_of(_self), take_pending(), codec.decode_completion)

    chats: tuple[Callable[..., Any], ...] = (chat, achat, stream_chat, astream_chat)
    completions: tuple[Callable[..., Any], ...] = (
        complete,
        acomplete,
        stream_complete,
        astream_complete,
    )
    helpers = {f.__name__: llm_chat_callback()(f) for f in chats}
    helpers.update({f.__name__: llm_completion_callback()(f) for f in completions})
    return helpers


def endpoint_kind(name: str) -> str:
    """``achat`` -> ``chat``: sync and async of one endpoint share their recordings."""
    return name[1:] if name.startswith("a") else name
