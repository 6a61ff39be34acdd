"""LlamaIndex responses as cassette JSON and back, without reviving what a file names.

Provider objects in ``raw`` and ``additional_kwargs`` are stored type-tagged, but a cassette
is data: decoding builds LlamaIndex's own classes and, of the tagged objects, only the
provider tool calls of ``PROVIDER_OBJECTS`` whose module is already imported (OpenAI's
client reads ``tool_call.function.name``); any other tag comes back as plain data, so a file
never builds the program's classes or a client holding its API key. Every decode builds
fresh objects: agents mutate what they get back.
"""

from __future__ import annotations

import base64
import sys
import warnings
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    LogProb,
)
from pydantic import BaseModel, TypeAdapter

from chaincassette.usage import count_tokens

PYDANTIC_TAG = "__pydantic__"
BYTES_TAG = "__bytes__"
REPR_TAG = "__repr__"
TUPLE_TAG = "__tuple__"

_LOGPROBS = TypeAdapter(list[list[LogProb]])

#: The tagged classes a decode may build (``module:QualName``): provider tool calls kept
#: in a message's ``additional_kwargs``. A fixed list, never a class the file names.
PROVIDER_OBJECTS = frozenset(
    {
        "openai.types.chat.chat_completion_message_tool_call:ChatCompletionMessageToolCall",
        "openai.types.chat.chat_completion_message_function_tool_call:"
        "ChatCompletionMessageFunctionToolCall",
        "openai.types.chat.chat_completion_message_custom_tool_call:"
        "ChatCompletionMessageCustomToolCall",
        "openai.types.chat.chat_completion_message:FunctionCall",
        "openai.types.chat.chat_completion_chunk:ChoiceDeltaToolCall",
        "openai.types.chat.chat_completion_chunk:ChoiceDeltaFunctionCall",
    }
)


def qualified_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def tag(value: Any) -> Any:
    """``value`` as JSON, with pydantic objects, bytes and tuples tagged by type."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): tag(v) for k, v in value.items()}
    if isinstance(value, list):
        return [tag(v) for v in value]
    if isinstance(value, tuple):
        return {TUPLE_TAG: [tag(v) for v in value]}
    if isinstance(value, (bytes, bytearray)):
        return {BYTES_TAG: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, BaseModel):
        return {PYDANTIC_TAG: qualified_name(type(value)), "data": value.model_dump(mode="json")}
    warnings.warn(
        f"chaincassette: a {type(value).__name__} in a LlamaIndex response is not JSON; "
        "it is stored as its repr and replays as a string",
        stacklevel=2,
    )
    return {REPR_TAG: repr(value)}


def untag(value: Any, objects: frozenset[str] = frozenset()) -> Any:
    """The inverse of ``tag``, as fresh plain data: bytes and tuples restored, tagged
    objects as their data unless their class is one of ``objects`` (and loaded)."""
    if isinstance(value, list):
        return [untag(v, objects) for v in value]
    if not isinstance(value, dict):
        return value
    size = len(value)
    if size == 1:
        if BYTES_TAG in value:
            return base64.b64decode(value[BYTES_TAG], validate=True)
        if TUPLE_TAG in value:
            return tuple(untag(v, objects) for v in value[TUPLE_TAG])
        if REPR_TAG in value:
            return value[REPR_TAG]
    elif size == 2 and PYDANTIC_TAG in value and "data" in value:
        data, name = value["data"], value[PYDANTIC_TAG]
        return _rehydrate(name, data) if name in objects else data
    return {k: untag(v, objects) for k, v in value.items()} if size else {}


def _rehydrate(name: str, data: Any) -> Any:
    """The provider object ``name`` if its module is already imported, else the data: a tag
    never imports a module (its import-time code would run on replay)."""
    module_name, _, qualname = name.partition(":")
    target: Any = sys.modules.get(module_name)
    if target is None:
        return data
    try:
        for part in qualname.split("."):
            target = getattr(target, part)
        if isinstance(target, type) and issubclass(target, BaseModel):
            return target.model_validate(data)
    except Exception:  # the provider SDK changed: keep the data
        pass
    return data


# -- messages and responses ---------------------------------------------------------------


def encode_message(message: ChatMessage) -> dict[str, Any]:
    return {
        "role": message.role.value,
        "blocks": [block.model_dump(mode="json") for block in message.blocks],
        "additional_kwargs": tag(message.additional_kwargs),
    }


def decode_message(data: dict[str, Any]) -> ChatMessage:
    message = ChatMessage.model_validate({"role": data["role"], "blocks": data.get("blocks", [])})
    extra = untag(data.get("additional_kwargs") or {}, PROVIDER_OBJECTS)
    if not isinstance(extra, dict):
        raise TypeError(f"'additional_kwargs' must be a mapping, found {type(extra).__name__}")
    message.additional_kwargs = extra
    return message


def _encode_common(response: ChatResponse | CompletionResponse) -> dict[str, Any]:
    return {
        "delta": response.delta,
        "raw": tag(response.raw),
        "logprobs": _LOGPROBS.dump_python(response.logprobs, mode="json")
        if response.logprobs is not None
        else None,
        "additional_kwargs": tag(response.additional_kwargs),
    }


def _decode_common(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "delta": data.get("delta"),
        "raw": untag(data.get("raw")),
        "logprobs": _LOGPROBS.validate_python(data["logprobs"]) if data.get("logprobs") else None,
        "additional_kwargs": untag(data.get("additional_kwargs") or {}),
    }


def encode_chat(response: ChatResponse) -> dict[str, Any]:
    return {"message": encode_message(response.message), **_encode_common(response)}


def decode_chat(data: dict[str, Any]) -> ChatResponse:
    return ChatResponse(message=decode_message(data["message"]), **_decode_common(data))


def encode_completion(response: CompletionResponse) -> dict[str, Any]:
    return {"text": response.text, **_encode_common(response)}


def decode_completion(data: dict[str, Any]) -> CompletionResponse:
    return CompletionResponse(text=data.get("text") or "", **_decode_common(data))


# -- streams ---------------------------------------------------------------------------------
#
# A chunk repeats the whole answer so far next to its delta (stored as is, a streamed call
# took five times the file). A stored chunk keeps its delta and only what that does not
# predict; the last one keeps the whole message. Raw chunk objects only when a test asks.

RAW_OPTION = "raw_stream_chunks"
"""``Cassette`` option (``@pytest.mark.cassette(raw_stream_chunks=True)``): keep each
streamed chunk's ``raw`` provider object, for code that reads ``response.raw``."""


def _predicted_message(previous: dict[str, Any] | None, delta: Any) -> dict[str, Any]:
    """The previous chunk's message with ``delta`` appended to its last text block."""
    if previous is None:
        previous = {"role": "assistant", "blocks": [], "additional_kwargs": {}}
    blocks = [dict(block) if isinstance(block, dict) else block for block in previous["blocks"]]
    texts = [
        n for n, b in enumerate(blocks) if isinstance(b, dict) and b.get("block_type") == "text"
    ]
    if texts:
        block = blocks[texts[-1]]
        block["text"] = f"{block.get('text') or ''}{delta or ''}"
    else:
        blocks.append({"block_type": "text", "text": delta or ""})
    return {**previous, "blocks": blocks}


class StreamCodec:
    """One stream's chunks to stored JSON and back, fresh per stream: both sides keep the
    answer so far, so a recording run's chunks and every replay's are the same."""

    def __init__(self, endpoint: str, *, keep_raw: bool = False) -> None:
        self._chat = "chat" in endpoint
        self._field = "message" if self._chat else "text"  # where the answer so far is
        self._keep_raw = keep_raw
        self._encoded: dict[str, Any] | None = None
        self._decoded: dict[str, Any] | None = None
        self.tokens: int | None = None
        """The stream's final usage (the last chunk that carried one), raw objects included."""

    def _answer(self, full: dict[str, Any] | None) -> Any:
        return None if full is None else full[self._field]

    def _predicted(self, previous: dict[str, Any] | None, delta: Any) -> Any:
        if self._chat:
            return _predicted_message(self._answer(previous), delta)
        return f"{self._answer(previous) or ''}{delta or ''}"

    def encode(self, chunk: Any) -> dict[str, Any]:
        full = encode_chat(chunk) if self._chat else encode_completion(chunk)
        tokens = count_tokens(full)
        if tokens:
            self.tokens = tokens
        stored: dict[str, Any] = {"delta": full["delta"]}
        if full[self._field] != self._predicted(self._encoded, full["delta"]):
            stored[self._field] = full[self._field]
        for name, empty in (("additional_kwargs", {}), ("logprobs", None)):
            if full[name] != empty:
                stored[name] = full[name]
        if self._keep_raw and full["raw"] is not None:
            stored["raw"] = full["raw"]
        self._encoded = full
        return stored

    def decode(self, stored: dict[str, Any]) -> Any:
        """A chunk as the live stream gave it (older cassettes store every field: as is)."""
        field = self._field
        full = {
            field: stored[field]
            if field in stored
            else self._predicted(self._decoded, stored.get("delta")),
            "delta": stored.get("delta"),
            "raw": stored.get("raw"),
            "logprobs": stored.get("logprobs"),
            "additional_kwargs": stored.get("additional_kwargs") or {},
        }
        self._decoded = full
        return decode_chat(full) if self._chat else decode_completion(full)

    def seal(self, chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The stored chunks with the final answer written out in the last one."""
        field = self._field
        if chunks and self._encoded is not None and field not in chunks[-1]:
            chunks = [*chunks[:-1], {**chunks[-1], field: self._encoded[field]}]
        return chunks
