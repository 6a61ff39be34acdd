"""``CassetteLLM``: a drop-in LlamaIndex LLM that records every call once and replays it.

Only the eight transport endpoints (``chat``, ``complete``, their ``stream_*`` and async
forms) are intercepted: everything else in ``LLM``/``FunctionCallingLLM`` (tool calling,
``predict``, structured outputs, agents) is built on them, so capture is complete.

Events and callbacks: the public endpoints here are not decorated. When recording, the
wrapped LLM's own (decorated) endpoint runs and fires its events; when replaying, a
private helper decorated with ``llm_chat_callback``/``llm_completion_callback`` fires the
same events around the recorded answer. So each call fires exactly one set of events,
the same in both modes.
"""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Sequence
from os import PathLike
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
    ToolCallBlock,
)
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import LLM, ToolSelection
from llama_index.core.llms.utils import parse_partial_json
from pydantic import Field, PrivateAttr, SerializeAsAny

from chaincassette import Cassette, CassetteMiss, Lookup, current_cassette

from . import codec, playback, trace
from .playback import FRAMEWORK, passing_through
from .request import (
    chat_request,
    completion_request,
    neutral_messages,
    sampling_params,
    tool_request,
    tool_schema,
)

#: Added by ``_prepare_chat_with_tools`` to the chat kwargs, removed before anything sees
#: them: the provider-neutral description of a tool call, so that keys do not depend on the
#: provider's tool format (and ``llm=None`` replays produce the same keys).
TOOL_REQUEST_KWARG = "_chaincassette_tool_request"
#: Fields of an LLM that shape prompts; the wrapper mirrors them so ``predict`` & co. agree.
MIRRORED_FIELDS = (
    "system_prompt",
    "messages_to_prompt",
    "completion_to_prompt",
    "output_parser",
    "pydantic_program_mode",
    "query_wrapper_prompt",
    "callback_manager",
)

#: Endpoints ``CustomLLM`` derives from ``complete``/``stream_complete``.
CUSTOM_DERIVED = ("chat", "stream_chat", "achat", "astream_chat", "acomplete", "astream_complete")

_HELPERS = playback.replay_helpers(lambda llm: llm.active_cassette())


def _resolve_cassette(
    cassette: Cassette | str | PathLike[str], mode: Any, options: dict[str, Any]
) -> Cassette:
    if isinstance(cassette, Cassette):
        if mode is not None or options:
            raise TypeError(
                "pass mode and options to Cassette(...) or a path to CassetteLLM, not both"
            )
        return cassette
    return Cassette(cassette, mode=mode, **options)


@functools.cache
def _passing_cassette() -> Cassette:
    """A cassette that records nothing: calls of a routed wrapper outside every block."""
    return Cassette(os.devnull, mode="off")


def recorded_llm(cassette: Cassette) -> dict[str, Any] | None:
    """The description of the wrapped LLM stored with the first LlamaIndex recording."""
    for interaction in cassette.interactions:
        info = interaction.meta.get("llm")
        if interaction.meta.get("framework") == FRAMEWORK and isinstance(info, dict):
            return info
    return None


def flavour_of(llm: LLM) -> str:
    """Which wrapper class fits ``llm``: ``function_calling``, ``custom`` or ``plain``.

    ``custom``: a ``CustomLLM`` that keeps CustomLLM's own chat/async endpoints, which call
    ``complete`` and fire their own events around it; the wrapper then intercepts only the
    completion endpoints and runs the same derivations, so events match in both modes.
    """
    if isinstance(llm, FunctionCallingLLM):
        return "function_calling"
    if isinstance(llm, CustomLLM):
        owners = {
            name: next(c for c in type(llm).__mro__ if name in c.__dict__)
            for name in CUSTOM_DERIVED
        }
        if all(owner is CustomLLM for owner in owners.values()):
            return "custom"
    return "plain"


def describe_llm(llm: LLM) -> dict[str, Any]:
    """What a recording stores about the LLM that made it, so that ``llm=None`` can replay."""
    return {
        "class": codec.qualified_name(type(llm)),
        "flavour": flavour_of(llm),
        "metadata": llm.metadata.model_dump(mode="json"),
        "payload": playback.json_safe(llm.to_payload()),
        "params": sampling_params(llm),
    }


class CassetteLLM(LLM):
    """Wrap any LlamaIndex ``LLM`` so that its calls are recorded in, and replayed from, a cassette.

    ``CassetteLLM(OpenAI(model="gpt-4o-mini"), cassette="tests/cassettes/agent.yaml")``.
    When the wrapped LLM is a ``FunctionCallingLLM`` the instance is a
    ``CassetteFunctionCallingLLM`` (LlamaIndex branches on ``isinstance``). With
    ``llm=None`` the cassette alone answers: metadata, payload and sampling parameters
    come from the recording (for providers whose constructor does network I/O).
    ``replay_tools=True`` also records ``FunctionTool`` results and replays them without
    running the tools. A cassette given as a path is owned by the wrapper and saved after
    each new recording; a ``Cassette`` object is saved by whoever owns it (``use_cassette``).
    """

    llm: SerializeAsAny[LLM] | None = Field(default=None, description="The wrapped LLM.")
    cassette: Any = Field(default=None, exclude=True, description="The chaincassette Cassette.")

    _recorded: dict[str, Any] | None = PrivateAttr(default=None)
    _described: Any = PrivateAttr(default_factory=weakref.WeakSet)
    _owns_cassette: bool = PrivateAttr(default=False)
    _replay_tools: bool = PrivateAttr(default=False)
    _routed: bool = PrivateAttr(default=False)

    def __new__(cls, llm: LLM | None = None, *args: Any, **kwargs: Any) -> CassetteLLM:
        target: type[CassetteLLM] = cls
        if cls is CassetteLLM:
            if llm is not None:
                flavour = flavour_of(llm)
            else:
                cassette = kwargs.get("cassette")
                info = None
                if cassette is not None:
                    options = {
                        k: v for k, v in kwargs.items() if k not in ("cassette", "replay_tools")
                    }
                    info = recorded_llm(
                        _resolve_cassette(cassette, options.pop("mode", None), options)
                    )
                flavour = str((info or {}).get("flavour") or "plain")
            if flavour == "function_calling":
                target = CassetteFunctionCallingLLM
            elif flavour == "custom":
                target = CassetteCustomLLM
        return super().__new__(target)

    def __init__(
        self,
        llm: LLM | None = None,
        *,
        cassette: Cassette | str | PathLike[str],
        mode: Any = None,
        replay_tools: bool = False,
        **cassette_options: Any,
    ) -> None:
        resolved = _resolve_cassette(cassette, mode, cassette_options)
        recorded = None
        if llm is None:
            recorded = recorded_llm(resolved)
            if recorded is None:
                raise ValueError(
                    f"CassetteLLM(llm=None) replays from the cassette alone, but {resolved.path} "
                    "holds no LlamaIndex recording (record it once with the real LLM)"
                )
        mirrored = {name: getattr(llm, name) for name in MIRRORED_FIELDS if llm is not None}
        mirrored = {k: v for k, v in mirrored.items() if v is not None}
        super().__init__(llm=llm, cassette=resolved, **mirrored)  # type: ignore[call-arg]
        self._recorded = recorded
        self._owns_cassette = not isinstance(cassette, Cassette)
        self._replay_tools = replay_tools
        if replay_tools:
            from .tools import enable_tool_replay

            enable_tool_replay(resolved)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "callback_manager" and getattr(self, "llm", None) is not None:
            self.llm.callback_manager = value  # type: ignore[union-attr]

    @classmethod
    def class_name(cls) -> str:
        return "CassetteLLM"

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> CassetteLLM:
        """Copies share the cassette: one file, one record of what was played."""
        memo = {} if memo is None else memo
        memo[id(self.cassette)] = self.cassette
        return super().__deepcopy__(memo)

    # -- what the wrapped LLM is --------------------------------------------------------

    @property
    def metadata(self) -> LLMMetadata:
        if self.llm is not None:
            return self.llm.metadata
        assert self._recorded is not None
        return LLMMetadata.model_validate(self._recorded["metadata"])

    def to_payload(self) -> dict[str, Any]:
        """The wrapped LLM's payload, so events look exactly like an unwrapped run."""
        if self.llm is not None:
            return self.llm.to_payload()
        assert self._recorded is not None
        return dict(self._recorded.get("payload") or {})

    def _params(self) -> dict[str, Any]:
        if self.llm is not None:
            return sampling_params(self.llm)
        assert self._recorded is not None
        return dict(self._recorded.get("params") or {})

    def _describe(self, cassette: Cassette) -> dict[str, Any] | None:
        """Stored with the wrapper's first recording in a cassette so ``llm=None`` can replay."""
        if self.llm is None or cassette in self._described:
            return None
        self._described.add(cassette)
        return describe_llm(self.llm)

    def active_cassette(self) -> Cassette:
        """The cassette of this call: ``cassette``, or for the wrapper ``use_cassette`` puts
        around ``Settings.llm`` the current one (blocks may overlap; none: pass through)."""
        if not self._routed:
            return self.cassette
        current = current_cassette()
        return current if current is not None else _passing_cassette()

    def _live(self, request: dict[str, Any], key: str) -> LLM:
        if self.llm is None:
            cassette = self.active_cassette()
            raise CassetteMiss(
                f"CassetteLLM(llm=None) can only replay, and {cassette.path} has no recording "
                f"for this request (key {key[:12]}); wrap the real LLM to record it",
                path=cassette.path,
                mode=cassette.mode.value,
                request=request,
                key=key,
            )
        return self.llm

    # -- requests -------------------------------------------------------------------------

    def _chat_request(
        self, messages: Sequence[ChatMessage], kwargs: dict[str, Any], stream: bool
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the canonical request, the kwargs for the real call without our marker)."""
        kwargs = dict(kwargs)
        tools = kwargs.pop(TOOL_REQUEST_KWARG, None)
        request = chat_request(
            self.metadata.model_name, self._params(), messages, kwargs, stream, tools
        )
        return request, kwargs

    def _completion_request(
        self, prompt: str, formatted: bool, kwargs: dict[str, Any], stream: bool
    ) -> dict[str, Any]:
        return completion_request(
            self.metadata.model_name, self._params(), prompt, formatted, kwargs, stream
        )

    def _lookup(self, request: dict[str, Any], endpoint: str) -> Lookup:
        found = self.active_cassette().lookup(request)
        trace.note_llm_call(found.key, endpoint)
        return found

    def _record(
        self,
        found: Lookup,
        endpoint: str,
        response: dict[str, Any],
        cassette: Cassette | None = None,
    ) -> Any:
        if cassette is None:
            cassette = self.active_cassette()
        info = self._describe(cassette) if found.record else None
        stored = playback.record(cassette, found, endpoint, response, info)
        if self._owns_cassette:  # no use_cassette block will save it: recordings cost money
            cassette.save()
        return stored

    def _store(self, found: Lookup, endpoint: str) -> Any:
        cassette = self.active_cassette()  # the call's, not the one current when it ends
        return lambda response: self._record(found, endpoint, response, cassette)

    # -- chat --------------------------------------------------------------------------------

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        request, kwargs = self._chat_request(messages, kwargs, stream=False)
        found = self._lookup(request, "chat")
        if found.hit:
            with playback.pending(found.response):
                return self._replay_chat(messages, **kwargs)
        live_llm = self._live(request, found.key)
        with passing_through():
            response = live_llm.chat(messages, **kwargs)
        stored = self._record(found, "chat", {"response": codec.encode_chat(response)})
        return codec.decode_chat(stored["response"])

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        request, kwargs = self._chat_request(messages, kwargs, stream=False)
        found = self._lookup(request, "chat")
        if found.hit:
            with playback.pending(found.response):
                return await self._areplay_chat(messages, **kwargs)
        live_llm = self._live(request, found.key)
        with passing_through():
            response = await live_llm.achat(messages, **kwargs)
        stored = self._record(found, "chat", {"response": codec.encode_chat(response)})
        return codec.decode_chat(stored["response"])

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        request, kwargs = self._chat_request(messages, kwargs, stream=True)
        found = self._lookup(request, "stream_chat")
        if found.hit:
            with playback.pending(found.response):
                return self._replay_stream_chat(messages, **kwargs)
        live_llm = self._live(request, found.key)
        with passing_through():
            live = live_llm.stream_chat(messages, **kwargs)
        return playback.record_stream(
            live,
            codec.encode_chat,
            codec.decode_chat,
            self._store(found, "stream_chat"),
            self.active_cassette(),
        )

    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        request, kwargs = self._chat_request(messages, kwargs, stream=True)
        found = self._lookup(request, "stream_chat")
        if found.hit:
            with playback.pending(found.response):
                return await self._areplay_stream_chat(messages, **kwargs)
        live_llm = self._live(request, found.key)
        with passing_through():
            live = await live_llm.astream_chat(messages, **kwargs)
        return playback.arecord_stream(
            live,
            codec.encode_chat,
            codec.decode_chat,
            self._store(found, "stream_chat"),
            self.active_cassette(),
        )

    # -- completion ------------------------------------------------------------------------

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        request = self._completion_request(prompt, formatted, kwargs, stream=False)
        found = self._lookup(request, "complete")
        if found.hit:
            with playback.pending(found.response):
                return self._replay_complete(prompt, formatted=formatted, **kwargs)
        live_llm = self._live(request, found.key)
        with passing_through():
            response = live_llm.complete(prompt, formatted=formatted, **kwargs)
        stored = self._record(found, "complete", {"response": codec.encode_completion(response)})
        return codec.decode_completion(stored["response"])

    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        request = self._completion_request(prompt, formatted, kwargs, stream=False)
        found = self._lookup(request, "complete")
        if found.hit:
            with playback.pending(found.response):
                return await self._areplay_complete(prompt, formatted=formatted, **kwargs)
        live_llm = self._live(request, found.key)
        with passing_through():
            response = await live_llm.acomplete(prompt, formatted=formatted, **kwargs)
        stored = self._record(found, "complete", {"response": codec.encode_completion(response)})
        return codec.decode_completion(stored["response"])

    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        request = self._completion_request(prompt, formatted, kwargs, stream=True)
        found = self._lookup(request, "stream_complete")
        if found.hit:
            with playback.pending(found.response):
                return self._replay_stream_complete(prompt, formatted=formatted, **kwargs)
        live_llm = self._live(request, found.key)
        with passing_through():
            live = live_llm.stream_complete(prompt, formatted=formatted, **kwargs)
        return playback.record_stream(
            live,
            codec.encode_completion,
            codec.decode_completion,
            self._store(found, "stream_complete"),
            self.active_cassette(),
        )

    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        request = self._completion_request(prompt, formatted, kwargs, stream=True)
        found = self._lookup(request, "stream_complete")
        if found.hit:
            with playback.pending(found.response):
                return await self._areplay_stream_complete(prompt, formatted=formatted, **kwargs)
        live_llm = self._live(request, found.key)
        with passing_through():
            live = await live_llm.astream_complete(prompt, formatted=formatted, **kwargs)
        return playback.arecord_stream(
            live,
            codec.encode_completion,
            codec.decode_completion,
            self._store(found, "stream_complete"),
            self.active_cassette(),
        )

    # -- replay helpers: decorated, so they fire the events the real endpoint would --------

    _replay_chat = _HELPERS["chat"]
    _areplay_chat = _HELPERS["achat"]
    _replay_stream_chat = _HELPERS["stream_chat"]
    _areplay_stream_chat = _HELPERS["astream_chat"]
    _replay_complete = _HELPERS["complete"]
    _areplay_complete = _HELPERS["acomplete"]
    _replay_stream_complete = _HELPERS["stream_complete"]
    _areplay_stream_complete = _HELPERS["astream_complete"]


class CassetteFunctionCallingLLM(CassetteLLM, FunctionCallingLLM):
    """``CassetteLLM`` around a ``FunctionCallingLLM``: tool plumbing is the wrapped LLM's own."""

    @classmethod
    def class_name(cls) -> str:
        return "CassetteFunctionCallingLLM"

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[Any],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        messages = neutral_messages(user_msg, chat_history)
        neutral = tool_request(tools, messages, allow_parallel_tool_calls, tool_required, kwargs)
        if isinstance(self.llm, FunctionCallingLLM):
            with passing_through():  # the class-level interception must not take this call
                chat_kwargs = self.llm._prepare_chat_with_tools_compat(
                    tools,
                    user_msg=user_msg,
                    chat_history=chat_history,
                    verbose=verbose,
                    allow_parallel_tool_calls=allow_parallel_tool_calls,
                    tool_required=tool_required,
                    **kwargs,
                )
        else:  # llm=None: a neutral form; only the key (below) matters for replay
            chat_kwargs = {
                "messages": messages,
                "tools": [tool_schema(t) for t in tools],
                "tool_choice": "required" if tool_required else "auto",
                **kwargs,
            }
        chat_kwargs[TOOL_REQUEST_KWARG] = neutral
        return chat_kwargs

    def _validate_chat_with_tools_response(
        self,
        response: ChatResponse,
        tools: Sequence[Any],
        allow_parallel_tool_calls: bool = False,
        **kwargs: Any,
    ) -> ChatResponse:
        if isinstance(self.llm, FunctionCallingLLM):
            return self.llm._validate_chat_with_tools_response(
                response, tools, allow_parallel_tool_calls=allow_parallel_tool_calls, **kwargs
            )
        if not allow_parallel_tool_calls:
            calls = [b for b in response.message.blocks if isinstance(b, ToolCallBlock)]
            if len(calls) > 1:
                response.message.blocks = [
                    b for b in response.message.blocks if not isinstance(b, ToolCallBlock)
                ] + calls[:1]
        return response

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        if isinstance(self.llm, FunctionCallingLLM):
            return self.llm.get_tool_calls_from_response(
                response, error_on_no_tool_call=error_on_no_tool_call, **kwargs
            )
        return tool_calls_from_blocks(response, error_on_no_tool_call)


def tool_calls_from_blocks(
    response: ChatResponse, error_on_no_tool_call: bool
) -> list[ToolSelection]:
    """The generic parser (``ToolCallBlock``s, partial JSON allowed) used when ``llm=None``."""
    selections = []
    for block in response.message.blocks:
        if not isinstance(block, ToolCallBlock):
            continue
        arguments: Any = block.tool_kwargs
        if isinstance(arguments, str):
            try:
                arguments = parse_partial_json(arguments)
            except (ValueError, TypeError):
                arguments = {}
        selections.append(
            ToolSelection(
                tool_id=block.tool_call_id or "", tool_name=block.tool_name, tool_kwargs=arguments
            )
        )
    if not selections and error_on_no_tool_call:
        raise ValueError("Expected at least one tool call, but got 0 tool calls.")
    return selections


class CassetteCustomLLM(CassetteLLM, CustomLLM):
    """``CassetteLLM`` around a ``CustomLLM``: only the completion endpoints are intercepted.

    Chat and async endpoints are CustomLLM's own derivations, running on the wrapper, so a
    ``chat`` fires its chat events and then the completion events of the ``complete`` it
    makes, in record and in replay alike (CustomLLM's known double events included).
    """

    chat = CustomLLM.__dict__["chat"]
    stream_chat = CustomLLM.__dict__["stream_chat"]
    achat = CustomLLM.__dict__["achat"]
    astream_chat = CustomLLM.__dict__["astream_chat"]
    acomplete = CustomLLM.__dict__["acomplete"]
    astream_complete = CustomLLM.__dict__["astream_complete"]

    @classmethod
    def class_name(cls) -> str:
        return "CassetteCustomLLM"
