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

from .. import cancellation
from ..diff import short
from . import exchanges

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
    """Text of a message's content: a string, or the text of its blocks (thinking in brackets)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict) and block.get("type") in ("thinking", "reasoning"):
                thought = block.get("content", block.get("thinking", block.get("reasoning")))
                parts.append(f"(thinking: {short(thought, WIDTH)}) ")
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


def _arguments(args: Any) -> Any:
    if isinstance(args, str):
        with contextlib.suppress(ValueError):
            return json.loads(args)
    return args


def call_text(call: dict[str, Any]) -> str:
    """``→ name(args)``: a tool call as a person reads it (ids left out: they are noise)."""
    raw_function = call.get("function")
    function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
    name = call.get("name") or call.get("tool_name") or function.get("name") or "?"
    args = call.get(
        "args", call.get("arguments", call.get("tool_kwargs", function.get("arguments")))
    )
    args = _arguments(args)
    if isinstance(args, dict):
        shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    else:
        shown = "" if args in (None, "") else json.dumps(args, ensure_ascii=False)
    return f"→ {name}({short(shown, WIDTH - len(str(name)))})"


def tool_call_lines(message: dict[str, Any]) -> list[str]:
    """A line per tool call (none when a hand-edited file holds something else than a list)."""
    calls = message.get("tool_calls")
    return [call_text(c) for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def message_lines(message: dict[str, Any], fallback_role: str = "message") -> list[str]:
    role = _role(message, fallback_role)
    if role == "tool":
        name = message.get("name")
        role = f"tool {name}" if name else "tool"
    text = content_text(message.get("content"))
    calls = tool_call_lines(message)
    if not text and calls:
        return [f"{role}: {calls[0]}", *(f"  {line}" for line in calls[1:])]
    lines = [
        f"{role}: {line}" if i == 0 else f"  {line}"
        for i, line in enumerate(text.splitlines() or [""])
    ]
    return lines + [f"  {line}" for line in calls]


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


# -- answers: what a recorded response said, whatever framework stored it --------------------------


def _llama_message(message: dict[str, Any]) -> dict[str, Any]:
    """A LlamaIndex ``ChatMessage`` (role + blocks) as role, content and tool calls."""
    text, calls, thinking = [], [], []
    for block in message.get("blocks") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("block_type")
        if kind == "text":
            text.append(str(block.get("text") or ""))
        elif kind == "tool_call":
            calls.append({"name": block.get("tool_name"), "args": block.get("tool_kwargs")})
        elif kind == "thinking" and block.get("content"):
            thinking.append(str(block["content"]))
    if not calls:
        extra = message.get("additional_kwargs")
        for call in (extra or {}).get("tool_calls") or [] if isinstance(extra, dict) else []:
            data = call.get("data", call) if isinstance(call, dict) else None
            if isinstance(data, dict):
                calls.append(data)
    content = "".join(text)
    if thinking:
        content = f"(thinking: {short(' '.join(thinking), WIDTH)}) {content}"
    return {"role": message.get("role") or "assistant", "content": content, "tool_calls": calls}


def _langchain_chunks(chunks: list[Any]) -> dict[str, Any] | None:
    """LangChain stream chunks (``ChatGenerationChunk``) joined into one message."""
    text: list[str] = []
    calls: dict[Any, dict[str, Any]] = {}
    found = False
    for chunk in chunks:
        message = chunk.get("message") if isinstance(chunk, dict) else None
        data = message.get("data") if isinstance(message, dict) else None
        if not isinstance(data, dict):
            if isinstance(chunk, dict) and isinstance(chunk.get("text"), str):
                text.append(chunk["text"])
                found = True
            continue
        found = True
        text.append(content_text(data.get("content")))
        for piece in data.get("tool_call_chunks") or []:
            if not isinstance(piece, dict):
                continue
            slot = calls.setdefault(piece.get("index", len(calls)), {"name": None, "args": ""})
            slot["name"] = slot["name"] or piece.get("name")
            slot["args"] += str(piece.get("args") or "")
        for call in data.get("tool_calls") or []:
            if isinstance(call, dict) and call.get("name") and not data.get("tool_call_chunks"):
                calls[len(calls)] = {"name": call["name"], "args": call.get("args")}
    if not found:
        return None
    return {"role": "assistant", "content": "".join(text), "tool_calls": list(calls.values())}


def answer_of(response: Any) -> tuple[dict[str, Any] | None, str]:
    """(the answer as a message, a note such as "streamed, 12 chunks") for a recorded response.

    LangChain stores generations (``{"type", "data"}`` messages) or stream chunks;
    LlamaIndex stores ``{"response": ChatResponse}`` or ``{"chunks": [...]}`` whose
    messages are cumulative, so the last chunk holds the whole answer.
    """
    if not isinstance(response, dict):
        return None, ""
    exchange = exchanges.answer(response)  # a provider SDK's wire response
    if exchange is not None:
        return exchange
    chunks = response.get("chunks")
    if isinstance(chunks, list):
        return _streamed_answer(chunks, response.get("complete") is False)
    inner = response.get("response")
    if isinstance(inner, dict) and isinstance(inner.get("message"), dict):
        return _llama_message(inner["message"]), ""
    if isinstance(inner, dict) and isinstance(inner.get("text"), str):
        return {"role": "assistant", "content": inner["text"]}, ""
    return _generated_answer(response.get("generations")), ""


def _streamed_answer(chunks: list[Any], stopped: bool) -> tuple[dict[str, Any] | None, str]:
    note = f"streamed, {len(chunks)} chunk{'s' if len(chunks) != 1 else ''}"
    if stopped:
        note += ", stopped early"
    last = chunks[-1] if chunks else None
    message = last.get("message") if isinstance(last, dict) else None
    if isinstance(message, dict) and "blocks" in message:
        return _llama_message(message), note
    if isinstance(last, dict) and "delta" in last and isinstance(last.get("text"), str):
        return {"role": "assistant", "content": last["text"]}, note  # LlamaIndex completion
    return _langchain_chunks(chunks), note


def _generated_answer(generations: Any) -> dict[str, Any] | None:
    """The first generation of a LangChain response (chat or completion) as a message."""
    if not isinstance(generations, list) or not generations:
        return None
    first = generations[0]
    if isinstance(first, list) and first:  # completion LLMs: one list per prompt
        first = first[0]
    if not isinstance(first, dict):
        return None
    message = first.get("message")
    data = message.get("data") if isinstance(message, dict) else None
    if isinstance(data, dict):
        content, calls = data.get("content"), data.get("tool_calls") or []
        return {"role": "assistant", "content": content, "tool_calls": calls}
    if isinstance(first.get("text"), str):
        return {"role": "assistant", "content": first["text"]}
    return None


def _no_answer_lines(response: Any) -> list[str]:
    """A recorded error, or a call the program cancelled, in one line (else none)."""
    cancelled = cancellation.recorded_ms(response)
    if cancelled is not None:
        return [f"cancelled by the program after {cancelled:.0f} ms (a replay waits for that)"]
    if isinstance(response, dict) and set(response) == {"error"}:
        error = response["error"] if isinstance(response["error"], dict) else {}
        status = f" ({error['status']})" if error.get("status") else ""
        return [f"raises {error.get('type', '?')}{status}: {short(error.get('message'), WIDTH)}"]
    return []


def response_lines(response: Any) -> list[str]:
    """A readable rendering of a recorded response: the answer, its tool calls, its text."""
    answer, note = answer_of(response)
    vectors = exchanges.vector_lines(response)
    if vectors:
        return vectors
    if answer is not None:
        lines = message_lines(answer, "assistant")
        return [f"({note})", *lines] if note else lines
    if isinstance(response, str):
        return response.splitlines() or [""]
    failed = _no_answer_lines(response)
    if failed:
        return failed
    if isinstance(response, dict) and isinstance(response.get("vectors"), dict):
        body = response["vectors"]
        count = len(body.get("data") or [])
        return [f"{count} vector{'s' if count != 1 else ''} of {body.get('dim', '?')} "
                f"{body.get('dtype', 'float32')}"]  # fmt: skip
    messages = list(find_messages(response))
    if messages:
        return [line for m in messages for line in message_lines(m, "assistant")]
    if isinstance(response, dict) and isinstance(response.get("text"), str):
        return response["text"].splitlines() or [""]
    return [short(response, WIDTH * 3)]


def meaning(response: Any) -> Any:
    """What a response says, without provider ids, fingerprints, usage or timestamps."""
    answer, _ = answer_of(response)
    if answer is None:
        return response
    calls = [call_text(c) for c in answer.get("tool_calls") or [] if isinstance(c, dict)]
    return {"content": content_text(answer.get("content")), "tool_calls": calls}


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
        lines.append("tools: " + ", ".join(_tool_name(tool) for tool in tools))
    for field in ("tool_choice", "response_format"):
        if request.get(field) not in (None, "", {}):
            lines.append(f"{field}: {short(request[field], WIDTH)}")
    return lines + _asked_lines(request)


def _tool_name(tool: Any) -> str:
    fn = tool.get("function") if isinstance(tool, dict) else None
    name = (fn or {}).get("name") if isinstance(fn, dict) else None
    return str(name or (tool.get("name") if isinstance(tool, dict) else None) or "?")


def _asked_lines(request: dict[str, Any]) -> list[str]:
    """What the request asks: its messages, prompt, texts to embed, body or arguments."""
    messages = request.get("messages")
    if isinstance(messages, list):
        return [line for m in messages if isinstance(m, dict) for line in message_lines(m)]
    if "prompt" in request:
        return [f"prompt: {short(request['prompt'], WIDTH * 3)}"]
    if request.get("kind") == "embedding" and isinstance(request.get("texts"), list):
        texts = request["texts"]
        return [f"embed {request.get('input_type', 'text')}:"] + [
            f"  {short(text, WIDTH)}" for text in texts
        ]
    if request.get("kind") == "embedding" and "input" in request:  # an SDK's own call
        given = request["input"]
        return ["embed:"] + [
            f"  {short(t, WIDTH)}" for t in (given if isinstance(given, list) else [given])
        ]
    if request.get("kind") == "http":
        return [f"{request.get('method')} {request.get('path')} {short(request.get('body'))}"]
    if "args" in request:
        return [f"{request.get('function', 'call')}({short(request['args'], WIDTH * 2)})"]
    return []
