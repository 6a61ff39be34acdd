"""``CassetteLLM``: a drop-in LlamaIndex LLM that records every call once and replays it.

Only the eight transport endpoints are intercepted: everything else in ``LLM`` (tools,
``predict``, structured outputs, agents) is built on them. The endpoints here are not
decorated: recording runs the wrapped LLM's own decorated endpoint, replaying runs a helper
decorated like it (``playback``), so each call fires one set of events in both modes.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any, ClassVar

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

from chaincassette import Cassette, CassetteMiss, credentials, layers
from chaincassette.canonical import fresh_copy
from chaincassette.cassette import given_cassette

from . import playback, routing, trace
from .description import DESCRIBED, describe_llm, flavour_of, recorded_llm
from .request import (
    TOOL_REQUEST_KWARG,
    KeyFacts,
    SamplingReader,
    endpoint_request,
    key_facts,
    neutral_messages,
    tool_request,
    tool_schema,
)

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

_HELPERS = playback.replay_helpers()
#: Per endpoint: its kind (``achat`` -> ``chat``) and the meta stored with a recording.
_KIND = {name: playback.endpoint_kind(name) for name in playback.ENDPOINTS}
_META = {name: playback.call_meta(name) for name in playback.ENDPOINTS}
Serve = Callable[..., Any]


class CassetteLLM(LLM):
    """Wrap any LlamaIndex ``LLM`` so that its calls are recorded in, and replayed from, a cassette.

    ``CassetteLLM(OpenAI(model="gpt-4o-mini"), cassette="tests/cassettes/agent.yaml")``.
    Around a ``FunctionCallingLLM`` the instance is a ``CassetteFunctionCallingLLM``
    (LlamaIndex branches on ``isinstance``). With ``llm=None`` the cassette alone answers
    (for providers whose constructor does network I/O). ``replay_tools=True`` also replays
    ``FunctionTool`` results. A cassette given as a path is owned and saved by the wrapper.
    """

    #: Marks chaincassette's wrappers for the interception and the trace (no import needed).
    chaincassette_wrapper: ClassVar[bool] = True

    llm: SerializeAsAny[LLM] | None = Field(default=None, description="The wrapped LLM.")
    cassette: Any = Field(default=None, exclude=True, description="The chaincassette Cassette.")

    _recorded: dict[str, Any] | None = PrivateAttr(default=None)
    _described: Any = PrivateAttr(default_factory=weakref.WeakKeyDictionary)
    _owns_cassette: bool = PrivateAttr(default=False)
    _replay_tools: bool = PrivateAttr(default=False)
    _routed: bool = PrivateAttr(default=False)
    _idle: Cassette | None = PrivateAttr(default=None)
    _sampling_reader: SamplingReader | None = PrivateAttr(default=None)

    def __new__(cls, llm: LLM | None = None, *args: Any, **kwargs: Any) -> CassetteLLM:
        if cls is not CassetteLLM:
            return super().__new__(cls)
        flavour = "plain"
        if llm is not None:
            flavour = flavour_of(llm)
        elif kwargs.get("cassette") is not None:
            options = {k: v for k, v in kwargs.items() if k not in ("cassette", "replay_tools")}
            mode = options.pop("mode", None)
            cassette = given_cassette(
                kwargs["cassette"], mode=mode, options=options, owner="CassetteLLM"
            )
            flavour = str((recorded_llm(cassette) or {}).get("flavour") or "plain")
        flavours = {"function_calling": CassetteFunctionCallingLLM, "custom": CassetteCustomLLM}
        return super().__new__(flavours.get(flavour, cls))

    def __init__(
        self,
        llm: LLM | None = None,
        *,
        cassette: Cassette | str | PathLike[str],
        mode: Any = None,
        replay_tools: bool = False,
        **cassette_options: Any,
    ) -> None:
        resolved = given_cassette(
            cassette, mode=mode, options=cassette_options, owner="CassetteLLM"
        )
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
        weakref.finalize(self, credentials.hold_while_replaying(resolved))  # keyless replay
        self._replay_tools = replay_tools
        if replay_tools:
            from .tools import enable_tool_replay

            enable_tool_replay(self)

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

    def _key_facts(self) -> KeyFacts:
        """What of the wrapped LLM its requests read, or of the recorded one with ``llm=None``."""
        if self.llm is None:
            recorded = self._recorded
            assert recorded is not None
            params = dict(recorded.get("params") or {})
            return self.metadata.model_name, params, recorded.get("class")
        reader = self._private("_sampling_reader")
        if reader is None or reader.cls is not type(self.llm):
            reader = SamplingReader(type(self.llm))
            self.__pydantic_private__["_sampling_reader"] = reader  # type: ignore[index]
        return key_facts(self.llm, reader)

    def _describe(self, cassette: Cassette) -> dict[str, Any] | None:
        """Stored with the wrapper's first recording in a cassette so ``llm=None`` can replay."""
        if self.llm is None:
            return None
        # the cassette's set of described classes (``boundary``) is made afresh when it takes
        # its recordings back (``Cassette.retract``): the description went with them
        described = cassette.state(DESCRIBED, set)
        if self._described.get(cassette) is described:
            return None
        self._described[cassette] = described
        return describe_llm(self.llm)

    def _private(self, name: str) -> Any:
        """A private attribute, read without pydantic's ``__getattr__`` (which answers it
        only after a failed descriptor probe: microseconds on every call)."""
        return self.__pydantic_private__[name]  # type: ignore[index]

    def route_to_blocks(self) -> None:
        """Make this the wrapper ``use_cassette`` puts around ``Settings.llm``."""
        self.__pydantic_private__["_routed"] = True  # type: ignore[index]

    @property
    def routed(self) -> bool:
        """Whether its calls go to the serving block's cassette (``routing``)."""
        return bool(self._private("_routed"))

    def idle_cassette(self) -> Cassette:
        """A cassette in mode ``off`` for calls of a routed wrapper made outside every block."""
        idle = self._private("_idle")
        if idle is None:
            idle = Cassette(os.devnull, mode="off")
            self.__pydantic_private__["_idle"] = idle  # type: ignore[index]
        return idle

    @property
    def tool_replay_cassette(self) -> Cassette | None:
        """The cassette that replays the tools of agents using this wrapper, if it does."""
        return self.cassette if self._replay_tools else None

    # -- one call -------------------------------------------------------------------------

    def _serve(
        self,
        serve: Serve,
        endpoint: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """``serve`` (``playback.serve`` or ``aserve``) ``endpoint`` called with ``args``, less
        the tool request that prepared a chat call (``_prepare_chat_with_tools``)."""
        tools = kwargs.pop(TOOL_REQUEST_KWARG, None)  # kwargs: this call's own dict
        request = endpoint_request(self._key_facts, endpoint, args, kwargs, tools)
        cassette = routing.llm_cassette(self)
        call = cassette.begin(
            request, meta=_META[endpoint], autosave=self._private("_owns_cassette")
        )
        trace.note_llm_call(call.key, _KIND[endpoint])
        return serve(
            call,
            endpoint,
            lambda: _HELPERS[endpoint](self, *args, **kwargs),
            lambda: getattr(self._live_llm(call), endpoint)(*args, **kwargs),
            lambda: self._describe(call.cassette),
        )

    def _live_llm(self, call: Any) -> LLM:
        """The wrapped LLM; with ``llm=None`` there is none to record with: a miss."""
        if self.llm is not None:
            return self.llm
        cassette = call.cassette
        raise cassette.report_miss(
            CassetteMiss(
                f"CassetteLLM(llm=None) can only replay, and {cassette.path} has no recording "
                f"for this request (key {call.key[:12]}); wrap the real LLM to record it",
                path=cassette.path,
                mode=cassette.mode.value,
                request=fresh_copy(call.request),
                key=call.key,
            )
        )

    def _completion(
        self, serve: Serve, endpoint: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        prompt, formatted, kwargs = completion_arguments(args, kwargs)
        return self._serve(serve, endpoint, (prompt,), {"formatted": formatted, **kwargs})

    # -- the eight endpoints ------------------------------------------------------------------

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._serve(playback.serve, "chat", (messages,), kwargs)

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return await self._serve(playback.aserve, "achat", (messages,), kwargs)

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        return self._serve(playback.serve, "stream_chat", (messages,), kwargs)

    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        return await self._serve(playback.aserve, "astream_chat", (messages,), kwargs)

    # The completion endpoints take their arguments as LlamaIndex's ``llm_completion_callback``
    # does: a call without a prompt raises the wrapped LLM's ``ValueError``, not a TypeError.

    def complete(self, *args: Any, **kwargs: Any) -> CompletionResponse:
        return self._completion(playback.serve, "complete", args, kwargs)

    async def acomplete(self, *args: Any, **kwargs: Any) -> CompletionResponse:
        return await self._completion(playback.aserve, "acomplete", args, kwargs)

    def stream_complete(self, *args: Any, **kwargs: Any) -> CompletionResponseGen:
        return self._completion(playback.serve, "stream_complete", args, kwargs)

    async def astream_complete(self, *args: Any, **kwargs: Any) -> CompletionResponseAsyncGen:
        return await self._completion(playback.aserve, "astream_complete", args, kwargs)


def completion_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[str, bool, dict[str, Any]]:
    """(prompt, formatted, the other keywords) of a completion call, read as LlamaIndex's
    ``llm_completion_callback`` reads them around every LLM's endpoint (the same error for
    a missing prompt; more positional arguments than ``prompt, formatted``: ``TypeError``)."""
    kwargs = dict(kwargs)
    if len(args) > 2:
        raise TypeError(
            f"takes 2 positional arguments (prompt, formatted) but {len(args)} were given"
        )
    if args:
        prompt = args[0]
    elif "prompt" in kwargs:
        prompt = kwargs.pop("prompt")
    else:
        raise ValueError("No prompt provided in positional or keyword arguments")
    formatted = args[1] if len(args) > 1 else kwargs.pop("formatted", False)
    return prompt, bool(formatted), kwargs


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
            with layers.answering():  # the class-level interception must not take this call
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
    """``CassetteLLM`` around a ``CustomLLM``: only the completion endpoints are intercepted;
    CustomLLM's own chat and async derivations run on the wrapper, so their events (double
    ones included) are the same in record and replay."""

    chat = CustomLLM.__dict__["chat"]
    stream_chat = CustomLLM.__dict__["stream_chat"]
    achat = CustomLLM.__dict__["achat"]
    astream_chat = CustomLLM.__dict__["astream_chat"]
    acomplete = CustomLLM.__dict__["acomplete"]
    astream_complete = CustomLLM.__dict__["astream_complete"]

    @classmethod
    def class_name(cls) -> str:
        return "CassetteCustomLLM"
