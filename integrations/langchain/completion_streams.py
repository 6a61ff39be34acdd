"""Completion-LLM streams (``BaseLLM._stream``/``_astream``) replayed chunk for chunk.

``BaseLLM.stream`` calls the provider's ``_stream`` directly, never a cache, so the
``_stream``/``_astream`` a ``BaseLLM`` subclass defines itself are wrapped (like chat models
in ``boundary``) under the stream rule of ``chaincassette.streams``; a replay fires
``on_llm_new_token`` for each chunk as providers do. The key is the completion key of
``completions`` plus ``"stream": true``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

from langchain_core.language_models.llms import BaseLLM

from chaincassette import Call, layers
from chaincassette.live_guard import check_live
from chaincassette.patching import Patches, watch_subclasses
from chaincassette.streams import arecord_stream, areplay_stream, record_stream, replay_stream

from . import routing
from .completions import llm_string
from .labels import call_meta
from .requests import ModelFields, build_request
from .serde import decode_generation, encode_generation

METHODS = ("_stream", "_astream")
INIT_SUBCLASS = "__pydantic_init_subclass__"


def _apply(patches: Patches) -> None:
    watch_subclasses(patches, BaseLLM, _wrap_class, hook=INIT_SUBCLASS)


PATCHES = Patches(_apply)
install = PATCHES.install


def _wrap_class(cls: type) -> None:
    if cls is not BaseLLM:
        PATCHES.wrap_methods(cls, METHODS, lambda n, f: functools.wraps(f)(_WRAPPERS[n](f)))


def _begin(model: BaseLLM, prompt: str, stop: Any) -> Call | None:
    if layers.answered_above():
        return None
    route = routing.route(model)
    if route is None:
        check_live(f"completion stream ({type(model).__name__})")
        return None
    cassette = route.cassette
    fields = cassette.state("langchain.model_fields", ModelFields)
    request = build_request(prompt, llm_string(model, stop), fields)  # the completion key
    request["stream"] = True
    return cassette.begin(request, meta=call_meta(), autosave=route.autosave)


def _wrap_stream(original: Callable[..., Any]) -> Callable[..., Any]:
    def _stream(self: BaseLLM, prompt: str, stop: Any = None, *args: Any, **kwargs: Any) -> Any:
        call = _begin(self, prompt, stop)
        if call is None:
            routing.refuse_unreplayable_stream(self, "completion")
            yield from original(self, prompt, stop, *args, **kwargs)
            return
        if call.hit:
            manager = kwargs.get("run_manager")
            for chunk in replay_stream(call, decode_generation):
                if manager is not None:  # what a provider's _stream does for each chunk
                    manager.on_llm_new_token(chunk.text, chunk=chunk)
                yield chunk
            return
        live = original(self, prompt, stop, *args, **kwargs)
        yield from record_stream(
            call, live, encode_generation, decode_generation, guard=layers.answering
        )

    return _stream


def _wrap_astream(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _astream(
        self: BaseLLM, prompt: str, stop: Any = None, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        call = _begin(self, prompt, stop)
        if call is None:
            routing.refuse_unreplayable_stream(self, "completion")
            async for chunk in original(self, prompt, stop, *args, **kwargs):
                yield chunk
            return
        if call.hit:
            manager = kwargs.get("run_manager")
            async for chunk in areplay_stream(call, decode_generation):
                if manager is not None:
                    await manager.on_llm_new_token(chunk.text, chunk=chunk)
                yield chunk
            return
        live = original(self, prompt, stop, *args, **kwargs)
        async for chunk in arecord_stream(
            call, live, encode_generation, decode_generation, guard=layers.answering
        ):
            yield chunk

    return _astream


_WRAPPERS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "_stream": _wrap_stream,
    "_astream": _wrap_astream,
}
