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
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.caches import BaseCache
from langchain_core.globals import get_llm_cache
from langchain_core.language_models.chat_models import BaseChatModel, generate_from_stream
from langchain_core.load import dumps
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables.config import get_config_list

from chaincassette import Cassette, CassetteMiss, current_cassette
from chaincassette.canonical import fresh_copy, json_copy
from chaincassette.patching import SharedPatches, all_subclasses

from . import trace
from .labels import current_labels, message_id, next_occurrence, record_order
from .requests import build_request
from .serde import decode_generation, encode_generation, encode_result

PROVIDER_METHODS = ("_generate", "_agenerate", "_stream", "_astream")
#: Cassette option: a recorded non-streamed answer may serve a streamed request and back.
ACROSS_STREAMING = "serve_across_streaming"


@dataclass
class _Call:
    """The chat call LangChain is making in this context (set around ``_generate_with_cache``)."""

    model: BaseChatModel
    served: bool
    run_id: UUID | None
    #: LangChain's ``dumps`` of the messages, handed over by the cache (see ``note_prompt``).
    prompt: str | None = None
    #: LangChain's ``llm_string`` for this call, handed over with the prompt.
    llm_string: str | None = None


_call: ContextVar[_Call | None] = ContextVar("chaincassette_lc_call", default=None)
_inside: ContextVar[bool] = ContextVar("chaincassette_lc_inside", default=False)
_preplanned: ContextVar[_Plan | None] = ContextVar("chaincassette_lc_preplanned", default=None)


# -- which cassette serves a model -------------------------------------------------------------


def cassette_for(model: BaseChatModel) -> tuple[Cassette, bool] | None:
    """(cassette, autosave) serving ``model`` here, or ``None`` to pass through.

    A ``CassetteCache`` given to the model wins, then the active ``use_cassette``, then a
    global ``CassetteCache`` (unless the model says ``cache=False``).
    """
    from .cache import CassetteCache

    own = getattr(model, "cache", None)
    if isinstance(own, CassetteCache) and own.stream_replay and own.cassette is not None:
        return own.cassette, own.autosave
    active = current_cassette()
    if active is not None:
        return active, False
    if own is False:
        return None
    shared: BaseCache | None = get_llm_cache()
    if isinstance(shared, CassetteCache) and shared.stream_replay and shared.cassette is not None:
        return shared.cassette, shared.autosave
    return None


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
    return call is not None and call.served


# -- installing -----------------------------------------------------------------------------------


def _apply(patches: SharedPatches) -> None:
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
    if cls in _PATCHES.wrapped:
        return
    _PATCHES.wrapped.add(cls)
    for name in PROVIDER_METHODS:
        original = cls.__dict__.get(name)
        if original is None or not callable(original):
            continue
        _PATCHES.replace(cls, name, functools.wraps(original)(_WRAPPERS[name](original)))


# -- patches on BaseChatModel ------------------------------------------------------------------


def _patched_generate_with_cache(original: Callable[..., Any]) -> Callable[..., Any]:
    def _generate_with_cache(self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any) -> Any:
        served = _ensure_wrapped(type(self)) and cassette_for(self) is not None
        run_manager = kwargs.get("run_manager") or (args[1] if len(args) > 1 else None)
        token = _call.set(_Call(self, served, getattr(run_manager, "run_id", None)))
        try:
            return original(self, messages, *args, **kwargs)
        finally:
            _call.reset(token)

    return _generate_with_cache


def _patched_agenerate_with_cache(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _agenerate_with_cache(
        self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any
    ) -> Any:
        served = _ensure_wrapped(type(self)) and cassette_for(self) is not None
        run_manager = kwargs.get("run_manager") or (args[1] if len(args) > 1 else None)
        token = _call.set(_Call(self, served, getattr(run_manager, "run_id", None)))
        plan = _preplan(self, messages, args, kwargs) if served else None
        planned = _preplanned.set(plan)
        try:
            return await original(self, messages, *args, **kwargs)
        finally:
            _preplanned.reset(planned)
            _call.reset(token)
            if plan is not None and not plan.taken:
                plan.abandon()

    return _agenerate_with_cache


def _preplan(
    model: BaseChatModel, messages: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> _Plan | None:
    """Look the call up now, on the event loop, before LangChain hops to a worker thread.

    Models without a native ``_agenerate`` run ``_generate`` in an executor, where
    concurrent identical requests would reach the cassette in a random order; taking
    the lookup here keeps occurrence order equal to ``asyncio.gather`` order.
    """
    if _inside.get():
        return None
    call_kwargs = {k: v for k, v in kwargs.items() if k not in ("stop", "run_manager")}
    run_manager = kwargs.get("run_manager") or (args[1] if len(args) > 1 else None)
    stream = model._should_use_protocol_streaming(
        async_api=True, run_manager=run_manager, **call_kwargs
    ) or model._should_stream(async_api=True, run_manager=run_manager, **call_kwargs)
    return _plan(model, messages, args, kwargs, stream=stream)


def _patched_batch(original: Callable[..., Any]) -> Callable[..., Any]:
    def batch(
        self: BaseChatModel, inputs: list[Any], config: Any = None, **kwargs: Any
    ) -> list[Any]:
        """Run a batch one input at a time, in order, while a cassette serves the model.

        ``batch`` runs inputs in a thread pool, so identical inputs would reach the cassette
        in scheduling order and, on replay, get one another's recordings. In order, each
        position gets its own recording back (a replay takes milliseconds anyway).
        """
        if len(inputs) > 1 and cassette_for(self) is not None:
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
class _Plan:
    cassette: Cassette
    autosave: bool
    found: Any
    occurrence: int
    meta: dict[str, Any]
    ticket: int | None = None
    stream: bool = False
    taken: bool = False

    @property
    def id(self) -> str:
        return message_id(self.found.key, self.occurrence)

    def record(self, response: dict[str, Any]) -> Any:
        """Record ``response`` (in lookup order); returns the copy a replay would give."""
        stored = json_copy(response, what="the response")
        cassette, found, meta, autosave = self.cassette, self.found, self.meta, self.autosave

        def action() -> None:
            cassette.record(found, stored, meta=meta)
            if autosave and current_cassette() is not cassette:
                cassette.save()

        self._finish(action)
        return fresh_copy(stored)

    def abandon(self) -> None:
        """The live call failed or was not consumed to the end: record nothing."""
        self._finish(None)

    def _finish(self, action: Any) -> None:
        if self.ticket is not None:
            ticket, self.ticket = self.ticket, None
            record_order.done(self.cassette, self.found.key, ticket, action)


def _plan(
    model: BaseChatModel, messages: Any, args: tuple[Any, ...], kwargs: dict[str, Any], stream: bool
) -> _Plan | None:
    if _inside.get():
        return None
    planned = _preplanned.get()
    if planned is not None and planned.stream == stream and not planned.taken:
        planned.taken = True
        return planned
    target = cassette_for(model)
    if target is None:
        return None
    cassette, autosave = target
    call_kwargs = {k: v for k, v in kwargs.items() if k not in ("stop", "run_manager")}
    stop = kwargs.get("stop", args[0] if args else None)
    call = _call.get()
    handed_over = call is not None and call.model is model and call.prompt is not None
    prompt = call.prompt if handed_over and call is not None else None
    llm_string = call.llm_string if handed_over and call is not None else None
    if call is not None:
        call.prompt = call.llm_string = None
    if prompt is None:
        normalized = [
            m.model_copy(update={"id": None}) if getattr(m, "id", None) is not None else m
            for m in messages
        ]
        prompt = dumps(normalized)
    if llm_string is None:
        llm_string = model._get_llm_string(stop=stop, **call_kwargs)
    request = build_request(prompt, llm_string, stream=stream)
    if cassette.options.get(ACROSS_STREAMING):
        request.pop("stream", None)
    found = cassette.lookup(request)
    occurrence = next_occurrence(cassette, found.key)
    labels = current_labels()
    trace.link_model_call(_current_run_id(), found.key, labels)
    labels.pop("step", None)
    ticket = None if found.hit else record_order.ticket(cassette, found.key)
    return _Plan(
        cassette, autosave, found, occurrence, {"framework": "langchain", **labels}, ticket, stream
    )


def _current_run_id() -> UUID | None:
    call = _call.get()
    if call is not None and call.run_id is not None:
        return call.run_id
    return trace.last_model_run()


def _result(response: dict[str, Any], plan: _Plan) -> ChatResult:
    if "chunks" in response:
        _check_complete(plan, 0)
        chunks = _chunks(response, plan)
        result = generate_from_stream(iter(chunks))
    else:
        generations = [decode_generation(g) for g in response.get("generations", [])]
        result = ChatResult(generations=generations, llm_output=response.get("llm_output"))  # type: ignore[arg-type]
    for index, generation in enumerate(result.generations):
        generation.message.id = plan.id + (f"-{index}" if index else "")
    return result


def _check_complete(plan: _Plan, served: int) -> None:
    """Raise ``CassetteMiss`` when a caller wants more than a stream recorded as stopped early.

    A ``.stream()`` the consumer left early is recorded with ``complete: false``: the same
    consumer stopping as early replays, one reading on would need chunks never seen.
    """
    response = plan.found.response
    if response.get("complete", True) is not False:
        return
    cassette, found = plan.cassette, plan.found
    count = len(response.get("chunks", []))
    wanted = "more chunks" if served else "the whole answer"
    error = CassetteMiss(
        f"the recording stopped after {count} chunks in {cassette.path} (mode "
        f"{cassette.mode.value!r}): the recorded consumer stopped reading this stream early, "
        f"and this run asks for {wanted}. Re-record it (CHAINCASSETTE_MODE=record) with "
        "the program that reads further.",
        path=cassette.path,
        mode=cassette.mode.value,
        request=found.request,
        key=found.key,
    )
    raise cassette.report_miss(error)


def _chunks(response: dict[str, Any], plan: _Plan) -> list[ChatGenerationChunk]:
    if "chunks" in response:
        chunks = [_as_chunk(decode_generation(c)) for c in response["chunks"]]
    else:
        chunks = [_as_chunk(decode_generation(g)) for g in response.get("generations", [])[:1]]
    for chunk in chunks:
        chunk.message.id = plan.id
    return chunks


def _closing_chunk(chunks: list[ChatGenerationChunk], plan: _Plan) -> list[ChatGenerationChunk]:
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
    closing = AIMessageChunk(content=empty, chunk_position="last", id=plan.id)
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
    import json

    return json.dumps(args)


def _copy_chunk(
    chunk: ChatGenerationChunk, plan: _Plan
) -> tuple[dict[str, Any], ChatGenerationChunk]:
    encoded = encode_generation(chunk)
    copy = _as_chunk(decode_generation(encoded))
    copy.message.id = plan.id
    return encoded, copy


def _wrap_generate(original: Callable[..., Any]) -> Callable[..., Any]:
    def _generate(self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any) -> Any:
        plan = _plan(self, messages, args, kwargs, stream=False)
        if plan is None:
            return original(self, messages, *args, **kwargs)
        if plan.found.hit:
            return _result(plan.found.response, plan)
        token = _inside.set(True)
        try:
            live = original(self, messages, *args, **kwargs)
        except BaseException:
            plan.abandon()
            raise
        finally:
            _inside.reset(token)
        return _result(plan.record(encode_result(live)), plan)

    return _generate


def _wrap_agenerate(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _agenerate(self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any) -> Any:
        plan = _plan(self, messages, args, kwargs, stream=False)
        if plan is None:
            return await original(self, messages, *args, **kwargs)
        if plan.found.hit:
            return _result(plan.found.response, plan)
        token = _inside.set(True)
        try:
            live = await original(self, messages, *args, **kwargs)
        except BaseException:
            plan.abandon()
            raise
        finally:
            _inside.reset(token)
        return _result(plan.record(encode_result(live)), plan)

    return _agenerate


def _wrap_stream(original: Callable[..., Any]) -> Callable[..., Any]:
    def _stream(self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        plan = _plan(self, messages, args, kwargs, stream=True)
        if plan is None:
            _refuse_unreplayable_stream(self)
            yield from _guarded(original(self, messages, *args, **kwargs))
            return
        if plan.found.hit:
            replayed = _chunks(plan.found.response, plan)
            yield from replayed
            _check_complete(plan, len(replayed))
            yield from _closing_chunk(replayed, plan)
            return
        encoded: list[dict[str, Any]] = []
        copies: list[ChatGenerationChunk] = []
        try:
            for chunk in _guarded(original(self, messages, *args, **kwargs)):
                stored, copy = _copy_chunk(chunk, plan)
                encoded.append(stored)
                copies.append(copy)
                yield copy
            plan.record({"chunks": encoded})
        except GeneratorExit:  # the consumer stopped early: keep the prefix it saw
            plan.record({"chunks": encoded, "complete": False})
            raise
        finally:
            plan.abandon()
        yield from _closing_chunk(copies, plan)

    return _stream


def _wrap_astream(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _astream(
        self: BaseChatModel, messages: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        plan = _plan(self, messages, args, kwargs, stream=True)
        if plan is None:
            _refuse_unreplayable_stream(self)
            async for chunk in _aguarded(original(self, messages, *args, **kwargs)):
                yield chunk
            return
        if plan.found.hit:
            replayed = _chunks(plan.found.response, plan)
            for chunk in replayed:
                yield chunk
            _check_complete(plan, len(replayed))
            for chunk in _closing_chunk(replayed, plan):
                yield chunk
            return
        encoded: list[dict[str, Any]] = []
        copies: list[ChatGenerationChunk] = []
        try:
            async for chunk in _aguarded(original(self, messages, *args, **kwargs)):
                stored, copy = _copy_chunk(chunk, plan)
                encoded.append(stored)
                copies.append(copy)
                yield copy
            plan.record({"chunks": encoded})
        except GeneratorExit:  # ``aclose()``: the consumer stopped early, keep its prefix
            plan.record({"chunks": encoded, "complete": False})
            raise
        finally:
            plan.abandon()
        for chunk in _closing_chunk(copies, plan):
            yield chunk

    return _astream


def _refuse_unreplayable_stream(model: BaseChatModel) -> None:
    """Raise ``CassetteMiss`` for a stream a replaying ``CassetteCache(stream_replay=False)``
    would otherwise let go live: LangChain never consults a cache for streams."""
    from .cache import CassetteCache

    if _inside.get() or current_cassette() is not None:
        return
    own = getattr(model, "cache", None)
    cache = own if isinstance(own, BaseCache) else None if own is False else get_llm_cache()
    if not isinstance(cache, CassetteCache) or cache.stream_replay:
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


def _guarded(chunks: Iterator[Any]) -> Iterator[Any]:
    """Drive a provider stream with this layer switched off (for ``super()._stream`` chains)."""
    while True:
        token = _inside.set(True)
        try:
            chunk = next(chunks)
        except StopIteration:
            return
        finally:
            _inside.reset(token)
        yield chunk


async def _aguarded(chunks: AsyncIterator[Any]) -> AsyncIterator[Any]:
    while True:
        token = _inside.set(True)
        try:
            chunk = await chunks.__anext__()
        except StopAsyncIteration:
            return
        finally:
            _inside.reset(token)
        yield chunk


_WRAPPERS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "_generate": _wrap_generate,
    "_agenerate": _wrap_agenerate,
    "_stream": _wrap_stream,
    "_astream": _wrap_astream,
}
