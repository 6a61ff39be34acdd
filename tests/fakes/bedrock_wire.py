"""AWS Bedrock's Converse wire format: ``tooluse_…`` ids, camelCase usage and a request id
header."""

from __future__ import annotations

import random
import uuid
from typing import Any

from fakes.turns import Answer, Reply, Turn, conversation, rand, said_of, text_of


def _kind(block: dict[str, Any]) -> tuple[str, str] | None:
    if "toolResult" in block:
        return "result", text_of(block["toolResult"].get("content"))
    return ("text", block["text"]) if "text" in block else None


def converse_turn(body: dict[str, Any]) -> Turn:
    config = body.get("toolConfig") or {}
    specs = [t["toolSpec"] for t in config.get("tools") or [] if "toolSpec" in t]
    tools = [
        {"name": s.get("name"), "parameters": (s.get("inputSchema") or {}).get("json") or {}}
        for s in specs
    ]
    said = said_of(body.get("messages") or [], "content", _kind)
    return conversation(str(body.get("model")), tools, said)


def converse(body: dict[str, Any], reply: Reply) -> Answer:
    content: list[dict[str, Any]] = []
    if reply.text is not None:
        content.append({"text": reply.text})
    for name, args in reply.calls:
        content.append(
            {"toolUse": {"toolUseId": "tooluse_" + rand(22), "name": name, "input": args}}
        )
    inp, out = reply.tokens()
    payload = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if reply.calls else "end_turn",
        "usage": {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out},
        "metrics": {"latencyMs": random.randint(100, 900)},
    }
    return Answer(payload, headers=[("x-amzn-RequestId", str(uuid.uuid4()))])
