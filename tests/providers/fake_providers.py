"""One local HTTP server speaking seven providers' wire formats, each the way the real API does.

A fake *provider*, not a mock of a client: the real client packages (langchain-openai,
langchain-anthropic, langchain-google-genai, langchain-mistralai, langchain-ollama,
langchain-aws and the LlamaIndex ones) talk to it over HTTP on 127.0.0.1. The request path
picks the format, as the providers' own URLs do:

- ``…/chat/completions``: OpenAI chat completions (JSON or SSE); Azure's
  ``/openai/deployments/<name>/chat/completions``; Mistral when the model is a Mistral one
  (9-character tool-call ids).
- ``…/responses``: OpenAI Responses (``rs_…`` reasoning items, ``fc_…``/``msg_…`` item ids,
  encrypted reasoning when asked for).
- ``…/v1/messages``: Anthropic Messages (``toolu_…`` ids, extended thinking with signatures,
  SSE streaming).
- ``…:generateContent`` / ``…:streamGenerateContent``: Gemini (no call ids, random thought
  signatures on function-call parts).
- ``…/api/chat``: Ollama (no ids, NDJSON streaming).
- ``…/converse``: AWS Bedrock Converse.

Every answer carries fresh random ids, timestamps and usage. The model is a script: offered
tools and no tool result yet → two parallel calls (weather and time in Paris); two results
→ one more call (weather in Lyon); three → a final text quoting the results; no tools → it
echoes the last user text. Every request is counted in ``calls``.
"""

from __future__ import annotations

import base64
import json
import os
import random
import string
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_REQUESTS = 2000  # bounded: a runaway client cannot keep the server busy forever


def rand(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(random.choice(alphabet) for _ in range(n))


def signature() -> str:
    return base64.b64encode(os.urandom(48)).decode()


def plan(n_results: int, has_tools: bool, results: list[str], last_user: str) -> dict[str, Any]:
    """The script: ``{"calls": [(name, args)…]}`` or ``{"text": …}``."""
    if has_tools and n_results == 0:
        return {"calls": [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]}
    if has_tools and n_results == 2:
        return {"calls": [("get_weather", {"city": "Lyon"})]}
    if has_tools:
        return {"text": "Summary: " + " | ".join(results)}
    return {"text": f"You said: {last_user}"}


def generic_plan(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The script for any other program (OpenAI chat format): call the first offered tool
    (the first one that is not a hand-off, after a hand-off) with arguments made from its
    schema, and answer with text once a tool has answered."""
    last = messages[-1] if messages else {}
    handed_over = _text_of(last.get("content")).startswith("Successfully transferred to ")
    if tools and (last.get("role") != "tool" or handed_over):
        names = [t["function"]["name"] for t in tools]
        own = [n for n in names if not n.startswith("transfer_")]
        chosen = own[0] if handed_over and own else names[0]
        schema = next(t["function"] for t in tools if t["function"]["name"] == chosen)
        props = (schema.get("parameters") or {}).get("properties") or {}
        args = {
            k: ("FAANG headcount 2024" if v.get("type") == "string" else 2)
            for k, v in props.items()
        }
        return {"calls": [(chosen, args)]}
    return {"text": "Done: " + _text_of(last.get("content"))[:120]}


def words(text: str) -> list[str]:
    parts = text.split(" ")
    return [p + (" " if i < len(parts) - 1 else "") for i, p in enumerate(parts)]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(c) for c in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output", "json"):
            if key in content:
                return _text_of(content[key])
        return json.dumps(content, sort_keys=True)
    return "" if content is None else str(content)


class FakeProviders:
    """The server; ``with FakeProviders() as fake: fake.url``."""

    def __init__(self) -> None:
        self.calls = 0
        self.paths: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.headers.get("Content-Encoding") == "gzip":
                    import gzip

                    raw = gzip.decompress(raw)
                body = json.loads(raw or b"{}")
                owner.calls += 1
                owner.paths.append(self.path)
                if owner.calls > MAX_REQUESTS:
                    self._json({"error": "too many requests"}, 429)
                    return
                path = self.path.split("?")[0]
                try:
                    if path.endswith("/chat/completions"):
                        self._openai_chat(body)
                    elif path.endswith("/responses"):
                        self._responses(body)
                    elif path.endswith("/v1/messages"):
                        self._anthropic(body)
                    elif ":generateContent" in path or ":streamGenerateContent" in path:
                        self._gemini(body, path)
                    elif path.endswith("/api/chat"):
                        self._ollama(body)
                    elif path.endswith("/converse"):
                        self._bedrock(body)
                    else:
                        self._json({"error": f"unknown path {path}"}, 404)
                except Exception as exc:
                    self._json({"error": repr(exc)}, 500)

            # -- plumbing ------------------------------------------------------------

            def _json(self, payload: Any, status: int = 200, headers: Any = ()) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _events(self, lines: list[bytes], content_type: str) -> None:
                data = b"".join(lines)
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, events: list[tuple[str | None, Any]]) -> None:
                out = []
                for name, payload in events:
                    text = payload if isinstance(payload, str) else json.dumps(payload)
                    head = f"event: {name}\n" if name else ""
                    out.append(f"{head}data: {text}\n\n".encode())
                self._events(out, "text/event-stream")

            # -- OpenAI chat completions, Azure, Mistral -----------------------------

            def _openai_chat(self, body: dict[str, Any]) -> None:
                messages = body.get("messages") or []
                results = [_text_of(m.get("content")) for m in messages if m.get("role") == "tool"]
                last_user = next(
                    (_text_of(m["content"]) for m in reversed(messages) if m["role"] == "user"), ""
                )
                tools = body.get("tools") or []
                if tools and "get_weather" not in [t["function"]["name"] for t in tools]:
                    step = generic_plan(messages, tools)
                else:
                    step = plan(len(results), bool(tools), results, last_user)
                mistral = "mistral" in str(body.get("model"))

                def call_id() -> str:
                    return rand(9) if mistral else "call_" + rand(24)

                message: dict[str, Any] = {"role": "assistant", "content": step.get("text", "")}
                if "calls" in step:
                    message["tool_calls"] = [
                        {
                            "id": call_id(),
                            "type": "function",
                            "function": {"name": n, "arguments": json.dumps(a)},
                        }
                        for n, a in step["calls"]
                    ]
                    message["content"] = "" if mistral else None
                finish = "tool_calls" if "calls" in step else "stop"
                ident = uuid.uuid4().hex if mistral else "chatcmpl-" + rand(29)
                created = int(time.time()) - random.randint(0, 50)
                usage = {
                    "prompt_tokens": random.randint(20, 200),
                    "completion_tokens": random.randint(5, 50),
                }
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                base = {"id": ident, "created": created, "model": body.get("model")}
                if not mistral:
                    base["system_fingerprint"] = "fp_" + rand(10)
                if not body.get("stream"):
                    choice = {"index": 0, "message": message, "finish_reason": finish}
                    if not mistral:
                        choice["logprobs"] = None
                    self._json(
                        {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
                    )
                    return
                chunk = {**base, "object": "chat.completion.chunk"}
                deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
                for i, call in enumerate(message.get("tool_calls") or []):
                    deltas.append({"tool_calls": [{"index": i, **call}]})
                for word in words(message["content"] or "") if "text" in step else []:
                    deltas.append({"content": word})
                events: list[tuple[str | None, Any]] = []
                for i, delta in enumerate(deltas):
                    last = i == len(deltas) - 1
                    choice = {"index": 0, "delta": delta, "finish_reason": finish if last else None}
                    payload = {**chunk, "choices": [choice]}
                    if last and mistral:
                        payload["usage"] = usage
                    events.append((None, payload))
                if not mistral:
                    events.append((None, {**chunk, "choices": [], "usage": usage}))
                events.append((None, "[DONE]"))
                self._sse(events)

            # -- OpenAI Responses ----------------------------------------------------

            def _responses(self, body: dict[str, Any]) -> None:
                items = body.get("input") or []
                if isinstance(items, str):
                    items = [{"role": "user", "content": items}]
                results = [
                    _text_of(i.get("output"))
                    for i in items
                    if isinstance(i, dict) and i.get("type") == "function_call_output"
                ]
                last_user = next(
                    (
                        _text_of(i.get("content"))
                        for i in reversed(items)
                        if isinstance(i, dict) and i.get("role") == "user"
                    ),
                    "",
                )
                step = plan(len(results), bool(body.get("tools")), results, last_user)
                output: list[dict[str, Any]] = []
                if body.get("reasoning"):
                    item: dict[str, Any] = {
                        "id": "rs_" + rand(40, string.hexdigits.lower()),
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": "Plan: use the tools."}],
                    }
                    if "reasoning.encrypted_content" in (body.get("include") or []):
                        item["encrypted_content"] = signature()
                    output.append(item)
                for name, args in step.get("calls", []):
                    output.append(
                        {
                            "id": "fc_" + rand(40, string.hexdigits.lower()),
                            "type": "function_call",
                            "call_id": "call_" + rand(24),
                            "name": name,
                            "arguments": json.dumps(args),
                            "status": "completed",
                        }
                    )
                if "text" in step:
                    output.append(
                        {
                            "id": "msg_" + rand(40, string.hexdigits.lower()),
                            "type": "message",
                            "role": "assistant",
                            "status": "completed",
                            "content": [
                                {"type": "output_text", "text": step["text"], "annotations": []}
                            ],
                        }
                    )
                inp, out = random.randint(20, 200), random.randint(5, 50)
                self._json(
                    {
                        "id": "resp_" + rand(40, string.hexdigits.lower()),
                        "object": "response",
                        "created_at": int(time.time()) - random.randint(0, 50),
                        "status": "completed",
                        "model": body.get("model"),
                        "output": output,
                        "parallel_tool_calls": True,
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
                            "output_tokens_details": {"reasoning_tokens": out // 2},
                            "total_tokens": inp + out,
                        },
                    }
                )

            # -- Anthropic -----------------------------------------------------------

            def _anthropic(self, body: dict[str, Any]) -> None:
                results = []
                last_user = ""
                for m in body.get("messages") or []:
                    content = m.get("content")
                    if isinstance(content, str):
                        last_user = content if m["role"] == "user" else last_user
                        continue
                    for block in content or []:
                        if block.get("type") == "tool_result":
                            results.append(_text_of(block.get("content")))
                        elif block.get("type") == "text" and m["role"] == "user":
                            last_user = block["text"]
                step = plan(len(results), bool(body.get("tools")), results, last_user)
                content: list[dict[str, Any]] = []
                if (body.get("thinking") or {}).get("type") == "enabled":
                    content.append(
                        {
                            "type": "thinking",
                            "thinking": "I need the tools.",
                            "signature": signature(),
                        }
                    )
                if "text" in step:
                    content.append({"type": "text", "text": step["text"]})
                for name, args in step.get("calls", []):
                    content.append(
                        {
                            "type": "tool_use",
                            "id": "toolu_01" + rand(22),
                            "name": name,
                            "input": args,
                        }
                    )
                message = {
                    "id": "msg_01" + rand(22),
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model"),
                    "content": content,
                    "stop_reason": "tool_use" if "calls" in step else "end_turn",
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": random.randint(20, 200),
                        "output_tokens": random.randint(5, 50),
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                    },
                }
                headers = [("request-id", "req_" + rand(24))]
                if not body.get("stream"):
                    self._json(message, headers=headers)
                    return
                start = {**message, "content": [], "stop_reason": None}
                start["usage"] = {**message["usage"], "output_tokens": 1}
                events: list[tuple[str | None, Any]] = [
                    ("message_start", {"type": "message_start", "message": start})
                ]
                for i, block in enumerate(content):
                    kind = block["type"]
                    if kind == "thinking":
                        first = {"type": "thinking", "thinking": "", "signature": ""}
                        deltas = [
                            {"type": "thinking_delta", "thinking": block["thinking"]},
                            {"type": "signature_delta", "signature": block["signature"]},
                        ]
                    elif kind == "text":
                        first = {"type": "text", "text": ""}
                        deltas = [{"type": "text_delta", "text": w} for w in words(block["text"])]
                    else:
                        first = {**block, "input": {}}
                        deltas = [
                            {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                        ]
                    events.append(
                        (
                            "content_block_start",
                            {"type": "content_block_start", "index": i, "content_block": first},
                        )
                    )
                    for delta in deltas:
                        events.append(
                            (
                                "content_block_delta",
                                {"type": "content_block_delta", "index": i, "delta": delta},
                            )
                        )
                    events.append(
                        ("content_block_stop", {"type": "content_block_stop", "index": i})
                    )
                events.append(
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": message["usage"]["output_tokens"]},
                        },
                    )
                )
                events.append(("message_stop", {"type": "message_stop"}))
                self._sse(events)

            # -- Gemini --------------------------------------------------------------

            def _gemini(self, body: dict[str, Any], path: str) -> None:
                results = []
                last_user = ""
                for c in body.get("contents") or []:
                    for part in c.get("parts") or []:
                        if "functionResponse" in part:
                            results.append(_text_of(part["functionResponse"].get("response")))
                        elif "text" in part and c.get("role") == "user":
                            last_user = part["text"]
                step = plan(len(results), bool(body.get("tools")), results, last_user)
                parts: list[dict[str, Any]] = []
                for i, (name, args) in enumerate(step.get("calls", [])):
                    part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
                    if i == 0:
                        part["thoughtSignature"] = signature()
                    parts.append(part)
                if "text" in step:
                    parts.append({"text": step["text"], "thoughtSignature": signature()})
                prompt, out = random.randint(20, 200), random.randint(5, 50)
                answer = {
                    "candidates": [
                        {
                            "content": {"role": "model", "parts": parts},
                            "finishReason": "STOP",
                            "index": 0,
                        }
                    ],
                    "usageMetadata": {
                        "promptTokenCount": prompt,
                        "candidatesTokenCount": out,
                        "totalTokenCount": prompt + out,
                    },
                    "modelVersion": "gemini-2.5-flash",
                    "responseId": rand(22),
                }
                if ":streamGenerateContent" not in path:
                    self._json(answer)
                    return
                chunks = []
                if "text" in step:
                    for w in words(step["text"]):
                        chunks.append([{"text": w}])
                    chunks[-1][0]["thoughtSignature"] = parts[-1]["thoughtSignature"]
                else:
                    chunks.append(parts)
                events: list[tuple[str | None, Any]] = []
                for i, chunk_parts in enumerate(chunks):
                    candidate: dict[str, Any] = {
                        "content": {"role": "model", "parts": chunk_parts},
                        "index": 0,
                    }
                    if i == len(chunks) - 1:
                        candidate["finishReason"] = "STOP"
                    events.append((None, {**answer, "candidates": [candidate]}))
                self._sse(events)

            # -- Ollama --------------------------------------------------------------

            def _ollama(self, body: dict[str, Any]) -> None:
                messages = body.get("messages") or []
                results = [_text_of(m.get("content")) for m in messages if m.get("role") == "tool"]
                last_user = next(
                    (_text_of(m["content"]) for m in reversed(messages) if m["role"] == "user"), ""
                )
                step = plan(len(results), bool(body.get("tools")), results, last_user)
                stamp = (
                    time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
                    + f".{rand(9, string.digits)}Z"
                )
                base = {"model": body.get("model"), "created_at": stamp}
                final = {
                    **base,
                    "message": {"role": "assistant", "content": ""},
                    "done": True,
                    "done_reason": "stop",
                    "total_duration": random.randint(10**8, 10**9),
                    "load_duration": random.randint(10**6, 10**7),
                    "prompt_eval_count": random.randint(20, 200),
                    "prompt_eval_duration": random.randint(10**6, 10**8),
                    "eval_count": random.randint(5, 50),
                    "eval_duration": random.randint(10**6, 10**8),
                }
                pieces: list[dict[str, Any]] = []
                if "calls" in step:
                    calls = [{"function": {"name": n, "arguments": a}} for n, a in step["calls"]]
                    pieces.append({"role": "assistant", "content": "", "tool_calls": calls})
                else:
                    pieces += [{"role": "assistant", "content": w} for w in words(step["text"])]
                if body.get("stream") is False:
                    merged = {"role": "assistant", "content": "".join(p["content"] for p in pieces)}
                    for p in pieces:
                        if "tool_calls" in p:
                            merged["tool_calls"] = p["tool_calls"]
                    self._json({**final, "message": merged})
                    return
                lines = [
                    json.dumps({**base, "message": p, "done": False}).encode() + b"\n"
                    for p in pieces
                ]
                lines.append(json.dumps(final).encode() + b"\n")
                self._events(lines, "application/x-ndjson")

            # -- Bedrock Converse ----------------------------------------------------

            def _bedrock(self, body: dict[str, Any]) -> None:
                results = []
                last_user = ""
                for m in body.get("messages") or []:
                    for block in m.get("content") or []:
                        if "toolResult" in block:
                            results.append(_text_of(block["toolResult"].get("content")))
                        elif "text" in block and m.get("role") == "user":
                            last_user = block["text"]
                tools = (body.get("toolConfig") or {}).get("tools")
                step = plan(len(results), bool(tools), results, last_user)
                content: list[dict[str, Any]] = []
                if "text" in step:
                    content.append({"text": step["text"]})
                for name, args in step.get("calls", []):
                    content.append(
                        {
                            "toolUse": {
                                "toolUseId": "tooluse_" + rand(22),
                                "name": name,
                                "input": args,
                            }
                        }
                    )
                inp, out = random.randint(20, 200), random.randint(5, 50)
                self._json(
                    {
                        "output": {"message": {"role": "assistant", "content": content}},
                        "stopReason": "tool_use" if "calls" in step else "end_turn",
                        "usage": {
                            "inputTokens": inp,
                            "outputTokens": out,
                            "totalTokens": inp + out,
                        },
                        "metrics": {"latencyMs": random.randint(100, 900)},
                    },
                    headers=[("x-amzn-RequestId", str(uuid.uuid4()))],
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeProviders:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class DeadPort:
    """A listening socket that never answers and counts every connection attempt."""

    def __init__(self) -> None:
        import socket

        self.accepted = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def __enter__(self) -> DeadPort:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.thread.join(2)
        self.sock.close()
