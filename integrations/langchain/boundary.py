"""Record and replay chat models at the provider boundary (``_generate``/``_stream`` and async).

``.stream()``, ``.astream()``, ``astream_events`` and LangGraph ``stream_mode="messages"``
never consult a ``BaseCache``, and on a cache hit LangGraph emits one whole message instead
of chunks. So the four provider methods of every concrete ``BaseChatModel`` subclass are
wrapped (once per process, classes defined later too): a recorded answer is returned (or
its chunks yielded) instead of calling the provider, and LangChain itself still fires
``on_chat_model_start``, one ``on_llm_new_token`` per chunk, ``on_llm_end``, merges chunks
and assigns IDs exactly as for a live call.

One wrapper per provider method is the whole of a chat call's path: it asks ``routing``
which cassette serves the call (none: it passes through), builds the canonical request
from the messages' fields and the model's ``llm_string``, asks the cassette and returns.
``BaseChatModel``'s own ``_agenerate``/``_astream`` (which run the sync methods in a worker
thread) are wrapped too, so concurrent calls reach the cassette in the order the event loop
made them; the sync method underneath then sees ``layers.answered_above`` and steps aside.

A stream the consumer stops reading (``break``, ``aclose()``) is recorded with the chunks
it saw and ``complete: false``; a replay serves that prefix and raises ``CassetteMiss``
only if its consumer reads past it.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from langchain_core.caches import BaseCache
from langchain_core.language_models import chat_models
from langchain_core.language_models.chat_models import BaseChatModel, generate_from_stream
from langchain_core.load import dumps
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables.config import get_config_list

from chaincassette import Call, layers, serving_cassette
from chaincassette.decoding import decoded
from chaincassette.live_guard import check_live
from chaincassette.patching import Patches, watch_subclasses
from chaincassette.streams import arecord_stream, check_complete, record_stream

from . import routing, tokens, trace
from .labels import call_meta
from .model_params import across_streaming, model_request
from .requests import ModelFields
from .serde import decode_generation, encode_generation, encode_result, stored_generations

PROVIDER_METHODS = ("_generate", "_agenerate", "_stream", "_astream")
#: ``BaseChatModel``'s defaults, which run the sync methods in a worker thread.
DEFAULT_ASYNC_METHODS = ("_agenerate", "_astream")
#: Cassette option: a recorded non-streamed answer may serve a streamed request and back.
ACROSS_STREAMING = "serve_across_streaming"
INIT_SUBCLASS = "__pydantic_init_subclass__"


def _apply(patches: Patches) -> None:
    skip_global_cache_in_blocks(patches, chat_models)
    batch = BaseChatModel.batch  # inherited from Runnable
    patches.replace(BaseChatModel, "batch", functools.wraps(batch)(_in_order(batch)))
    patches.wrap_methods(BaseChatModel, DEFAULT_ASYNC_METHODS, _wrapper)
    watch_subclasses(patches, BaseChatModel, _wrap_class, hook=INIT_SUBCLASS)


PATCHES = Patches(_apply)
install = PATCHES.install


class _SteppedAside(BaseCache):
    """The global cache a model meets in a block where the program set one of its own: it
    never answers and keeps nothing. Not ``None``: a model with ``cache=True`` (use the
    global cache) would then fail with LangChain's "no cache found"."""

    def lookup(self, prompt: str, llm_string: str) -> None:
        return None

    def update(self, prompt: str, llm_string: str, return_val: Any) -> None:
        return None

    def clear(self, **kwargs: Any) -> None:
        return None

    async def alookup(self, prompt: str, llm_string: str) -> None:  # no executor hop
        return None

    async def aupdate(self, prompt: str, llm_string: str, return_val: Any) -> None:
        return None


STEPPED_ASIDE = _SteppedAside()


def skip_global_cache_in_blocks(patches: Patches, module: Any) -> None:
    """Where a ``use_cassette`` block is open, ``module``'s models consult no global cache of
    the program's own: the block's cassette answers every call made there (a user's cache
    would answer a repeated call with the first one's message ID and LangChain's
    ``total_cost``). A ``CassetteCache`` steps aside in a block by itself."""
    original = module.get_llm_cache

    def get_llm_cache() -> Any:
        cache = original()
        if cache is None or isinstance(cache, routing.RoutedCache) or serving_cassette() is None:
            return cache
        return STEPPED_ASIDE

    patches.replace(module, "get_llm_cache", functools.wraps(original)(get_llm_cache))


def _wrap_class(cls: type) -> None:
    if cls is not BaseChatModel:
        PATCHES.wrap_methods(cls, PROVIDER_METHODS, _wrapper)


def _wrapper(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """``original`` wrapped, dressed as it (LangChain inspects the signature on every call
    for ``run_manager``, and compares methods by identity to find overridden ones)."""
    wrapper = functools.wraps(original)(_WRAPPERS[name](original))
    # 3.14: an annotation only TYPE_CHECKING imports cannot be evaluated
    with contextlib.suppress(TypeError, ValueError, NameError):
        wrapper.__signature__ = inspect.signature(original)  # type: ignore[attr-defined]
    return wrapper


def _in_order(batch: Callable[..., Any]) -> Callable[..., Any]:
    def ordered_batch(
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
        return batch(self, inputs, config, **kwargs)

    return ordered_batch


# -- one call ---------------------------------------------------------------------------------


def _begin(
    model: BaseChatModel, messages: Any, args: tuple[Any, ...], kwargs: dict[str, Any], stream: bool
) -> Call | None:
    """The call in the cassette serving ``model`` here, or ``None`` to let it through."""
    if layers.answered_above():
        return None
    route = routing.route(model)
    if route is None:
        if not isinstance(routing.cache_consulted(model), routing.RoutedCache):
            check_live(f"chat model call ({type(model).__name__})")
        return None
    cassette = route.cassette
    llm_string = _llm_string(model, args, kwargs)
    fields = cassette.state("langchain.model_fields", ModelFields)
    request, earlier = model_request(model, messages, llm_string, fields, stream=stream)
    if cassette.options.get(ACROSS_STREAMING):
        request.pop("stream")
        earlier = across_streaming(earlier)
    call = cassette.begin(request, meta=call_meta(), autosave=route.autosave, earlier=earlier)
    run_manager = _run_manager(args, kwargs)
    trace.link_model_call(getattr(run_manager, "run_id", None) or trace.last_model_run(), call.key)
    return call


def _llm_string(model: BaseChatModel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The string LangChain keys its own cache by: committed cassettes' keys are read from it."""
    stop = kwargs.get("stop", args[0] if args else None)
    call_kwargs = {k: v for k, v in kwargs.items() if k not in ("stop", "run_manager")}
    return model._get_llm_string(stop=stop, **call_kwargs)


def _cache_prompt(messages: Any) -> list[str]:
    """The ``prompt`` LangChain looked ``messages`` up by (``_generate_with_cache``)."""
    unnamed = [
        m.model_copy(update={"id": None}) if getattr(m, "id", None) is not None else m
        for m in messages
    ]
    return [dumps(unnamed)]


def _report_failure(
    model: BaseChatModel,
    messages: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    error: BaseException,
) -> None:
    """A call LangChain's cache let through failed live: a ``CassetteCache`` records it."""
    routing.report_failure(
        model, lambda: _cache_prompt(messages), lambda: _llm_string(model, args, kwargs), error
    )


def _run_manager(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The run manager of a provider method's call (after ``messages``: ``stop``, then it)."""
    return kwargs.get("run_manager") or (args[1] if len(args) > 1 else None)


def _result(response: dict[str, Any], call: Call) -> ChatResult:
    if "chunks" in response:
        check_complete(call, 0)
        result = generate_from_stream(iter(_chunks(response, call)))
    else:
        generations = [decode_generation(g) for g in stored_generations(response)]
        result = ChatResult(generations=generations, llm_output=response.get("llm_output"))  # type: ignore[arg-type]
    for index, generation in enumerate(result.generations):
        generation.message.id = call.id + (f"-{index}" if index else "")
    return result


def _chunks(response: dict[str, Any], call: Call) -> list[ChatGenerationChunk]:
    if "chunks" in response:
        chunks = [_as_chunk(decode_generation(c)) for c in response["chunks"]]
    else:
        chunks = [_as_chunk(decode_generation(g)) for g in stored_generations(response)[:1]]
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
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c.get("id"), "index": i}
            for i, c in enumerate(message.tool_calls)
        ]
        message = AIMessageChunk(**data)
    info = generation.generation_info if isinstance(generation, ChatGeneration) else None
    return ChatGenerationChunk(message=message, generation_info=info)  # type: ignore[arg-type]


def _decoder(call: Call, copies: list[ChatGenerationChunk]) -> Callable[[Any], Any]:
    """Turns a stored chunk into the chunk a replay yields (and keeps it for the closing one)."""

    def decode(encoded: Any) -> ChatGenerationChunk:
        copy = _as_chunk(decode_generation(encoded))
        copy.message.id = call.id
        copies.append(copy)
        return copy

    return decode


# -- the wrappers -------------------------------------------------------------------------------


def _wrap_generate(original: Callable[..., Any]) -> Callable[..., Any]:
    def _generate(self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any) -> Any:
        call = _begin(self, messages, args, kwargs, stream=False)
        if call is None:  # LangChain's cache (or nothing) answers it, not a layer underneath
            try:
                with layers.answering():
                    return original(self, messages, *args, **kwargs)
            except BaseException as error:
                _report_failure(self, messages, args, kwargs, error)
                raise
        run_manager = _run_manager(args, kwargs)
        if call.hit:
            with call.turn():  # behind the calls that completed before it when recorded
                response = call.raise_if_error()
                result = decoded(call, _result, response, call)
                tokens.fire(call, response, run_manager)  # those a provider fired inside
                return result
        try:
            with layers.answering(), tokens.capturing(run_manager) as fired:
                live = original(self, messages, *args, **kwargs)
        except BaseException as error:
            call.fail(error)  # a provider error is an answer too: replayed as raised
            raise
        return _result(call.record(tokens.stored(encode_result(live), fired)), call)

    return _generate


def _wrap_agenerate(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _agenerate(self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any) -> Any:
        call = _begin(self, messages, args, kwargs, stream=False)
        if call is None:
            try:
                with layers.answering():
                    return await original(self, messages, *args, **kwargs)
            except BaseException as error:
                _report_failure(self, messages, args, kwargs, error)
                raise
        run_manager = _run_manager(args, kwargs)
        if call.hit:
            async with call.turn():
                response = call.raise_if_error()
                result = decoded(call, _result, response, call)
                await tokens.afire(call, response, run_manager)
                return result
        try:
            with layers.answering(), tokens.capturing(run_manager) as fired:
                live = await original(self, messages, *args, **kwargs)
        except BaseException as error:
            call.fail(error)  # a provider error is an answer too: replayed as raised
            raise
        return _result(call.record(tokens.stored(encode_result(live), fired)), call)

    return _agenerate


def _wrap_stream(original: Callable[..., Any]) -> Callable[..., Any]:
    def _stream(self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        call = _begin(self, messages, args, kwargs, stream=True)
        if call is None:
            routing.refuse_unreplayable_stream(self, "chat")
            yield from original(self, messages, *args, **kwargs)
            return
        if call.hit:
            with call.turn():  # the whole stream after the calls that completed before it
                replayed = decoded(call, _chunks, call.raise_if_error(), call)
                yield from replayed
                check_complete(call, len(replayed))
                yield from _closing_chunk(replayed, call)
            return
        copies: list[ChatGenerationChunk] = []
        live = original(self, messages, *args, **kwargs)
        yield from record_stream(
            call, live, encode_generation, _decoder(call, copies), guard=layers.answering
        )
        yield from _closing_chunk(copies, call)

    return _stream


def _wrap_astream(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _astream(
        self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        call = _begin(self, messages, args, kwargs, stream=True)
        if call is None:
            routing.refuse_unreplayable_stream(self, "chat")
            async for chunk in original(self, messages, *args, **kwargs):
                yield chunk
            return
        if call.hit:
            async with call.turn():
                replayed = decoded(call, _chunks, call.raise_if_error(), call)
                for chunk in replayed:
                    yield chunk
                check_complete(call, len(replayed))
                for chunk in _closing_chunk(replayed, call):
                    yield chunk
            return
        copies: list[ChatGenerationChunk] = []
        live = original(self, messages, *args, **kwargs)
        async for chunk in arecord_stream(
            call, live, encode_generation, _decoder(call, copies), guard=layers.answering
        ):
            yield chunk
        for chunk in _closing_chunk(copies, call):
            yield chunk

    return _astream


_WRAPPERS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "_generate": _wrap_generate,
    "_agenerate": _wrap_agenerate,
    "_stream": _wrap_stream,
    "_astream": _wrap_astream,
}
