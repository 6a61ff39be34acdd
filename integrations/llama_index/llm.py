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

import os
import weakref
from collections.abc import Sequence
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

from chaincassette import Call, Cassette, CassetteMiss, credentials, layers
from chaincassette.canonical import fresh_copy
from chaincassette.cassette import given_cassette

from . import playback, routing, trace
from .description import describe_llm, flavour_of, recorded_llm
from .request import (
    TOOL_REQUEST_KWARG,
    SamplingReader,
    chat_request,
    completion_request,
    neutral_messages,
    params_of,
    results_by_position,
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


def _resolve_cassette(
    cassette: Cassette | str | PathLike[str], mode: Any, options: dict[str, Any]
) -> Cassette:
    return given_cassette(cassette, mode=mode, options=options, owner="CassetteLLM")


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

    #: Marks chaincassette's wrappers for the interception and the trace (no import needed).
    chaincassette_wrapper: ClassVar[bool] = True

    llm: SerializeAsAny[LLM] | None = Field(default=None, description="The wrapped LLM.")
    cassette: Any = Field(default=None, exclude=True, description="The chaincassette Cassette.")

    _recorded: dict[str, Any] | None = PrivateAttr(default=None)
    _described: Any = PrivateAttr(default_factory=weakref.WeakSet)
    _owns_cassette: bool = PrivateAttr(default=False)
    _replay_tools: bool = PrivateAttr(default=False)
    _routed: bool = PrivateAttr(default=False)
    _idle: Cassette | None = PrivateAttr(default=None)
    _sampling_reader: SamplingReader | None = PrivateAttr(default=None)

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

    def _sampling(self) -> tuple[tuple[str, Any], ...]:
        """The raw sampling settings: the wrapped LLM's, or the recorded params."""
        if self.llm is not None:
            reader = self._private("_sampling_reader")
            if reader is None or reader.cls is not type(self.llm):
                reader = SamplingReader(type(self.llm))
                self.__pydantic_private__["_sampling_reader"] = reader  # type: ignore[index]
            return reader.values(self.llm)
        assert self._recorded is not None
        return tuple((self._recorded.get("params") or {}).items())

    def _params(self, values: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
        """The request's ``params`` from ``_sampling()``'s values."""
        return params_of(values) if self.llm is not None else dict(values)

    def _describe(self, cassette: Cassette) -> dict[str, Any] | None:
        """Stored with the wrapper's first recording in a cassette so ``llm=None`` can replay."""
        if self.llm is None or cassette in self._described:
            return None
        self._described.add(cassette)
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
        """Whether this is the wrapper ``use_cassette`` puts around ``Settings.llm``: its
        calls go to the serving block's cassette (``routing``)."""
        return bool(self._private("_routed"))

    def idle_cassette(self) -> Cassette:
        """A cassette in mode ``off`` for calls of a routed wrapper made outside every block."""
        idle = self._private("_idle")
        if idle is None:
            idle = Cassette(os.devnull, mode="off")
            self.__pydantic_private__["_idle"] = idle  # type: ignore[index]
        return idle

    def active_cassette(self) -> Cassette:
        """The cassette of this call (``chaincassette.integrations.llama_index.routing``)."""
        return routing.llm_cassette(self)

    @property
    def tool_replay_cassette(self) -> Cassette | None:
        """The cassette that replays the tools of agents using this wrapper, if it does."""
        return self.cassette if self._replay_tools else None

    # -- requests -------------------------------------------------------------------------

    def _chat_request(
        self, messages: Sequence[ChatMessage], kwargs: dict[str, Any], stream: bool
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the canonical request, the kwargs for the real call without our marker)."""
        kwargs = dict(kwargs)
        tools = kwargs.pop(TOOL_REQUEST_KWARG, None)
        params = self._params(self._sampling())
        model = self.metadata.model_name
        wrapped = type(self.llm).__module__ if self.llm is not None else None
        positional = results_by_position(wrapped or (self._recorded or {}).get("class"))
        request = chat_request(
            model, params, messages, kwargs, stream, tools, positional=positional
        )
        return request, kwargs

    def _completion_request(
        self, prompt: str, formatted: bool, kwargs: dict[str, Any], stream: bool
    ) -> dict[str, Any]:
        params = self._params(self._sampling())
        model = self.metadata.model_name
        return completion_request(model, params, prompt, formatted, kwargs, stream)

    def _begin(self, request: dict[str, Any], endpoint: str) -> Call:
        """``endpoint``: one of ``playback.ENDPOINTS``."""
        cassette = self.active_cassette()
        call = cassette.begin(
            request, meta=_META[endpoint], autosave=self._private("_owns_cassette")
        )
        trace.note_llm_call(call.key, _KIND[endpoint])
        return call

    def _describer(self, cassette: Cassette) -> Any:
        return lambda: self._describe(cassette)

    def _live_llm(self, call: Call) -> LLM:
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

    def _chat(self, endpoint: str, messages: Sequence[ChatMessage], kwargs: dict[str, Any]) -> Any:
        request, kwargs = self._chat_request(messages, kwargs, stream="stream" in endpoint)
        call = self._begin(request, endpoint)
        replay = getattr(self, f"_replay_{endpoint}")
        return call, (
            lambda: replay(messages, **kwargs),
            lambda: getattr(self._live_llm(call), endpoint)(messages, **kwargs),
            self._describer(call.cassette),
        )

    def _completion(
        self, endpoint: str, prompt: str, formatted: bool, kwargs: dict[str, Any]
    ) -> Any:
        request = self._completion_request(prompt, formatted, kwargs, stream="stream" in endpoint)
        call = self._begin(request, endpoint)
        replay = getattr(self, f"_replay_{endpoint}")
        return call, (
            lambda: replay(prompt, formatted=formatted, **kwargs),
            lambda: getattr(self._live_llm(call), endpoint)(prompt, formatted=formatted, **kwargs),
            self._describer(call.cassette),
        )

    # -- the eight endpoints ------------------------------------------------------------------

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        call, how = self._chat("chat", messages, kwargs)
        return playback.serve(call, "chat", *how)

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        call, how = self._chat("achat", messages, kwargs)
        return await playback.aserve(call, "achat", *how)

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        call, how = self._chat("stream_chat", messages, kwargs)
        return playback.serve(call, "stream_chat", *how)

    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        call, how = self._chat("astream_chat", messages, kwargs)
        return await playback.aserve(call, "astream_chat", *how)

    # The completion endpoints take their arguments as every LLM's do behind LlamaIndex's
    # ``llm_completion_callback``: so a call without a prompt raises what the wrapped LLM
    # raises (``ValueError``), not Python's ``TypeError`` for this signature.

    def complete(self, *args: Any, **kwargs: Any) -> CompletionResponse:
        prompt, formatted, kwargs = completion_arguments(args, kwargs)
        call, how = self._completion("complete", prompt, formatted, kwargs)
        return playback.serve(call, "complete", *how)

    async def acomplete(self, *args: Any, **kwargs: Any) -> CompletionResponse:
        prompt, formatted, kwargs = completion_arguments(args, kwargs)
        call, how = self._completion("acomplete", prompt, formatted, kwargs)
        return await playback.aserve(call, "acomplete", *how)

    def stream_complete(self, *args: Any, **kwargs: Any) -> CompletionResponseGen:
        prompt, formatted, kwargs = completion_arguments(args, kwargs)
        call, how = self._completion("stream_complete", prompt, formatted, kwargs)
        return playback.serve(call, "stream_complete", *how)

    async def astream_complete(self, *args: Any, **kwargs: Any) -> CompletionResponseAsyncGen:
        prompt, formatted, kwargs = completion_arguments(args, kwargs)
        call, how = self._completion("astream_complete", prompt, formatted, kwargs)
        return await playback.aserve(call, "astream_complete", *how)

    # -- replay helpers: decorated, so they fire the events the real endpoint would --------

    _replay_chat = _HELPERS["chat"]
    _replay_achat = _HELPERS["achat"]
    _replay_stream_chat = _HELPERS["stream_chat"]
    _replay_astream_chat = _HELPERS["astream_chat"]
    _replay_complete = _HELPERS["complete"]
    _replay_acomplete = _HELPERS["acomplete"]
    _replay_stream_complete = _HELPERS["stream_complete"]
    _replay_astream_complete = _HELPERS["astream_complete"]


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
