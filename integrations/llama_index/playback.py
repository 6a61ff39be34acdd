"""The one record/replay path of LlamaIndex endpoints, for ``CassetteLLM`` and ``boundary``.

Both must behave identically: the same stored shapes and meta, the same decorated replay
helpers firing LlamaIndex's events around a recorded answer, and a live call made under
``layers.answering`` so the layers underneath (a provider class, its SDK) record nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback

from chaincassette import Call, layers
from chaincassette.decoding import decoded
from chaincassette.streams import (
    arecord_stream,
    areplay_stream,
    record_stream,
    replay_stream,
    replays_as_stream,
)

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

#: The hit ``serve`` is replaying, for the decorated helper it calls: LlamaIndex's event
#: decorators put every keyword argument into the events, so the call cannot travel as one.
_pending: ContextVar[Call | None] = ContextVar("chaincassette_llama_index_pending", default=None)


def take_pending() -> Call:
    """The pending call, for the decorated helper replaying it (which raises a recorded
    provider error inside, so LlamaIndex's events see it fail as the live call did)."""
    call = _pending.get()
    _pending.set(None)
    assert call is not None, "a replay helper ran outside a replayed call"
    return call


# -- one call, served -------------------------------------------------------------------------


def endpoint_kind(name: str) -> str:
    """``achat`` -> ``chat``: sync and async of one endpoint share their recordings."""
    return name[1:] if name.startswith("a") else name


def call_meta(endpoint: str) -> dict[str, Any]:
    return {"framework": FRAMEWORK, "endpoint": endpoint_kind(endpoint)}


def _codec(endpoint: str) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    if "chat" in endpoint:
        return codec.encode_chat, codec.decode_chat
    return codec.encode_completion, codec.decode_completion


def serve(
    call: Call,
    endpoint: str,
    replay: Callable[[], Any],
    live: Callable[[], Any],
    describe: Callable[[], dict[str, Any] | None],
) -> Any:
    """Replay ``call`` through the decorated helper, or run ``live`` and record its answer
    (with ``describe()``, the LLM's description that ``llm=None`` replays from)."""
    if call.hit:
        token = _pending.set(call)  # ``pending(call)``, without a generator per replay
        try:
            return replay()
        finally:
            _pending.reset(token)
    try:
        with layers.answering():
            response = live()
    except BaseException as error:
        call.fail(error)  # a provider error is an answer too: replayed as raised
        raise
    return _kept(call, endpoint, response, describe, record_stream)


async def aserve(
    call: Call,
    endpoint: str,
    replay: Callable[[], Any],
    live: Callable[[], Any],
    describe: Callable[[], dict[str, Any] | None],
) -> Any:
    if call.hit:
        token = _pending.set(call)
        try:
            return await replay()
        finally:
            _pending.reset(token)
    try:
        with layers.answering():
            response = await live()
    except BaseException as error:
        call.fail(error)  # a provider error is an answer too: replayed as raised
        raise
    return _kept(call, endpoint, response, describe, arecord_stream)


def _kept(
    call: Call,
    endpoint: str,
    response: Any,
    describe: Callable[[], dict[str, Any] | None],
    stream_recorder: Callable[..., Any],
) -> Any:
    """Record a live ``response`` (a stream through ``stream_recorder``, the sync or async
    one) and return what a replay of it returns."""
    encode, decode = _codec(endpoint)
    if endpoint_kind(endpoint).startswith("stream_"):
        chunks = codec.StreamCodec(
            endpoint, keep_raw=bool(call.cassette.options.get(codec.RAW_OPTION))
        )
        return stream_recorder(
            call,
            response,
            chunks.encode,
            chunks.decode,
            guard=layers.answering,
            meta=lambda _chunks: {"llm": describe(), "tokens": chunks.tokens},
            seal=chunks.seal,
        )
    stored = call.record({"response": encode(response)}, meta={"llm": describe()})
    return decode(stored["response"])


def json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


# -- replaying ---------------------------------------------------------------------------------


def _answer(call: Call, decode: Callable[[Any], Any]) -> Any:
    """The recorded answer of ``call``, or its recorded error raised."""
    call.raise_if_error()
    return decoded(call, lambda response: decode(response["response"]), call.response)


def _turned(decode: Callable[[Any], Any]) -> Any:
    """The pending answer, once the calls that completed before it when recorded have
    been handed back (``Call.turn``): the helper's End event then follows theirs."""
    call = take_pending()
    with call.turn():
        return _answer(call, decode)


async def _aturned(decode: Callable[[Any], Any]) -> Any:
    call = take_pending()
    async with call.turn():
        return _answer(call, decode)


def _raised_when_called(call: Call) -> bool:
    """Whether the pending stream's recording is an error the live endpoint raised when
    called (Anthropic's sends the request then); one raised at its first chunk (OpenAI's
    sends it then) is raised there by ``replay_stream``, as chunks wait their turn there."""
    return not replays_as_stream(call)


def _stream_call() -> Call:
    """The pending stream, or its recorded error raised in its turn (``_raised_when_called``)."""
    call = take_pending()
    if _raised_when_called(call):
        with call.turn():
            call.raise_if_error()
    return call


async def _astream_call() -> Call:
    call = take_pending()
    if _raised_when_called(call):
        async with call.turn():
            call.raise_if_error()
    return call


def replay_helpers() -> dict[str, Callable[..., Any]]:
    """Replay helpers named like the endpoints, whose ``llm_*_callback`` decorators fire the
    events a live call fires around the pending answer; fresh each time (the decorators mark
    the function they wrap)."""
    chat_codec, completion_codec = codec.decode_chat, codec.decode_completion

    def chat(_self: Any, messages: Any, **kwargs: Any) -> Any:
        return _turned(chat_codec)

    async def achat(_self: Any, messages: Any, **kwargs: Any) -> Any:
        return await _aturned(chat_codec)

    def stream_chat(_self: Any, messages: Any, **kwargs: Any) -> Any:
        return replay_stream(_stream_call(), codec.StreamCodec("chat").decode)

    async def astream_chat(_self: Any, messages: Any, **kwargs: Any) -> Any:
        return areplay_stream(await _astream_call(), codec.StreamCodec("chat").decode)

    def complete(_self: Any, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        return _turned(completion_codec)

    async def acomplete(_self: Any, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        return await _aturned(completion_codec)

    def stream_complete(_self: Any, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        return replay_stream(_stream_call(), codec.StreamCodec("complete").decode)

    async def astream_complete(
        _self: Any, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> Any:
        return areplay_stream(await _astream_call(), codec.StreamCodec("complete").decode)

    chats: list[Callable[..., Any]] = [chat, achat, stream_chat, astream_chat]
    helpers = {f.__name__: llm_chat_callback()(f) for f in chats}
    for f in (complete, acomplete, stream_complete, astream_complete):
        helpers[f.__name__] = llm_completion_callback()(f)
    return helpers
