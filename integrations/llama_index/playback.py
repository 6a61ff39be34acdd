"""The one record/replay path of LlamaIndex endpoints, shared by ``CassetteLLM`` and the
class-level interception of ``use_cassette`` (``boundary``).

Both intercept the same eight endpoints and must behave identically: the same stored
shapes (a whole response, or every chunk of a stream, see ``chaincassette.streams``), the
same meta, the same decorated replay helpers that fire LlamaIndex's events around a
recorded answer, and one switch (``passing_through``) that lets a live call reach the
provider untouched, so a call that one layer is already recording is never recorded twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback

from chaincassette import Call
from chaincassette.layers import answering
from chaincassette.streams import arecord_stream, areplay_stream, record_stream, replay_stream
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

_pending: ContextVar[Call | None] = ContextVar("chaincassette_llama_index_pending", default=None)
_inside: ContextVar[bool] = ContextVar("chaincassette_llama_index_inside", default=False)


# -- handing a recorded answer to a decorated helper -----------------------------------------
#
# ``serve`` sets ``_pending`` to the hit around the replay helper's call; the helper takes it.


def take_pending() -> Call:
    """The pending call; a recorded provider error is raised here, inside the decorated
    helper, so LlamaIndex's events see it fail as the live call did."""
    call = _pending.get()
    _pending.set(None)
    assert call is not None, "a replay helper ran outside a replayed call"
    call.raise_if_error()
    return call


# -- letting a live call through ------------------------------------------------------------


@contextmanager
def passing_through() -> Iterator[None]:
    """Calls made in this block go straight to the provider: one layer already records them
    (the SDK's transport underneath too: ``answering``)."""
    token = _inside.set(True)
    try:
        with answering():
            yield
    finally:
        _inside.reset(token)


def is_passing_through() -> bool:
    return _inside.get()


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


def _stream_meta(describe: Callable[[], dict[str, Any] | None]) -> Any:
    def meta(chunks: list[Any]) -> dict[str, Any]:
        info: dict[str, Any] = {"llm": describe()}
        if chunks:  # usage is cumulative: the last chunk has the total
            info["tokens"] = count_tokens(chunks[-1]) or None
        return info

    return meta


def serve(
    call: Call,
    endpoint: str,
    replay: Callable[[], Any],
    live: Callable[[], Any],
    describe: Callable[[], dict[str, Any] | None],
) -> Any:
    """Replay ``call`` through the decorated helper, or run ``live`` and record its answer.

    ``describe()`` is the wrapped LLM's description, stored once per cassette (``llm=None``
    replays from it).
    """
    if call.hit:
        token = _pending.set(call)  # ``pending(call)``, without a generator per replay
        try:
            return replay()
        finally:
            _pending.reset(token)
    try:
        with passing_through():
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
        with passing_through():
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
        return stream_recorder(
            call, response, encode, decode, guard=passing_through, meta=_stream_meta(describe)
        )
    stored = call.record({"response": encode(response)}, meta={"llm": describe()})
    return decode(stored["response"])


def json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


# -- replaying ---------------------------------------------------------------------------------


def _answer(decode: Callable[[Any], Any]) -> Any:
    return decode(take_pending().response["response"])


def replay_helpers() -> dict[str, Callable[..., Any]]:
    """Fresh replay helpers, one per endpoint, named like it and decorated like a provider's.

    Each returns the pending recorded answer; the ``llm_*_callback`` decorator around it
    fires the Start/InProgress/End events and legacy callbacks a live call fires. Fresh
    functions every time: LlamaIndex's decorators mark the function they wrap.
    """
    chat_codec, completion_codec = codec.decode_chat, codec.decode_completion

    def chat(_self: Any, messages: Any, **kwargs: Any) -> Any:
        return _answer(chat_codec)

    async def achat(_self: Any, messages: Any, **kwargs: Any) -> Any:
        return _answer(chat_codec)

    def stream_chat(_self: Any, messages: Any, **kwargs: Any) -> Any:
        return replay_stream(take_pending(), chat_codec)

    async def astream_chat(_self: Any, messages: Any, **kwargs: Any) -> Any:
        return areplay_stream(take_pending(), chat_codec)

    def complete(_self: Any, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        return _answer(completion_codec)

    async def acomplete(_self: Any, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        return _answer(completion_codec)

    def stream_complete(_self: Any, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        return replay_stream(take_pending(), completion_codec)

    async def astream_complete(
        _self: Any, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> Any:
        return areplay_stream(take_pending(), completion_codec)

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
