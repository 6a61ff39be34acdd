"""Completion-LLM streams (``BaseLLM._stream``/``_astream``) replayed chunk for chunk.

``BaseLLM.stream`` calls the provider's ``_stream`` directly, never a cache, so while a
cassette is active the ``_stream``/``_astream`` a ``BaseLLM`` subclass defines itself are
wrapped (like chat models in ``boundary``): a recorded stream yields its chunks again
(``GenerationChunk``s, firing ``on_llm_new_token`` for each as providers do), a miss
records each chunk as it goes, with the one stream rule of ``chaincassette.streams``
(incomplete prefixes, errors before the first chunk). The key is the completion key of
``completions`` plus ``"stream": true``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

from langchain_core.language_models.llms import BaseLLM

from chaincassette import Call
from chaincassette.live_guard import check_live
from chaincassette.patching import PassThrough, SharedPatches, all_subclasses
from chaincassette.streams import arecord_stream, areplay_stream, record_stream, replay_stream

from . import routing
from .labels import call_meta
from .requests import build_request
from .serde import decode_generation, encode_generation

METHODS = ("_stream", "_astream")
_inside = PassThrough("chaincassette_lc_completion_stream")
passing_through = _inside.raised


def _apply(patches: SharedPatches) -> None:
    for name in ("stream", "astream"):
        original = BaseLLM.__dict__[name]
        patches.replace(BaseLLM, name, functools.wraps(original)(_lazily_wrapping(original)))
    for cls in all_subclasses(BaseLLM):
        _wrap_class(cls)


_PATCHES = SharedPatches(_apply)
install = _PATCHES.install
uninstall = _PATCHES.uninstall
installed = _PATCHES.installed


def _lazily_wrapping(original: Callable[..., Any]) -> Callable[..., Any]:
    """``stream``/``astream`` wrap a class defined after the block started, then run."""

    def stream(self: BaseLLM, *args: Any, **kwargs: Any) -> Any:
        with _PATCHES.lock:
            if _PATCHES.users:
                for klass in type(self).__mro__:
                    if isinstance(klass, type) and issubclass(klass, BaseLLM):
                        _wrap_class(klass)
        return original(self, *args, **kwargs)

    return stream


def _wrap_class(cls: type) -> None:
    if cls is not BaseLLM:
        _PATCHES.wrap_methods(cls, METHODS, lambda n, f: functools.wraps(f)(_WRAPPERS[n](f)))


def _begin(model: BaseLLM, prompt: str, stop: Any) -> Call | None:
    if _inside.active:
        return None
    target = routing.route(model)
    if target is None:
        check_live(f"completion stream ({type(model).__name__})")
        return None
    params = model._dict_for_compat()  # the key completions and the cache use, plus stream
    params["stop"] = stop
    request = build_request(prompt, str(sorted(params.items())))
    request["stream"] = True
    return target.cassette.begin(request, meta=call_meta(), autosave=target.autosave)


def _wrap_stream(original: Callable[..., Any]) -> Callable[..., Any]:
    def _stream(self: BaseLLM, prompt: str, stop: Any = None, *args: Any, **kwargs: Any) -> Any:
        call = _begin(self, prompt, stop)
        if call is None:
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
            call, live, encode_generation, decode_generation, guard=passing_through
        )

    return _stream


def _wrap_astream(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _astream(
        self: BaseLLM, prompt: str, stop: Any = None, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        call = _begin(self, prompt, stop)
        if call is None:
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
            call, live, encode_generation, decode_generation, guard=passing_through
        ):
            yield chunk

    return _astream


_WRAPPERS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "_stream": _wrap_stream,
    "_astream": _wrap_astream,
}
