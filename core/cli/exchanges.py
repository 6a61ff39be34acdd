"""The answer in a recorded provider exchange (the SDK layer's responses), as a message.

The SDK layer stores what came over the wire: ``{"status", "headers", "body"}`` for a
whole response, ``{"chunks": [{"event", "data"}…]}`` for server-sent events. This reads
the answer out of OpenAI chat completions, Responses and Anthropic messages, whole or
streamed (chunks joined), and says what an embedding response holds, so ``show`` and
``diff`` print them like the frameworks' calls.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

SSE_FIELDS = frozenset({"event", "data", "id", "retry"})


def is_event_stream(response: Any) -> bool:
    chunks = response.get("chunks") if isinstance(response, dict) else None
    return (
        isinstance(chunks, list)
        and bool(chunks)
        and all(isinstance(c, dict) and "data" in c and set(c) <= SSE_FIELDS for c in chunks)
    )


def answer(response: Any) -> tuple[dict[str, Any] | None, str] | None:
    """(the answer as a message, a note) for an SDK exchange; ``None`` for anything else."""
    if is_event_stream(response):
        chunks = response["chunks"]
        note = f"streamed, {len(chunks)} event{'s' if len(chunks) != 1 else ''}"
        if response.get("complete") is False:
            note += ", stopped early"
        return _joined([c["data"] for c in chunks if isinstance(c.get("data"), dict)]), note
    if not (isinstance(response, dict) and isinstance(response.get("status"), int)):
        return None
    body = response.get("body")
    status = response["status"]
    if status >= 400:
        error = body.get("error") if isinstance(body, dict) else None
        text = error.get("message") if isinstance(error, dict) else error or body
        return {
            "role": "error",
            "content": str(text or response.get("text") or ""),
        }, f"HTTP {status}"
    return (_whole(body) if isinstance(body, dict) else None), ""


def vector_lines(response: Any) -> list[str] | None:
    """``N vectors of D float32`` for an embedding response."""
    body = response.get("body") if isinstance(response, dict) else None
    data = body.get("data") if isinstance(body, dict) else None
    if body is None or body.get("object") != "list" or not isinstance(data, list):
        return None
    if not data or not all(isinstance(d, dict) and "embedding" in d for d in data):
        return None
    first = data[0]["embedding"]
    if isinstance(first, str):
        try:
            dims: Any = len(base64.b64decode(first)) // 4
        except (binascii.Error, ValueError):
            dims = "?"
        kind = "float32, base64"
    else:
        dims, kind = (len(first) if isinstance(first, list) else "?"), "floats"
    return [f"{len(data)} vector{'s' if len(data) != 1 else ''} of {dims} ({kind})"]


# -- whole bodies ----------------------------------------------------------------------------


def _whole(body: dict[str, Any]) -> dict[str, Any] | None:
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):  # OpenAI chat completion
            return {
                "role": "assistant",
                "content": message.get("content") or "",
                "tool_calls": message.get("tool_calls") or [],
            }
        if isinstance(choices[0].get("text"), str):  # OpenAI completion
            return {"role": "assistant", "content": choices[0]["text"]}
    if isinstance(body.get("output"), list):  # OpenAI Responses
        return _responses_output(body["output"])
    if body.get("type") == "message" and isinstance(body.get("content"), list):  # Anthropic
        return _anthropic_blocks(body["content"])
    return None


def _responses_output(items: list[Any]) -> dict[str, Any]:
    text, calls = [], []
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    text.append(part["text"])
        elif item.get("type") == "function_call":
            calls.append({"name": item.get("name"), "arguments": item.get("arguments")})
        elif item.get("type") == "reasoning":
            summary = " ".join(
                str(s.get("text")) for s in item.get("summary") or [] if isinstance(s, dict)
            )
            if summary:
                text.append(f"(thinking: {summary}) ")
    return {"role": "assistant", "content": "".join(text), "tool_calls": calls}


def _anthropic_blocks(blocks: list[Any]) -> dict[str, Any]:
    text, calls = [], []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            text.append(str(block.get("text") or ""))
        elif block.get("type") == "thinking" and block.get("thinking"):
            text.append(f"(thinking: {block['thinking']}) ")
        elif block.get("type") in ("tool_use", "server_tool_use"):
            calls.append({"name": block.get("name"), "args": block.get("input")})
    return {"role": "assistant", "content": "".join(text), "tool_calls": calls}


# -- streams ---------------------------------------------------------------------------------


def _joined(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The answer of a stream: OpenAI chat chunks, Responses events or Anthropic events."""
    for event in reversed(events):
        if event.get("type") == "response.completed" and isinstance(event.get("response"), dict):
            return _responses_output(event["response"].get("output") or [])
    if any(e.get("object") == "chat.completion.chunk" for e in events):
        return _chat_chunks(events)
    if any(str(e.get("type", "")).startswith(("message_", "content_block_")) for e in events):
        return _anthropic_events(events)
    deltas = [e["delta"] for e in events if e.get("type") == "response.output_text.delta"]
    if deltas:
        return {"role": "assistant", "content": "".join(map(str, deltas))}
    return None


def _chat_chunks(events: list[dict[str, Any]]) -> dict[str, Any]:
    text: list[str] = []
    calls: dict[Any, dict[str, str]] = {}
    for event in events:
        for choice in event.get("choices") or []:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                continue
            if isinstance(delta.get("content"), str):
                text.append(delta["content"])
            for piece in delta.get("tool_calls") or []:
                function = piece.get("function") or {}
                slot = calls.setdefault(piece.get("index", len(calls)), {"name": "", "args": ""})
                slot["name"] += str(function.get("name") or "")
                slot["args"] += str(function.get("arguments") or "")
    tool_calls = [{"name": c["name"], "arguments": c["args"]} for c in calls.values()]
    return {"role": "assistant", "content": "".join(text), "tool_calls": tool_calls}


def _anthropic_events(events: list[dict[str, Any]]) -> dict[str, Any]:
    blocks: dict[Any, dict[str, Any]] = {}
    for event in events:
        index = event.get("index")
        if event.get("type") == "content_block_start":
            blocks[index] = dict(event.get("content_block") or {})
            blocks[index]["partial"] = ""
        elif event.get("type") == "content_block_delta" and index in blocks:
            delta = event.get("delta") or {}
            block = blocks[index]
            for field in ("text", "thinking"):
                if isinstance(delta.get(field), str):
                    block[field] = str(block.get(field) or "") + delta[field]
            if isinstance(delta.get("partial_json"), str):
                block["partial"] += delta["partial_json"]
    for block in blocks.values():
        if block.get("partial"):
            try:
                block["input"] = json.loads(block["partial"])
            except ValueError:
                block["input"] = block["partial"]
    return _anthropic_blocks(list(blocks.values()))
