"""OpenAI's wire formats, and the APIs that copy them: chat completions (Azure's deployments;
Mistral's flavour when the model is a Mistral one: 9-character call ids, no fingerprint,
usage in the last chunk), legacy text completions, Responses and embeddings."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import struct
import uuid
from typing import Any

from fakes.turns import HEX, Answer, Reply, Turn, created, error, rand, signature, text_of, words

DIMENSIONS = 64
"""The width of a vector unless the request asks for fewer (``dimensions``)."""


def offered(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools as ``{"name", "parameters"}``: chat nests each under ``function``,
    Responses does not."""
    specs = [t.get("function", t) for t in tools]
    return [{"name": s.get("name"), "parameters": s.get("parameters") or {}} for s in specs]


def chat_turn(body: dict[str, Any]) -> Turn:
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    users = [m for m in messages if m.get("role") == "user"]
    return Turn(
        model=str(body.get("model")),
        tools=offered(body.get("tools") or []),
        results=[text_of(m.get("content")) for m in messages if m.get("role") == "tool"],
        last_user=text_of(users[-1].get("content")) if users else "",
        last_text=text_of(last.get("content")),
        answered=last.get("role") == "tool",
    )


def _usage(reply: Reply) -> dict[str, int]:
    inp, out = reply.tokens()
    return {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out}


def _asked_usage(body: dict[str, Any]) -> bool:
    """OpenAI sends a stream's usage only when asked (``stream_options.include_usage``)."""
    return bool((body.get("stream_options") or {}).get("include_usage"))


def chat(body: dict[str, Any], reply: Reply) -> Answer:
    mistral = "mistral" in str(body.get("model"))
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": rand(9) if mistral else "call_" + rand(24),
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for name, args in reply.calls
        ]
        message["content"] = "" if mistral else None
    finish = "tool_calls" if reply.calls else "stop"
    usage = _usage(reply)
    base = {
        "id": uuid.uuid4().hex if mistral else "chatcmpl-" + rand(29),
        "created": created(),
        "model": body.get("model"),
    }
    if not mistral:
        base["system_fingerprint"] = "fp_" + rand(10)
    if not body.get("stream"):
        choice = {"index": 0, "message": message, "finish_reason": finish}
        if not mistral:
            choice["logprobs"] = None
        return Answer({**base, "object": "chat.completion", "choices": [choice], "usage": usage})
    chunk = {**base, "object": "chat.completion.chunk"}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    for i, call in enumerate(message.get("tool_calls") or []):
        deltas.append({"tool_calls": [{"index": i, **call}]})
    deltas += [{"content": w} for w in words(reply.text or "")]
    events: list[tuple[str | None, Any]] = []
    for i, delta in enumerate(deltas):
        last = i == len(deltas) - 1
        choice = {"index": 0, "delta": delta, "finish_reason": finish if last else None}
        events.append(
            (None, {**chunk, "choices": [choice], **({"usage": usage} if last and mistral else {})})
        )
    if not mistral and _asked_usage(body):
        events.append((None, {**chunk, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return Answer(events=events)


def completion_turn(body: dict[str, Any]) -> Turn:
    prompts = body.get("prompt")
    prompt = str(prompts[0] if isinstance(prompts, list) else prompts)
    return Turn(model=str(body.get("model")), tools=[], results=[], last_user=prompt)


def completion(body: dict[str, Any], reply: Reply) -> Answer:
    """A legacy completion: the text goes on from the prompt, after a space."""
    text = " " + (reply.text or "")
    usage = _usage(reply)
    base = {"id": "cmpl-" + rand(29), "object": "text_completion", "created": created()}
    base["model"] = body.get("model")
    if not body.get("stream"):
        choice = {"text": text, "index": 0, "logprobs": None, "finish_reason": "stop"}
        return Answer({**base, "choices": [choice], "usage": usage})
    pieces = re.findall(r"\s*\S+", text)
    events: list[tuple[str | None, Any]] = []
    for i, piece in enumerate(pieces):
        finish = "stop" if i == len(pieces) - 1 else None
        choice = {"text": piece, "index": 0, "logprobs": None, "finish_reason": finish}
        events.append((None, {**base, "choices": [choice]}))
    if _asked_usage(body):
        events.append((None, {**base, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return Answer(events=events)


def _items(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    return [i for i in items if isinstance(i, dict)]


def responses_turn(body: dict[str, Any]) -> Turn:
    items = _items(body)
    last = items[-1] if items else {}
    users = [i for i in items if i.get("role") == "user"]
    return Turn(
        model=str(body.get("model")),
        tools=offered(body.get("tools") or []),
        results=[
            text_of(i.get("output")) for i in items if i.get("type") == "function_call_output"
        ],
        last_user=text_of(users[-1].get("content")) if users else "",
        last_text=text_of(last.get("output", last.get("content"))),
        answered=last.get("type") == "function_call_output",
    )


def unknown_previous(body: dict[str, Any], issued: set[str]) -> Answer | None:
    """A 400 when ``previous_response_id`` names no response this server gave."""
    previous = body.get("previous_response_id")
    if previous is None or previous in issued:
        return None
    return error(400, f"Previous response {previous} not found", "invalid_request_error")


def _output(body: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = []
    if body.get("reasoning"):
        item: dict[str, Any] = {
            "id": "rs_" + rand(40, HEX),
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Plan: use the tools."}],
        }
        if "reasoning.encrypted_content" in (body.get("include") or []):
            item["encrypted_content"] = signature()
        output.append(item)
    for name, args in reply.calls:
        output.append(
            {
                "id": "fc_" + rand(40, HEX),
                "type": "function_call",
                "call_id": "call_" + rand(24),
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
        )
    if reply.text is not None:
        content = [{"type": "output_text", "text": reply.text, "annotations": []}]
        output.append(
            {
                "id": "msg_" + rand(40, HEX),
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": content,
            }
        )
    return output


def responses(body: dict[str, Any], reply: Reply, issued: set[str]) -> Answer:
    """A ``Response``, or its SSE events (``response.created`` … ``response.completed``);
    its id goes into ``issued``, for a later ``previous_response_id`` to name."""
    inp, out = reply.tokens()
    ident = "resp_" + rand(40, HEX)
    issued.add(ident)
    response = {
        "id": ident,
        "object": "response",
        "created_at": created(),
        "status": "completed",
        "model": body.get("model"),
        "output": _output(body, reply),
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": body.get("tools") or [],
        "temperature": body.get("temperature"),
        "top_p": None,
        "reasoning": body.get("reasoning"),
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "usage": {
            "input_tokens": inp,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": out // 2 if body.get("reasoning") else 0},
            "total_tokens": inp + out,
        },
    }
    if not body.get("stream"):
        return Answer(response)
    return Answer(events=_response_events(response))


def _response_events(response: dict[str, Any]) -> list[tuple[str | None, Any]]:
    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": pending}),
        ("response.in_progress", {"response": pending}),
    ]
    for index, item in enumerate(response["output"]):
        added = {"output_index": index, "item": {**item, "status": "in_progress"}}
        events.append(("response.output_item.added", added))
        if item["type"] == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
            events.append(("response.content_part.added", {**ids, "part": part}))
            for word in words(text):
                events.append(
                    ("response.output_text.delta", {**ids, "delta": word, "logprobs": []})
                )
            events.append(("response.output_text.done", {**ids, "text": text, "logprobs": []}))
            events.append(("response.content_part.done", {**ids, "part": item["content"][0]}))
        events.append(("response.output_item.done", {"output_index": index, "item": item}))
    events.append(("response.completed", {"response": response}))
    return [
        (name, {"type": name, "sequence_number": number, **data})
        for number, (name, data) in enumerate(events)
    ]


def vector(text: str, width: int = DIMENSIONS) -> list[float]:
    """A bag-of-words vector (similar texts are close) plus random noise, as float32."""
    values = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z]+", text.lower()):
        values[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    noisy = [v + random.uniform(-0.01, 0.01) for v in values[:width]]
    return list(struct.unpack(f"<{len(noisy)}f", struct.pack(f"<{len(noisy)}f", *noisy)))


def embeddings(body: dict[str, Any]) -> Answer:
    """Vectors as float lists or, when asked (the OpenAI client asks by default), base64."""
    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
    data = []
    for index, text in enumerate(texts):
        values = vector(str(text), int(body.get("dimensions") or DIMENSIONS))
        embedding: Any = values
        if body.get("encoding_format") == "base64":
            embedding = base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    tokens = sum(len(str(t).split()) for t in texts)
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return Answer({"object": "list", "data": data, "model": body.get("model"), "usage": usage})
