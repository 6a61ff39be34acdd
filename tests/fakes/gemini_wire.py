"""Gemini's ``generateContent`` wire format: no call ids, a fresh thought signature on the
first function call and on the text, SSE chunks for ``streamGenerateContent``."""

from __future__ import annotations

from typing import Any

from fakes.turns import Answer, Reply, Turn, conversation, rand, said_of, signature, text_of, words


def _kind(part: dict[str, Any]) -> tuple[str, str] | None:
    if "functionResponse" in part:
        return "result", text_of(part["functionResponse"].get("response"))
    return ("text", part["text"]) if "text" in part else None


def gemini_turn(body: dict[str, Any]) -> Turn:
    tools = [
        {"name": f.get("name"), "parameters": f.get("parameters") or {}}
        for t in body.get("tools") or []
        for f in t.get("functionDeclarations") or t.get("function_declarations") or []
    ]
    said = said_of(body.get("contents") or [], "parts", _kind)
    return conversation(str(body.get("model")), tools, said)


def gemini(body: dict[str, Any], reply: Reply, stream: bool) -> Answer:
    parts: list[dict[str, Any]] = []
    for i, (name, args) in enumerate(reply.calls):
        part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
        if i == 0:
            part["thoughtSignature"] = signature()
        parts.append(part)
    if reply.text is not None:
        parts.append({"text": reply.text, "thoughtSignature": signature()})
    prompt, out = reply.tokens()
    answer = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": out,
            "totalTokenCount": prompt + out,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": rand(22),
    }
    if not stream:
        return Answer(answer)
    chunks: list[list[dict[str, Any]]] = [parts]
    if reply.text is not None:
        chunks = [[{"text": w}] for w in words(reply.text)]
        chunks[-1][0]["thoughtSignature"] = parts[-1]["thoughtSignature"]
    events: list[tuple[str | None, Any]] = []
    for i, chunk_parts in enumerate(chunks):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": chunk_parts}, "index": 0}
        if i == len(chunks) - 1:
            candidate["finishReason"] = "STOP"
        events.append((None, {**answer, "candidates": [candidate]}))
    return Answer(events=events)
