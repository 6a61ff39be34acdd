"""Record and replay every LlamaIndex LLM a program builds itself, at class level.

An unmodified program builds its own LLMs (``FunctionAgent(llm=OpenAI(...))``, ``Settings.llm``
set inside the block), so while a cassette is active the eight endpoints of every provider
``LLM`` class are wrapped: a call is keyed as ``CassetteLLM`` keys it (recordings of one
replay through the other), a hit is served by a helper decorated like the provider's method
(same span, same events), a miss runs the provider's method and records its answer.

Only methods a class defines itself are wrapped, so ``super()`` chains and CustomLLM's
derived endpoints record once, at the outermost call. LlamaIndex's own classes and ours
are left alone. A tool call's neutral request travels from the patched
``_prepare_chat_with_tools`` to the chat call in the kwargs it prepares.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.dispatcher import DISPATCHER_SPAN_DECORATED_ATTR
from llama_index.core.llms.function_calling import FunctionCallingLLM

from chaincassette import Call, Cassette
from chaincassette.patching import Patches, watch_subclasses

from . import codec, playback, trace
from .description import DESCRIBED, describe_llm
from .playback import ENDPOINTS, endpoint_kind
from .request import (
    TOOL_REQUEST_KWARG,
    endpoint_request,
    key_facts,
    neutral_messages,
    tool_request,
)
from .routing import intercepted_cassette

PREPARE = "_prepare_chat_with_tools"
INIT_SUBCLASS = "__pydantic_init_subclass__"
#: Modules whose LLM classes are never wrapped: LlamaIndex's bases, mocks and wrappers
#: (they reach a provider, if at all, through an LLM that is wrapped) and our own.
SKIPPED_MODULES = ("llama_index.core", "chaincassette")
#: Marks the endpoint wrappers: a tool request is prepared only for a chat call they serve.
WRAPPED = "chaincassette_endpoint"
CHAT_ENDPOINTS = ("chat", "achat", "stream_chat", "astream_chat")


# -- installing ---------------------------------------------------------------------------------


PATCHES = Patches(lambda p: watch_subclasses(p, BaseLLM, _wrap_class, hook=INIT_SUBCLASS))
install = PATCHES.install


def is_wrapped(cls: type) -> bool:
    return cls in PATCHES.wrapped


def eligible(cls: type) -> bool:
    """Whether ``cls``'s own endpoints are wrapped: provider and user classes only."""
    module = getattr(cls, "__module__", "") or ""
    if any(module == m or module.startswith(m + ".") for m in SKIPPED_MODULES):
        return False
    return not getattr(cls, "chaincassette_wrapper", False)


def _wrap_class(cls: type) -> None:
    if not eligible(cls) or not PATCHES.wrap_methods(
        cls, ENDPOINTS, lambda n, f: _endpoint(cls, n, f)
    ):
        return
    prepare = cls.__dict__.get(PREPARE)
    if issubclass(cls, FunctionCallingLLM) and callable(prepare):
        PATCHES.replace(cls, PREPARE, functools.wraps(prepare)(_prepare(prepare)))


# -- which calls are served --------------------------------------------------------------------


def _describer(cassette: Cassette, llm: Any) -> Any:
    """The LLM's description, stored once per cassette and class (``llm=None`` replays)."""

    def describe() -> dict[str, Any] | None:
        name = codec.qualified_name(type(llm))
        seen: set[str] = cassette.state(DESCRIBED, set)
        with PATCHES.lock:
            if name in seen:
                return None
            seen.add(name)
        return describe_llm(llm)

    return describe


def _begin(llm: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call | None:
    """Look an endpoint call up in the active cassette; ``None`` lets it pass through. Takes
    out of ``kwargs`` the neutral request of the tool call that prepared them, if any."""
    tools = kwargs.pop(TOOL_REQUEST_KWARG, None)
    cassette = intercepted_cassette(lambda: f"LLM call ({type(llm).__name__}.{name})")
    if cassette is None:
        return None
    request = endpoint_request(lambda: key_facts(llm), name, args, kwargs, tools)
    if request is None:  # the provider's own endpoint raises its error
        return None
    return cassette.begin(request, meta=playback.call_meta(name))


# -- the wrappers ------------------------------------------------------------------------------


def _replay_helper(cls: type, name: str, original: Any) -> Callable[..., Any]:
    """A replay helper for ``cls.name``: spanned like the provider's method when it is."""
    helper = playback.replay_helpers()[name]
    if hasattr(original, DISPATCHER_SPAN_DECORATED_ATTR):
        helper = get_dispatcher(cls.__module__).span(helper)
    return helper


def _bind(function: Any, llm: Any) -> Any:
    """``function`` bound to ``llm`` as attribute access would (spans see the instance)."""
    return function.__get__(llm, type(llm))


def _endpoint(cls: type, name: str, original: Any) -> Callable[..., Any]:
    """The wrapper installed as ``cls.name``; the call's arguments reach the provider as given
    (less the tool request a patched ``_prepare_chat_with_tools`` added for this wrapper)."""
    replay = _replay_helper(cls, name, original)
    serve = playback.aserve if name.startswith("a") else playback.serve

    def served(self: Any, call: Call, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return serve(
            call,
            name,
            lambda: _bind(replay, self)(*args, **kwargs),
            lambda: _bind(original, self)(*args, **kwargs),
            _describer(call.cassette, self),
        )

    async def aendpoint(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = _begin(self, name, args, kwargs)
        if call is None:
            return await _bind(original, self)(*args, **kwargs)
        with trace.expecting_llm_call(call.key, endpoint_kind(name)):
            return await served(self, call, args, kwargs)

    def endpoint(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = _begin(self, name, args, kwargs)
        if call is None:
            return _bind(original, self)(*args, **kwargs)
        with trace.expecting_llm_call(call.key, endpoint_kind(name)):
            return served(self, call, args, kwargs)

    wrapper = aendpoint if name.startswith("a") else endpoint
    setattr(wrapper, WRAPPED, True)
    return functools.wraps(original)(wrapper)


def _prepare(original: Any) -> Callable[..., Any]:
    """Add the neutral tool request to the chat kwargs this prepares (same keys as
    ``CassetteLLM``, whatever tool format the provider speaks), when the chat endpoints
    that will receive them are this module's wrappers (they take it out again)."""
    names = (
        "tools",
        "user_msg",
        "chat_history",
        "verbose",
        "allow_parallel_tool_calls",
        "tool_required",
    )

    def _prepare_chat_with_tools(self: Any, *args: Any, **kwargs: Any) -> Any:
        wrapped = all(getattr(getattr(type(self), n, None), WRAPPED, False) for n in CHAT_ENDPOINTS)
        if intercepted_cassette() is None or not wrapped:
            return _bind(original, self)(*args, **kwargs)
        values = {**dict(zip(names, args, strict=False)), **kwargs}
        extra = {k: v for k, v in values.items() if k not in names}
        neutral = tool_request(  # before the provider's own, which may extend chat_history
            values.get("tools") or [],
            neutral_messages(values.get("user_msg"), values.get("chat_history")),
            bool(values.get("allow_parallel_tool_calls", False)),
            bool(values.get("tool_required", False)),
            extra,
        )
        prepared = _bind(original, self)(*args, **kwargs)
        if isinstance(prepared, dict) and "messages" in prepared:
            prepared[TOOL_REQUEST_KWARG] = neutral
        return prepared

    return _prepare_chat_with_tools
