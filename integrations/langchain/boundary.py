"""Record and replay at the chat-model provider boundary (``_generate``/``_stream`` and async).

``.stream()``, ``.astream()``, ``astream_events`` and LangGraph ``stream_mode="messages"``
never consult a ``BaseCache``, and on a cache hit LangGraph emits one whole message instead
of chunks. So while a cassette is active, the four provider methods of every concrete
``BaseChatModel`` subclass are wrapped: a recorded answer is returned (or its chunks
yielded) instead of calling the provider, and LangChain itself still fires
``on_chat_model_start``, one ``on_llm_new_token`` per chunk, ``on_llm_end``, merges chunks
and assigns IDs exactly as for a live call.

Only methods a class defines itself are wrapped (``functools.wraps`` keeps LangChain's
"is ``_stream`` overridden?" checks and signature inspection intact), classes are wrapped
lazily on first use too, and everything is restored when the last user uninstalls.

A stream the consumer stops reading (``break``, ``aclose()``) is recorded with the chunks
it saw and ``complete: false``; a replay serves that prefix and raises ``CassetteMiss``
only if its consumer reads past it.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.language_models import chat_models
from langchain_core.language_models.chat_models import BaseChatModel, generate_from_stream
from langchain_core.load import dumps
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables.config import get_config_list

from chaincassette import Call, CassetteMiss, serving_cassette
from chaincassette.layers import answering
from chaincassette.live_guard import check_live
from chaincassette.patching import PassThrough, SharedPatches, all_subclasses
from chaincassette.streams import arecord_stream, check_complete, record_stream

from . import llm_strings, routing, trace
from .labels import call_meta
from .messages import canonical_messages
from .requests import build_request, chat_request
from .serde import decode_generation, encode_generation, encode_result

PROVIDER_METHODS = ("_generate", "_agenerate", "_stream", "_astream")
#: Cassette option: a recorded non-streamed answer may serve a streamed request and back.
ACROSS_STREAMING = "serve_across_streaming"


@dataclass
class _Call:
    """The chat call LangChain is making in this context (set around ``_generate_with_cache``)."""

    model: BaseChatModel
    #: The cassette serving the call, asked once per call (``None``: it passes through).
    target: routing.Route | None
    run_id: UUID | None
    #: LangChain's global cache is skipped for this call (see ``_patched_get_llm_cache``).
    skips_cache: bool = False
    #: LangChain's ``dumps`` of the messages, handed over by the cache (see ``note_prompt``).
    prompt: str | None = None
    #: LangChain's ``llm_string`` for this call, handed over with the prompt.
    llm_string: str | None = None


_call: ContextVar[_Call | None] = ContextVar("chaincassette_lc_call", default=None)
_inside = PassThrough("chaincassette_lc_inside")
_preplanned: ContextVar[_Planned | None] = ContextVar("chaincassette_lc_preplanned", default=None)


# -- handing LangChain's own cache key over ------------------------------------------------------


def note_prompt(prompt: str, llm_string: str) -> None:
    """Keep the prompt and ``llm_string`` LangChain computed for its cache lookup, for
    ``_plan`` to reuse.

    They are ``dumps`` of this call's messages with IDs cleared and
    ``_get_llm_string(stop=stop, **kwargs)``, exactly what ``_plan`` would compute again:
    for long conversations that ``dumps`` is most of a replay.
    """
    call = _call.get()
    if call is not None:
        call.prompt = prompt
        call.llm_string = llm_string


def serving_current_call() -> bool:
    """Whether the chat call in progress in this context is served by this layer."""
    call = _call.get()
    return call is not None and call.target is not None


# -- installing -----------------------------------------------------------------------------------


def _apply(patches: SharedPatches) -> None:
    patches.replace(chat_models, "get_llm_cache", _patched_get_llm_cache(chat_models.get_llm_cache))
    for name, patch in (
        ("_generate_with_cache", _patched_generate_with_cache),
        ("_agenerate_with_cache", _patched_agenerate_with_cache),
        ("stream", _patched_stream),
        ("astream", _patched_astream),
        ("batch", _patched_batch),
    ):
        original = getattr(BaseChatModel, name)  # batch is inherited from Runnable
        patches.replace(BaseChatModel, name, functools.wraps(original)(patch(original)))
    for cls in all_subclasses(BaseChatModel):
        _wrap_class(cls)


_PATCHES = SharedPatches(_apply)
install = _PATCHES.install
uninstall = _PATCHES.uninstall
installed = _PATCHES.installed


def is_installed() -> bool:
    return _PATCHES.active


def _ensure_wrapped(cls: type) -> bool:
    """Wrap ``cls`` (and its chat-model bases) if not yet; whether its calls are served."""
    if cls in _PATCHES.wrapped:
        return True
    with _PATCHES.lock:
        if not _PATCHES.users:
            return False
        for klass in cls.__mro__:
            if (
                isinstance(klass, type)
                and issubclass(klass, BaseChatModel)
                and klass is not BaseChatModel
            ):
                _wrap_class(klass)
    return True


def _wrap_class(cls: type) -> None:
    _PATCHES.wrap_methods(cls, PROVIDER_METHODS, lambda n, f: _like(f, _WRAPPERS[n](f)))


def _like(original: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
    """``wrapper`` dressed as ``original``, its signature computed once.

    LangChain asks ``inspect.signature(self._generate)`` on every uncached call (does it
    take ``run_manager``?); through ``__wrapped__`` that walk costs as much as a replay's
    own lookup, and the answer never changes.
    """
    dressed = functools.wraps(original)(wrapper)
    signature = _signature(original)
    if signature is not None:
        dressed.__signature__ = signature  # type: ignore[attr-defined]
    return dressed


@functools.lru_cache(maxsize=1024)
def _signature(original: Callable[..., Any]) -> inspect.Signature | None:
    """Once per method: every ``use_cassette`` block wraps the same methods again."""
    try:
        return inspect.signature(original)
    except Exception:  # 3.14: an annotation only TYPE_CHECKING imports
        return None


# -- patches on BaseChatModel ------------------------------------------------------------------


def _patched_get_llm_cache(original: Callable[[], Any]) -> Callable[[], Any]:
    def get_llm_cache() -> Any:
        """No global cache for a chat call this layer serves, where the global cache is a
        cassette's: it would only step aside for the call (``CassetteCache._deferred``),
        after LangChain had serialized the whole conversation to ask it."""
        cache = original()
        call = _call.get()
        if call is not None and call.skips_cache and isinstance(cache, routing.RoutedCache):
            return None
        return cache

    return get_llm_cache


def _begun_call(model: BaseChatModel, messages: Any, args: Any, kwargs: Any) -> _Call:
    target = routing.route(model) if _ensure_wrapped(type(model)) else None
    run_manager = kwargs.get("run_manager") or (args[1] if len(args) > 1 else None)
    # ``cache=True`` asks for the global cache and fails without one: keep it then
    skips = target is not None and model.cache is None and bool(messages)
    return _Call(model, target, getattr(run_manager, "run_id", None), skips)


def _patched_generate_with_cache(original: Callable[..., Any]) -> Callable[..., Any]:
    def _generate_with_cache(self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any) -> Any:
        token = _call.set(_begun_call(self, messages, args, kwargs))
        try:
            return original(self, messages, *args, **kwargs)
        finally:
            _call.reset(token)

    return _generate_with_cache


def _patched_agenerate_with_cache(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _agenerate_with_cache(
        self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any
    ) -> Any:
        begun = _begun_call(self, messages, args, kwargs)
        token = _call.set(begun)
        plan = _preplan(self, messages, args, kwargs) if begun.target is not None else None
        planned = _preplanned.set(plan)
        try:
            return await original(self, messages, *args, **kwargs)
        finally:
            _preplanned.reset(planned)
            _call.reset(token)
            if plan is not None and not plan.taken:
                plan.call.abandon()

    return _agenerate_with_cache


def _preplan(
    model: BaseChatModel, messages: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> _Planned | None:
    """Look the call up now, on the event loop, before LangChain hops to a worker thread.

    Models without a native ``_agenerate`` run ``_generate`` in an executor, where
    concurrent identical requests would reach the cassette in a random order; taking
    the lookup here keeps occurrence order equal to ``asyncio.gather`` order.
    """
    if _inside.active:
        return None
    call_kwargs = {k: v for k, v in kwargs.items() if k not in ("stop", "run_manager")}
    run_manager = kwargs.get("run_manager") or (args[1] if len(args) > 1 else None)
    stream = model._should_use_protocol_streaming(
        async_api=True, run_manager=run_manager, **call_kwargs
    ) or model._should_stream(async_api=True, run_manager=run_manager, **call_kwargs)
    call = _plan(model, messages, args, kwargs, stream=stream)
    return _Planned(call, stream) if call is not None else None


def _patched_batch(original: Callable[..., Any]) -> Callable[..., Any]:
    def batch(
        self: BaseChatModel, inputs: list[Any], config: Any = None, **kwargs: Any
    ) -> list[Any]:
        """Run a batch one input at a time, in order, while a cassette serves the model.

        ``batch`` runs inputs in a thread pool, so identical inputs would reach the cassette
        in scheduling order and, on replay, get one another's recordings. In order, each
        position gets its own recording back (a replay takes milliseconds anyway).
        """
        if len(inputs) > 1 and routing.route(self) is not None:
            configs = get_config_list(config, len(inputs))
            config = [{**c, "max_concurrency": 1} for c in configs]
        return original(self, inputs, config, **kwargs)

    return batch


def _patched_stream(original: Callable[..., Any]) -> Callable[..., Any]:
    def stream(self: BaseChatModel, *args: Any, **kwargs: Any) -> Any:
        _ensure_wrapped(type(self))
        return original(self, *args, **kwargs)

    return stream


def _patched_astream(original: Callable[..., Any]) -> Callable[..., Any]:
    def astream(self: BaseChatModel, *args: Any, **kwargs: Any) -> Any:
        _ensure_wrapped(type(self))
        return original(self, *args, **kwargs)

    return astream


# -- the provider-method wrappers -------------------------------------------------------------


@dataclass
class _Planned:
    """A call looked up before LangChain hops to a worker thread (see ``_preplan``)."""

    call: Call
    stream: bool
    taken: bool = False


def _plan(
    model: BaseChatModel, messages: Any, args: tuple[Any, ...], kwargs: dict[str, Any], stream: bool
) -> Call | None:
    if _inside.active:
        return None
    planned = _preplanned.get()
    if planned is not None and planned.stream == stream and not planned.taken:
        planned.taken = True
        return planned.call
    handed = _call.get()
    target = handed.target if handed is not None and handed.model is model else None
    if target is None:
        target = routing.route(model)
    if target is None:
        if not isinstance(routing.cache_consulted(model), routing.RoutedCache):
            check_live(f"chat model call ({type(model).__name__})")
        return None
    call_kwargs = {k: v for k, v in kwargs.items() if k not in ("stop", "run_manager")}
    stop = kwargs.get("stop", args[0] if args else None)
    prompt = llm_string = None
    if handed is not None and handed.model is model:
        prompt, llm_string = handed.prompt, handed.llm_string
    if handed is not None:
        handed.prompt = handed.llm_string = None
    if llm_string is None:
        llm_string = llm_strings.llm_string(model, stop, call_kwargs)
    cassette = target.cassette
    across = bool(cassette.options.get(ACROSS_STREAMING))
    canonical = _canonical_messages(messages) if prompt is None else None
    if canonical is not None:  # no dumps: each message's canonical form is kept (``messages``)
        request = chat_request(canonical, llm_string, stream=stream)
        if across:
            request.pop("stream")
        call = cassette.begin(
            request, stable_messages=True, meta=call_meta(), autosave=target.autosave
        )
    else:
        text = prompt if prompt is not None else _dumps_without_ids(messages)

        def built() -> dict[str, Any]:
            request = build_request(text, llm_string, stream=stream)
            if across:
                request.pop("stream", None)
            return request

        call = cassette.begin(
            built,
            identity=("chat", text, llm_string, stream),
            meta=call_meta(),
            autosave=target.autosave,
        )
    trace.link_model_call(_current_run_id(), call.key)
    return call


def _canonical_messages(messages: Any) -> list[dict[str, Any]] | None:
    """The canonical messages, or ``None`` where only LangChain's ``dumps`` of the list
    says how ``build_request`` reads it (no messages, an item that is not a message)."""
    return canonical_messages(messages) if messages else None


def _dumps_without_ids(messages: Any) -> str:
    """The ``prompt`` LangChain's ``_generate_with_cache`` gives a cache for ``messages``."""
    return dumps(
        [
            m.model_copy(update={"id": None}) if getattr(m, "id", None) is not None else m
            for m in messages
        ]
    )


def _current_run_id() -> UUID | None:
    call = _call.get()
    if call is not None and call.run_id is not None:
        return call.run_id
    return trace.last_model_run()


def _result(response: dict[str, Any], call: Call) -> ChatResult:
    if "chunks" in response:
        check_complete(call, 0)
        result = generate_from_stream(iter(_chunks(response, call)))
    else:
        generations = [decode_generation(g) for g in response.get("generations", [])]
        result = ChatResult(generations=generations, llm_output=response.get("llm_output"))  # type: ignore[arg-type]
    for index, generation in enumerate(result.generations):
        generation.message.id = call.id + (f"-{index}" if index else "")
    return result


def _chunks(response: dict[str, Any], call: Call) -> list[ChatGenerationChunk]:
    if "chunks" in response:
        chunks = [_as_chunk(decode_generation(c)) for c in response["chunks"]]
    else:
        chunks = [_as_chunk(decode_generation(g)) for g in response.get("generations", [])[:1]]
    for chunk in chunks:
        chunk.message.id = call.id
    return chunks


def _closing_chunk(chunks: list[ChatGenerationChunk], call: Call) -> list[ChatGenerationChunk]:
    """The empty ``chunk_position="last"`` chunk LangChain would add, with the cassette's id.

    When a provider never marks its last chunk, langchain-core appends one carrying the
    run's random ``lc_run--<uuid7>`` id; yielding it here, in record and replay alike,
    keeps every chunk id of a replayed stream the same in every run.
    """
    if not chunks:
        return []
    last = chunks[-1].message
    if not isinstance(last, AIMessageChunk) or last.chunk_position:
        return []
    empty: str | list[Any] = "" if isinstance(last.content, str) else []
    closing = AIMessageChunk(content=empty, chunk_position="last", id=call.id)
    return [ChatGenerationChunk(message=closing)]


def _as_chunk(generation: Any) -> ChatGenerationChunk:
    if isinstance(generation, ChatGenerationChunk):
        return generation
    message: BaseMessage = generation.message
    if isinstance(message, AIMessage) and not isinstance(message, AIMessageChunk):
        data = message.model_dump(exclude={"type", "tool_calls", "invalid_tool_calls"})
        data["tool_call_chunks"] = [
            {"name": c["name"], "args": _json_args(c["args"]), "id": c.get("id"), "index": i}
            for i, c in enumerate(message.tool_calls)
        ]
        message = AIMessageChunk(**data)
    info = generation.generation_info if isinstance(generation, ChatGeneration) else None
    return ChatGenerationChunk(message=message, generation_info=info)  # type: ignore[arg-type]


def _json_args(args: Any) -> str:
    return json.dumps(args)


def _decoder(call: Call, copies: list[ChatGenerationChunk]) -> Callable[[Any], Any]:
    """Turns a stored chunk into the chunk a replay yields (and keeps it for the closing one)."""

    def decode(encoded: Any) -> ChatGenerationChunk:
        copy = _as_chunk(decode_generation(encoded))
        copy.message.id = call.id
        copies.append(copy)
        return copy

    return decode


def _wrap_generate(original: Callable[..., Any]) -> Callable[..., Any]:
    def _generate(self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any) -> Any:
        call = _plan(self, messages, args, kwargs, stream=False)
        if call is None:
            with answering():  # LangChain's cache (or nothing) answers it, not the SDK's layer
                return original(self, messages, *args, **kwargs)
        if call.hit:
            return _result(call.raise_if_error(), call)
        try:
            with _inside.raised():
                live = original(self, messages, *args, **kwargs)
        except BaseException as error:
            call.fail(error)  # a provider error is an answer too: replayed as raised
            raise
        return _result(call.record(encode_result(live)), call)

    return _generate


def _wrap_agenerate(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _agenerate(self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any) -> Any:
        call = _plan(self, messages, args, kwargs, stream=False)
        if call is None:
            with answering():
                return await original(self, messages, *args, **kwargs)
        if call.hit:
            return _result(call.raise_if_error(), call)
        try:
            with _inside.raised():
                live = await original(self, messages, *args, **kwargs)
        except BaseException as error:
            call.fail(error)  # a provider error is an answer too: replayed as raised
            raise
        return _result(call.record(encode_result(live)), call)

    return _agenerate


def _wrap_stream(original: Callable[..., Any]) -> Callable[..., Any]:
    def _stream(self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        call = _plan(self, messages, args, kwargs, stream=True)
        if call is None:
            _refuse_unreplayable_stream(self)
            yield from _inside.iterate(original(self, messages, *args, **kwargs))
            return
        if call.hit:
            replayed = _chunks(call.raise_if_error(), call)
            yield from replayed
            check_complete(call, len(replayed))
            yield from _closing_chunk(replayed, call)
            return
        copies: list[ChatGenerationChunk] = []
        live = original(self, messages, *args, **kwargs)
        yield from record_stream(
            call, live, encode_generation, _decoder(call, copies), guard=_inside.raised
        )
        yield from _closing_chunk(copies, call)

    return _stream


def _wrap_astream(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _astream(
        self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        call = _plan(self, messages, args, kwargs, stream=True)
        if call is None:
            _refuse_unreplayable_stream(self)
            async for chunk in _inside.aiterate(original(self, messages, *args, **kwargs)):
                yield chunk
            return
        if call.hit:
            replayed = _chunks(call.raise_if_error(), call)
            for chunk in replayed:
                yield chunk
            check_complete(call, len(replayed))
            for chunk in _closing_chunk(replayed, call):
                yield chunk
            return
        copies: list[ChatGenerationChunk] = []
        live = original(self, messages, *args, **kwargs)
        async for chunk in arecord_stream(
            call, live, encode_generation, _decoder(call, copies), guard=_inside.raised
        ):
            yield chunk
        for chunk in _closing_chunk(copies, call):
            yield chunk

    return _astream


def _refuse_unreplayable_stream(model: BaseChatModel) -> None:
    """Raise ``CassetteMiss`` for a stream a replaying ``CassetteCache(stream_replay=False)``
    would otherwise let go live: LangChain never consults a cache for streams."""
    if _inside.active or serving_cassette() is not None:
        return
    cache = routing.cache_consulted(model)
    if not isinstance(cache, routing.RoutedCache) or cache.stream_replay:
        return
    cassette = cache.cassette
    if cassette is None or not cassette.replaying:
        return
    request = {"kind": "chat", "model": type(model).__name__, "stream": True}
    raise CassetteMiss(
        f"{type(model).__name__} streams, and the CassetteCache for {cassette.path} (mode "
        f"{cassette.mode.value!r}) was created with stream_replay=False: streams bypass "
        "LangChain's cache, so they cannot be replayed and are not called live. Use "
        "CassetteCache(..., stream_replay=True) (the default) or use_cassette(...).",
        path=cassette.path,
        mode=cassette.mode.value,
        request=request,
        key=cassette.key_for(request),
    )


_WRAPPERS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "_generate": _wrap_generate,
    "_agenerate": _wrap_agenerate,
    "_stream": _wrap_stream,
    "_astream": _wrap_astream,
}
