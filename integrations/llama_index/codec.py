"""Turning LlamaIndex responses into cassette JSON and back, without losing types.

``model_dump(mode="json")`` flattens the provider objects found in ``raw`` and
``additional_kwargs`` (OpenAI ``ChatCompletion``, Gemini ``FunctionCall``…) into dicts,
and provider integrations do attribute access on them. So those values are stored
type-tagged and rehydrated; blocks, deltas and logprobs use pydantic's own JSON form.
Every decode builds fresh objects: agents mutate what they get back.
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

PYDANTIC_TAG = "__pydantic__"
BYTES_TAG = "__bytes__"
REPR_TAG = "__repr__"
TUPLE_TAG = "__tuple__"

_LOGPROBS = TypeAdapter(list[list[LogProb]])


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


def untag(value: Any) -> Any:
    """The inverse of ``tag``: fresh objects, provider classes rehydrated when loaded."""
    if isinstance(value, list):
        return [untag(v) for v in value]
    if not isinstance(value, dict):
        return value
    size = len(value)
    if size == 1:
        if BYTES_TAG in value:
            return base64.b64decode(value[BYTES_TAG])
        if TUPLE_TAG in value:
            return tuple(untag(v) for v in value[TUPLE_TAG])
        if REPR_TAG in value:
            return value[REPR_TAG]
    elif size == 2 and PYDANTIC_TAG in value and "data" in value:
        return _rehydrate(str(value[PYDANTIC_TAG]), value["data"])
    return {k: untag(v) for k, v in value.items()} if size else {}


def _rehydrate(name: str, data: Any) -> Any:
    """The provider object, if its class's module is already imported; else the data.

    A cassette is data: the module a tag names is never imported (its import-time code
    would run on replay). A program that uses a provider has imported its SDK already.
    """
    module_name, _, qualname = name.partition(":")
    target: Any = sys.modules.get(module_name)
    if target is None:
        return data
    try:
        for part in qualname.split("."):
            target = getattr(target, part)
        if isinstance(target, type) and issubclass(target, BaseModel):
            return target.model_validate(data)
    except Exception:  # the provider SDK is not installed or changed: keep the data
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
    message.additional_kwargs = untag(data.get("additional_kwargs") or {})
    return message


def encode_chat(response: ChatResponse) -> dict[str, Any]:
    return {
        "message": encode_message(response.message),
        "delta": response.delta,
        "raw": tag(response.raw),
        "logprobs": _LOGPROBS.dump_python(response.logprobs, mode="json")
        if response.logprobs is not None
        else None,
        "additional_kwargs": tag(response.additional_kwargs),
    }


def decode_chat(data: dict[str, Any]) -> ChatResponse:
    return ChatResponse(
        message=decode_message(data["message"]),
        delta=data.get("delta"),
        raw=untag(data.get("raw")),
        logprobs=_LOGPROBS.validate_python(data["logprobs"]) if data.get("logprobs") else None,
        additional_kwargs=untag(data.get("additional_kwargs") or {}),
    )


def encode_completion(response: CompletionResponse) -> dict[str, Any]:
    return {
        "text": response.text,
        "delta": response.delta,
        "raw": tag(response.raw),
        "logprobs": _LOGPROBS.dump_python(response.logprobs, mode="json")
        if response.logprobs is not None
        else None,
        "additional_kwargs": tag(response.additional_kwargs),
    }


def decode_completion(data: dict[str, Any]) -> CompletionResponse:
    return CompletionResponse(
        text=data.get("text") or "",
        delta=data.get("delta"),
        raw=untag(data.get("raw")),
        logprobs=_LOGPROBS.validate_python(data["logprobs"]) if data.get("logprobs") else None,
        additional_kwargs=untag(data.get("additional_kwargs") or {}),
    )
