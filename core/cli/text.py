"""Turning recorded requests and responses into lines a person reads: roles, content, tool calls.

Integrations store responses in their framework's shape (LangChain generations,
LlamaIndex chat responses, plain function results); this finds the messages in any
of them instead of printing a wall of escaped JSON.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from ..diff import short

ROLE_NAMES = {
    "ai": "assistant",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "human": "user",
}
WIDTH = 100


def _role(message: dict[str, Any], fallback: str) -> str:
    role = message.get("role") or message.get("type") or fallback
    return ROLE_NAMES.get(str(role), str(role))


def content_text(content: Any) -> str:
    """Text of a message's content: a string, or the text of its blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict) and block.get("type") in (
                "tool_use",
                "tool_call",
                "function_call",
            ):
                continue
            elif block is not None:
                parts.append(short(block, WIDTH))
        return "".join(parts)
    if content is None:
        return ""
    return short(content, WIDTH)


def tool_call_lines(message: dict[str, Any]) -> list[str]:
    lines = []
    for call in message.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        raw_function = call.get("function")
        function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
        name = call.get("name") or function.get("name") or "?"
        args = call.get("args", call.get("arguments", function.get("arguments")))
        if isinstance(args, str):
            with contextlib.suppress(ValueError):
                args = json.loads(args)
        ident = f" [{call['id']}]" if call.get("id") else ""
        lines.append(f"→ tool call {name}({short(args, WIDTH - len(str(name)))}){ident}")
    return lines


def message_lines(message: dict[str, Any], fallback_role: str = "message") -> list[str]:
    role = _role(message, fallback_role)
    tag = f" [{message['tool_call_id']}]" if message.get("tool_call_id") else ""
    text = content_text(message.get("content"))
    lines = [
        f"{role}{tag}: {line}" if i == 0 else f"  {line}"
        for i, line in enumerate(text.splitlines() or [""])
    ]
    return lines + [f"  {line}" for line in tool_call_lines(message)]


def find_messages(value: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    """Message-like dicts in a response, outermost first (``{"type", "data"}`` wrappers unwrapped)."""
    if depth > 8:
        return
    if isinstance(value, dict):
        data = value.get("data")
        if isinstance(data, dict) and ("content" in data or "tool_calls" in data):
            yield {**data, "type": data.get("type") or value.get("type")}
            return
        if "content" in value and ("role" in value or "type" in value or "tool_calls" in value):
            yield value
            return
        for child in value.values():
            yield from find_messages(child, depth + 1)
    elif isinstance(value, list):
        for child in value:
            yield from find_messages(child, depth + 1)


def response_lines(response: Any) -> list[str]:
    """A readable rendering of a recorded response."""
    if isinstance(response, str):
        return response.splitlines() or [""]
    if isinstance(response, dict) and set(response) == {"error"}:
        error = response["error"] if isinstance(response["error"], dict) else {}
        status = f" ({error['status']})" if error.get("status") else ""
        return [f"raises {error.get('type', '?')}{status}: {short(error.get('message'), WIDTH)}"]
    if isinstance(response, dict) and isinstance(response.get("vectors"), dict):
        body = response["vectors"]
        count = len(body.get("data") or [])
        return [f"{count} vector{'s' if count != 1 else ''} of {body.get('dim', '?')} "
                f"{body.get('dtype', 'float32')}"]  # fmt: skip
    messages = list(find_messages(response))
    if (
        isinstance(response, dict)
        and isinstance(response.get("chunks"), list)
        and len(messages) > 1
    ):
        joined = {
            "role": _role(messages[0], "assistant"),
            "content": "".join(content_text(m.get("content")) for m in messages),
            "tool_calls": [c for m in messages for c in (m.get("tool_calls") or [])],
        }
        return [f"(streamed, {len(messages)} chunks)", *message_lines(joined)]
    if messages:
        return [line for m in messages for line in message_lines(m, "assistant")]
    if isinstance(response, dict) and isinstance(response.get("text"), str):
        return response["text"].splitlines() or [""]
    return [short(response, WIDTH * 3)]


def request_lines(request: dict[str, Any]) -> list[str]:
    """Parameters, tools and messages of a canonical request."""
    lines = []
    params = request.get("params")
    if isinstance(params, dict) and params:
        lines.append(
            "params: " + ", ".join(f"{k}={short(v, 40)}" for k, v in sorted(params.items()))
        )
    tools = request.get("tools")
    if isinstance(tools, list) and tools:
        names = []
        for tool in tools:
            fn = tool.get("function") if isinstance(tool, dict) else None
            name = (fn or {}).get("name") if isinstance(fn, dict) else None
            names.append(str(name or (tool.get("name") if isinstance(tool, dict) else None) or "?"))
        lines.append("tools: " + ", ".join(names))
    for field in ("tool_choice", "response_format"):
        if request.get(field) not in (None, "", {}):
            lines.append(f"{field}: {short(request[field], WIDTH)}")
    messages = request.get("messages")
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, dict):
                lines.extend(message_lines(message))
    elif "prompt" in request:
        lines.append(f"prompt: {short(request['prompt'], WIDTH * 3)}")
    elif request.get("kind") == "embedding" and isinstance(request.get("texts"), list):
        lines.append(f"embed {request.get('input_type', 'text')}:")
        lines.extend(f"  {short(text, WIDTH)}" for text in request["texts"])
    elif "args" in request:
        lines.append(f"{request.get('function', 'call')}({short(request['args'], WIDTH * 2)})")
    return lines
