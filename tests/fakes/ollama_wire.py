"""Ollama's ``/api/chat`` wire format: no ids, nanosecond durations, NDJSON streaming (the
default: a stream unless the request says ``"stream": false``)."""

from __future__ import annotations

import random
import string
import time
from typing import Any

from fakes.openai_wire import chat_turn
from fakes.turns import Answer, Reply, Turn, rand, words


def ollama_turn(body: dict[str, Any]) -> Turn:
    """The same messages as OpenAI's chat, with the tools in the same shape."""
    return chat_turn(body)


def ollama(body: dict[str, Any], reply: Reply) -> Answer:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{rand(9, string.digits)}Z"
    base = {"model": body.get("model"), "created_at": stamp}
    prompt, out = reply.tokens()
    final = {
        **base,
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
        "total_duration": random.randint(10**8, 10**9),
        "load_duration": random.randint(10**6, 10**7),
        "prompt_eval_count": prompt,
        "prompt_eval_duration": random.randint(10**6, 10**8),
        "eval_count": out,
        "eval_duration": random.randint(10**6, 10**8),
    }
    pieces: list[dict[str, Any]] = []
    if reply.calls:
        calls = [{"function": {"name": n, "arguments": a}} for n, a in reply.calls]
        pieces.append({"role": "assistant", "content": "", "tool_calls": calls})
    else:
        pieces += [{"role": "assistant", "content": w} for w in words(reply.text or "")]
    if body.get("stream") is False:
        merged = {"role": "assistant", "content": "".join(p["content"] for p in pieces)}
        for p in pieces:
            if "tool_calls" in p:
                merged["tool_calls"] = p["tool_calls"]
        return Answer({**final, "message": merged})
    lines = [{**base, "message": p, "done": False} for p in pieces]
    return Answer(lines=[*lines, final])
