"""Anthropic's Messages wire format: ``toolu_…``/``msg_01…`` ids, extended thinking with a
fresh signature when asked, and the SSE events of a stream (``ping`` included)."""

from __future__ import annotations

import json
from typing import Any

from fakes.turns import Answer, Reply, Turn, conversation, rand, said_of, signature, text_of, words


def _kind(block: dict[str, Any]) -> tuple[str, str] | None:
    if block.get("type") == "tool_result":
        return "result", text_of(block.get("content"))
    return ("text", block["text"]) if block.get("type") == "text" else None


def messages_turn(body: dict[str, Any]) -> Turn:
    messages = [
        {**m, "content": [{"type": "text", "text": m["content"]}]}
        if isinstance(m.get("content"), str)
        else m
        for m in body.get("messages") or []
    ]
    tools = [
        {"name": t.get("name"), "parameters": t.get("input_schema") or {}}
        for t in body.get("tools") or []
    ]
    return conversation(str(body.get("model")), tools, said_of(messages, "content", _kind))


def _content(body: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if (body.get("thinking") or {}).get("type") == "enabled":
        content.append(
            {"type": "thinking", "thinking": "I need the tools.", "signature": signature()}
        )
    if reply.text is not None:
        content.append({"type": "text", "text": reply.text})
    for name, args in reply.calls:
        content.append(
            {"type": "tool_use", "id": "toolu_01" + rand(22), "name": name, "input": args}
        )
    return content


def messages(body: dict[str, Any], reply: Reply) -> Answer:
    inp, out = reply.tokens()
    message = {
        "id": "msg_01" + rand(22),
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": _content(body, reply),
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": inp,
            "output_tokens": out,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
    headers = [("request-id", "req_" + rand(24))]
    if not body.get("stream"):
        return Answer(message, headers=headers)
    return Answer(events=_events(message), headers=headers)


def _deltas(block: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A content block as it starts in a stream, and the deltas that complete it."""
    if block["type"] == "thinking":
        first = {"type": "thinking", "thinking": "", "signature": ""}
        return first, [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ]
    if block["type"] == "text":
        return {"type": "text", "text": ""}, [
            {"type": "text_delta", "text": w} for w in words(block["text"])
        ]
    partial = json.dumps(block["input"])
    return {**block, "input": {}}, [{"type": "input_json_delta", "partial_json": partial}]


def _events(message: dict[str, Any]) -> list[tuple[str | None, Any]]:
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {**message["usage"], "output_tokens": 1}
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for i, block in enumerate(message["content"]):
        first, deltas = _deltas(block)
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": first},
            )
        )
        events.append(("ping", {"type": "ping"}))
        for delta in deltas:
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    events.append(("message_delta", {"type": "message_delta", "delta": stop, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events
