"""The canonical request of a LlamaIndex LLM call: what changes the model's answer, as JSON.

Messages keep their tool-call ids where the engine's normalizer aliases them
(``tool_calls[*].id``, ``tool_call_id``); transport settings (base URL, key, timeout,
retries, clients) never enter it, so a replay against another server still finds its
recordings. ``CassetteLLM`` and ``boundary`` both build them with ``endpoint_request``
(from the ``KeyFacts`` of their LLM): same keys.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from pydantic import BaseModel

from chaincassette import media
from chaincassette.keyrules import is_client_setting

from .codec import tag

#: The kwarg that carries the provider-neutral tool request (``tool_request``) from
#: ``_prepare_chat_with_tools`` to the chat call it prepares; removed before anything sees it.
TOOL_REQUEST_KWARG = "chaincassette_tool_request"
#: Fields of an LLM that change its answers; they join the request's ``params``.
SAMPLING_FIELDS = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "max_tokens",
    "max_new_tokens",
    "max_completion_tokens",
    "seed",
    "stop",
    "stop_sequences",
    "frequency_penalty",
    "presence_penalty",
    "repeat_penalty",
    "reasoning_effort",
    "thinking",
    "response_format",
    "additional_kwargs",
)
#: Beside core's client settings (``chaincassette.keyrules.is_client_setting``: where a
#: request is sent, timeouts, retries, concurrency, headers, HTTP clients), the key itself.
SECRET_FIELDS = frozenset({"api_key"})
#: ``additional_kwargs`` entries of a message that vary per call and never change the answer.
VOLATILE_KWARGS = frozenset(
    {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "usage",
        "thinking_delta",
        "logprobs",
        "id",
        "created",
        "response_id",
        "timestamp",
    }
)


def plain(value: Any) -> Any:
    """A JSON stand-in for a keyword argument, stable across processes."""
    from llama_index.core.tools.types import BaseTool

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [plain(v) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, ChatMessage):
        return message_dict(value)
    if isinstance(value, BaseTool):
        return tool_schema(value)
    if isinstance(value, type) and issubclass(value, BaseModel):
        return {"pydantic": value.__name__, "schema": value.model_json_schema()}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (bytes, bytearray)):
        return tag(bytes(value))
    if callable(value):
        module = getattr(value, "__module__", None) or ""
        name = getattr(value, "__qualname__", None) or type(value).__qualname__
        return f"{module}.{name}" if module else name
    return repr(value)


def tool_schema(tool: Any) -> dict[str, Any]:
    """The provider-neutral schema of a LlamaIndex tool (OpenAI function format)."""
    schema: dict[str, Any] = tool.metadata.to_openai_tool(skip_length_check=True)
    return schema


def _tool_args(kwargs: Any) -> Any:
    if isinstance(kwargs, str):
        try:
            return json.loads(kwargs)
        except ValueError:
            return kwargs
    return plain(kwargs)


def message_dict(message: ChatMessage) -> dict[str, Any]:
    """A message as the engine sees it: role, content, tool calls, the call it answers."""
    extra = {k: v for k, v in message.additional_kwargs.items() if k not in VOLATILE_KWARGS}
    out: dict[str, Any] = {"role": message.role.value}
    calls = [b for b in message.blocks if isinstance(b, ToolCallBlock)]
    others = [b for b in message.blocks if not isinstance(b, ToolCallBlock)]
    if all(isinstance(b, TextBlock) for b in others):
        out["content"] = "".join(b.text for b in others if isinstance(b, TextBlock))
    else:
        out["content"] = [_block(b) for b in others]
    if calls:
        out["tool_calls"] = [
            {"id": b.tool_call_id or "", "name": b.tool_name, "args": _tool_args(b.tool_kwargs)}
            for b in calls
        ]
        extra.pop("tool_calls", None)  # the provider's copy of the same calls
    elif "tool_calls" in extra:
        out["tool_calls"] = [_provider_call(c) for c in extra.pop("tool_calls") or []]
    call_id = extra.pop("tool_call_id", None)
    if call_id is not None:
        out["tool_call_id"] = str(call_id)
    if extra:
        out["additional_kwargs"] = plain(extra)
    return out


def _block(block: Any) -> Any:
    if isinstance(block, ThinkingBlock):
        return {"type": "thinking", "content": block.content}
    return with_file_hash(plain(block))


def with_file_hash(block: Any) -> Any:
    """A media block given by a local ``path`` with the hash of the file's bytes, which the
    provider reads and sends: the key reads them (key rules 3), not where the file lies."""
    if isinstance(block, dict) and media.names_a_file(block):
        digest = media.file_hash(block[media.PATH_FIELDS[0]])
        if digest is not None:
            return {**block, media.PATH_HASH_FIELD: digest}
    return block


def _provider_call(call: Any) -> Any:
    """A provider tool-call object (OpenAI ``ChatCompletionMessageToolCall``…) as JSON."""
    data = plain(call)
    if isinstance(data, dict) and "id" not in data and "tool_id" in data:
        data["id"] = data.pop("tool_id")
    return data


def messages_list(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    return [message_dict(m) for m in messages]


def without_transport(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` without transport-only settings, also inside its ``additional_kwargs``."""
    out = {k: v for k, v in params.items() if not _transport(k)}
    extra = out.get("additional_kwargs")
    if isinstance(extra, dict):
        extra = {k: v for k, v in extra.items() if not _transport(k)}
        if extra:
            out["additional_kwargs"] = extra
        else:
            del out["additional_kwargs"]
    return out


def _transport(name: str) -> bool:
    return name in SECRET_FIELDS or is_client_setting(name)


def sampling_params(llm: Any) -> dict[str, Any]:
    """The answer-changing settings of an LLM instance (temperature, max_tokens…)."""
    return params_of(SamplingReader(type(llm)).values(llm))


class SamplingReader:
    """Reads the sampling settings of instances of one LLM class, read raw.

    A pydantic model answers a missing attribute by raising inside ``__getattr__``
    (microseconds each, for most of ``SAMPLING_FIELDS`` on every call): its fields live
    in the instance ``__dict__``, extras in ``__pydantic_extra__``, properties on a class
    of its MRO (walked once, here), so only names found there are asked for.
    """

    __slots__ = ("cls", "on_class", "reads_any")

    def __init__(self, cls: type) -> None:
        self.cls = cls
        #: any other ``__getattr__`` may serve any name: every field is asked for
        self.reads_any = getattr(cls, "__getattr__", None) is not _PYDANTIC_GETATTR
        self.on_class = frozenset().union(*(vars(k).keys() & _SAMPLING_SET for k in cls.__mro__))

    def values(self, llm: Any) -> tuple[tuple[str, Any], ...]:
        if self.reads_any:
            names: Sequence[str] = SAMPLING_FIELDS
        else:
            present = (llm.__dict__.keys() & _SAMPLING_SET) | self.on_class
            extra = getattr(llm, "__pydantic_extra__", None)
            if extra:
                present |= extra.keys() & _SAMPLING_SET
            names = [name for name in SAMPLING_FIELDS if name in present]
        return tuple([(name, getattr(llm, name, None)) for name in names])


def params_of(values: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The request's ``params`` from ``SamplingReader.values``: set values as JSON, no
    transport."""
    params = {name: plain(v) for name, v in values if v is not None and v != {}}
    return without_transport(params)


_PYDANTIC_GETATTR = getattr(BaseModel, "__getattr__", None)
_SAMPLING_SET = frozenset(SAMPLING_FIELDS)


def model_name(llm: Any) -> str | None:
    """The model an LLM talks to, as its metadata names it."""
    try:
        return str(llm.metadata.model_name)
    except Exception:  # a provider whose metadata fails for this model still has a name
        name = getattr(llm, "model", None) or getattr(llm, "model_name", None)
        return str(name) if name is not None else None


def neutral_messages(
    user_msg: str | ChatMessage | None, chat_history: Sequence[ChatMessage] | None
) -> list[ChatMessage]:
    """The conversation a tool call sends, before any provider shapes it."""
    messages = list(chat_history or [])
    if isinstance(user_msg, str):
        messages.append(ChatMessage(role=MessageRole.USER, content=user_msg))
    elif user_msg is not None:
        messages.append(user_msg)
    return messages


def tool_request(
    tools: Sequence[Any],
    messages: Sequence[ChatMessage],
    allow_parallel_tool_calls: bool,
    tool_required: bool,
    kwargs: dict[str, Any],
) -> dict[str, Any]:
    """The provider-neutral description of a ``chat_with_tools`` call: its key does not
    depend on the provider's tool format (``llm=None`` and ``boundary`` key it alike)."""
    return {
        "messages": messages_list(messages),
        "tools": [tool_schema(t) for t in tools],
        "tool_choice": {
            "required": tool_required,
            "parallel": allow_parallel_tool_calls,
            "choice": plain(kwargs.get("tool_choice")),
        },
        "kwargs": plain({k: v for k, v in kwargs.items() if k != "tool_choice"}),
    }


#: LLM packages whose client sends tool results without the ids of the calls they answer
#: (Ollama's messages carry none), so the provider matches them by position.
POSITIONAL_RESULTS = ("llama_index.llms.ollama",)


def results_by_position(llm_class: str | None) -> bool:
    """Whether an LLM class (``module:name``, or a module) is matched with its tool results
    by their order: the canonical request then says ``tool_result_ids: false``, and its key
    keeps their order (key rules 2)."""
    module = (llm_class or "").split(":", 1)[0]
    return any(module == name or module.startswith(f"{name}.") for name in POSITIONAL_RESULTS)


#: What of an LLM its requests read: ``(model, params, llm_class)``, the model, its sampling
#: ``params``, and its class (``module:name``) or module, by which a chat call's tool results
#: may be matched by position (``results_by_position``). A plain tuple: built on every call.
KeyFacts = tuple[str | None, dict[str, Any], str | None]


def key_facts(llm: Any, reader: SamplingReader | None = None) -> KeyFacts:
    """The ``KeyFacts`` of an LLM instance (``reader``: a ``SamplingReader`` of its class)."""
    values = (reader or SamplingReader(type(llm))).values(llm)
    return model_name(llm), params_of(values), type(llm).__module__


def endpoint_request(
    facts_of_llm: Callable[[], KeyFacts],
    endpoint: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    tools: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The canonical request of an endpoint call (``achat``…) with the arguments the endpoint
    is given; ``None``, the LLM unread, without its messages or prompt (the LLM's own endpoint
    raises then). ``tools``: the ``tool_request`` that prepared a chat call, when known."""
    stream = "stream" in endpoint
    chat = "chat" in endpoint
    if not args and ("messages" if chat else "prompt") not in kwargs:
        return None
    model, params, llm_class = facts_of_llm()
    options = dict(kwargs)
    if chat:
        messages = args[0] if args else options.pop("messages")
        positional = results_by_position(llm_class)
        return chat_request(model, params, messages, options, stream, tools, positional=positional)
    prompt = str(args[0] if args else options.pop("prompt"))
    formatted = bool(args[1] if len(args) > 1 else options.pop("formatted", False))
    return completion_request(model, params, prompt, formatted, options, stream)


def chat_request(
    model: str | None,
    params: dict[str, Any],
    messages: Sequence[ChatMessage],
    kwargs: dict[str, Any],
    stream: bool,
    tools: dict[str, Any] | None = None,
    *,
    positional: bool = False,
) -> dict[str, Any]:
    """The canonical request of a chat call (``tools``: a ``tool_request`` when known;
    ``positional``: the LLM's tool results are matched by position, ``results_by_position``)."""
    params = dict(params)
    request: dict[str, Any] = {"kind": "chat", "model": model, "stream": stream}
    if positional:
        request["tool_result_ids"] = False
    if tools is not None:
        request["messages"] = tools["messages"]
        request["tools"] = tools["tools"]
        request["tool_choice"] = tools["tool_choice"]
        params.update(tools["kwargs"])
    else:
        request["messages"] = messages_list(messages)
        extra = plain(kwargs)
        if "tools" in extra:
            request["tools"] = extra.pop("tools")
        if "tool_choice" in extra:
            request["tool_choice"] = extra.pop("tool_choice")
        params.update(extra)
    request["params"] = without_transport(params)
    return request


def completion_request(
    model: str | None,
    params: dict[str, Any],
    prompt: str,
    formatted: bool,
    kwargs: dict[str, Any],
    stream: bool,
) -> dict[str, Any]:
    """The canonical request of a completion call."""
    params = dict(params)
    params.update(plain(kwargs))
    return {
        "kind": "completion",
        "model": model,
        "stream": stream,
        "prompt": prompt,
        "formatted": formatted,
        "params": without_transport(params),
    }
