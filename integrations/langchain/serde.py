"""Model outputs to plain JSON and back, without reviving arbitrary classes.

A cassette is data, not code: messages are stored with ``message_to_dict`` and revived
only as LangChain message types (``messages_from_dict``), generations as
``Generation``/``ChatGeneration``/``ChatGenerationChunk``. Values that are not JSON
(datetimes, provider objects in ``generation_info``) are stored as their ``repr`` without
memory addresses; the record run hands out the decoded copy too, so recording and replay
give the caller exactly the same objects.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
from langchain_core.outputs import (
    ChatGeneration,
    ChatGenerationChunk,
    ChatResult,
    Generation,
    GenerationChunk,
)

from chaincassette import Call
from chaincassette.decoding import decoded

_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+")
#: Message fields left out of storage when empty (they are restored as defaults).
_EMPTY_DEFAULTS = (
    "additional_kwargs",
    "response_metadata",
    "invalid_tool_calls",
    "tool_call_chunks",
)


def to_json(value: Any) -> Any:
    """A JSON-only copy: pydantic models dumped, tuples as lists, others by ``repr``."""
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, float):
        return (
            value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
        )
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return to_json(dump())
        except Exception:  # a model that cannot dump itself is stored by repr
            pass
    return _ADDRESS.sub("", repr(value))


def encode_message(message: BaseMessage) -> dict[str, Any]:
    plain = message_to_dict(message)
    data = {
        k: v
        for k, v in plain["data"].items()
        if not (v is None or (k in _EMPTY_DEFAULTS and not v) or (k == "example" and v is False))
    }
    return {"type": plain["type"], "data": to_json(data)}


def decode_message(plain: dict[str, Any]) -> BaseMessage:
    return messages_from_dict([plain])[0]


def encode_generation(generation: Generation) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type(generation).__name__}
    message = getattr(generation, "message", None)
    if isinstance(message, BaseMessage):
        out["message"] = encode_message(message)
    else:
        out["text"] = generation.text
    if generation.generation_info:
        out["generation_info"] = to_json(generation.generation_info)
    return out


_GENERATION_TYPES: dict[str, type[Generation]] = {
    "Generation": Generation,
    "GenerationChunk": GenerationChunk,
    "ChatGeneration": ChatGeneration,
    "ChatGenerationChunk": ChatGenerationChunk,
}


def decode_generation(plain: dict[str, Any]) -> Generation:
    cls = _GENERATION_TYPES.get(str(plain.get("type")), Generation)
    info = plain.get("generation_info")
    if "message" in plain:
        if not issubclass(cls, ChatGeneration):
            cls = ChatGeneration
        return cls(message=decode_message(plain["message"]), generation_info=info)
    if issubclass(cls, ChatGeneration):
        cls = Generation
    return cls(text=plain.get("text", ""), generation_info=info)


def encode_generations(generations: Iterable[Generation]) -> dict[str, Any]:
    return {"generations": [encode_generation(g) for g in generations]}


def encode_result(result: ChatResult) -> dict[str, Any]:
    out = encode_generations(result.generations)
    if result.llm_output:
        out["llm_output"] = to_json(result.llm_output)
    return out


def replayed_generations(call: Call) -> list[Generation]:
    """The generations a hit replays, their messages carrying the call's deterministic IDs
    (a recorded provider error is raised again instead)."""
    generations = decoded(call, _decode_generations, call.raise_if_error())
    set_ids(generations, call)
    return generations


def _decode_generations(response: dict[str, Any]) -> list[Generation]:
    return [decode_generation(g) for g in stored_generations(response)]


def stored_generations(response: dict[str, Any]) -> list[Any]:
    """A recorded answer's generations: a model call always returns one, so a response
    with none was edited (LangChain would fail on it with a bare ``IndexError``)."""
    generations: list[Any] = response["generations"]
    if not generations:
        raise ValueError("the response holds no generations")
    return generations


def record_generations(call: Call, generations: Sequence[Generation]) -> None:
    """Record the live ``generations`` of a missed call and give their messages the IDs a
    replay gives them (the list is the very one LangChain returns to the caller)."""
    call.record(encode_generations(generations))
    set_ids(generations, call)


def set_ids(generations: Sequence[Any], call: Call) -> None:
    for index, generation in enumerate(generations):
        message = getattr(generation, "message", None)
        if isinstance(message, BaseMessage):
            message.id = call.id + (f"-{index}" if index else "")
