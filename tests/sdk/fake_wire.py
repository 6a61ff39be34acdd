"""A local server speaking OpenAI's and Anthropic's wire formats, for the real SDK clients.

A fake *provider*, not a mock of a client: ``openai.OpenAI(base_url=fake.url)`` and
``anthropic.Anthropic(base_url=fake.base)`` talk to it over HTTP on 127.0.0.1, and it
answers the way the real APIs do, with fresh random ids, timestamps and usage in every
answer:

- ``POST /v1/chat/completions``: JSON, or SSE chunks when ``stream`` (the usage chunk
  only when ``stream_options.include_usage``, then ``data: [DONE]``);
- ``POST /v1/responses``: a ``Response``, or its SSE events (``response.created`` …
  ``response.completed``); ``previous_response_id`` must name a response it gave;
- ``POST /v1/embeddings``: vectors from the texts (``float`` or ``base64``);
- ``POST /v1/messages``: an Anthropic ``Message``, or its SSE events.

The model is a script: tools offered and no tool result yet → a call of the tool first by name
(``toolu_…``/``call_…`` random ids); a tool result → "Answer: <result>"; no tools → "Echo:
<last user text>". A last user text with ``RATE_LIMIT_ONCE`` gets one 429 first; one with
``BAD_KEY`` gets a 401 whose message quotes the caller's API key, as OpenAI's does; a
streamed request with ``DROP_STREAM`` gets the headers of a stream, then the connection
drops before its first event (the SDK's ``create`` returns, reading the stream raises).
``connections`` counts accepted TCP connections, ``requests`` the requests.
"""

from __future__ import annotations

import base64
import json
import random
import socket
import string
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_REQUESTS = 500


def rand(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(random.choice(alphabet) for _ in range(n))


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(text_of(c) for c in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output"):
            if key in content:
                return text_of(content[key])
    return "" if content is None else str(content)


def words(text: str) -> list[str]:
    parts = text.split(" ")
    return [p + (" " if i < len(parts) - 1 else "") for i, p in enumerate(parts)]


def vector(text: str, dims: int = 8) -> list[float]:
    """A deterministic float32 vector for ``text``."""
    seed = random.Random(text)
    return [struct.unpack("<f", struct.pack("<f", seed.uniform(-1, 1)))[0] for _ in range(dims)]


def step(tools: list[dict[str, Any]], results: list[str], last_user: str) -> dict[str, Any]:
    """The script: ``{"call": (name, args)}`` or ``{"text": ...}``."""
    if tools and not results:  # tools are a set: the first by name, whatever the order
        schema = min((t.get("function", t) for t in tools), key=lambda t: str(t["name"]))
        props = (schema.get("parameters") or schema.get("input_schema") or {}).get(
            "properties"
        ) or {}
        args = {k: ("Paris" if v.get("type") == "string" else 1) for k, v in props.items()}
        return {"call": (schema["name"], args)}
    if results:
        return {"text": "Answer: " + results[-1]}
    return {"text": "Echo: " + last_user}


class FakeWire:
    """The server; ``with FakeWire() as fake: fake.url`` (``…/v1``), ``fake.base``."""

    def __init__(self) -> None:
        self.requests = 0
        self.connections = 0
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._responses: set[str] = set()
        self._limited: set[str] = set()
        owner = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self) -> Any:
                accepted = super().get_request()
                owner.connections += 1
                return accepted

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"{}")
                owner.requests += 1
                owner.paths.append(self.path)
                owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                if owner.requests > MAX_REQUESTS:
                    self._json({"error": {"message": "too many requests"}}, 429)
                    return
                path = self.path.split("?")[0]
                try:
                    if self._fault(body):
                        return
                    if path.endswith("/chat/completions"):
                        self._chat(body)
                    elif path.endswith("/responses"):
                        self._responses(body)
                    elif path.endswith("/embeddings"):
                        self._embeddings(body)
                    elif path.endswith("/messages"):
                        self._messages(body)
                    else:
                        self._json({"error": {"message": f"unknown path {path}"}}, 404)
                except Exception as exc:  # pragma: no cover - a bug of the fake itself
                    self._json({"error": {"message": repr(exc)}}, 500)

            # -- plumbing --------------------------------------------------------------

            def _json(self, payload: Any, status: int = 200, headers: Any = ()) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("x-request-id", "req_" + rand(20))
                self.send_header("Set-Cookie", "__cf_bm=" + rand(30) + "; path=/")
                self.send_header("openai-organization", "org-" + rand(12))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, events: list[tuple[str | None, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for name, payload in events:
                    text = payload if isinstance(payload, str) else json.dumps(payload)
                    head = f"event: {name}\n" if name else ""
                    chunk = f"{head}data: {text}\n\n".encode()
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            def _fault(self, body: dict[str, Any]) -> bool:
                text = json.dumps(body)
                if "BAD_KEY" in text:
                    key = self.headers.get("x-api-key") or str(
                        self.headers.get("Authorization") or ""
                    ).removeprefix("Bearer ")
                    error = {
                        "message": f"Incorrect API key provided: {key}. You can find your "
                        "API key at https://platform.openai.com/account/api-keys.",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "invalid_api_key",
                    }
                    self._json({"error": error}, 401)
                    return True
                if "DROP_STREAM" in text and body.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return True
                marker = (
                    text.split("RATE_LIMIT_ONCE", 1)[-1][:40] if "RATE_LIMIT_ONCE" in text else ""
                )
                if marker and marker not in owner._limited:
                    owner._limited.add(marker)
                    error = {"message": "Rate limit reached", "type": "requests", "code": None}
                    self._json({"error": error}, 429, headers=[("retry-after", "0")])
                    return True
                return False

            # -- OpenAI chat completions ----------------------------------------------

            def _chat(self, body: dict[str, Any]) -> None:
                messages = body.get("messages") or []
                results = [text_of(m.get("content")) for m in messages if m["role"] == "tool"]
                last_user = next(
                    (text_of(m["content"]) for m in reversed(messages) if m["role"] == "user"), ""
                )
                plan = step(body.get("tools") or [], results, last_user)
                message: dict[str, Any] = {"role": "assistant", "content": plan.get("text")}
                if "call" in plan:
                    name, args = plan["call"]
                    message["tool_calls"] = [
                        {
                            "id": "call_" + rand(24),
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                    ]
                usage = {"prompt_tokens": random.randint(9, 99), "completion_tokens": 5}
                usage["total_tokens"] = usage["prompt_tokens"] + 5
                base = {
                    "id": "chatcmpl-" + rand(29),
                    "created": int(time.time()) - random.randint(0, 99),
                    "model": body.get("model"),
                    "system_fingerprint": "fp_" + rand(10),
                }
                finish = "tool_calls" if "call" in plan else "stop"
                if not body.get("stream"):
                    choice = {"index": 0, "message": message, "finish_reason": finish}
                    choice["logprobs"] = None
                    payload = {**base, "object": "chat.completion", "choices": [choice]}
                    self._json({**payload, "usage": usage})
                    return
                chunk = {**base, "object": "chat.completion.chunk"}
                deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
                for i, call in enumerate(message.get("tool_calls") or []):
                    deltas.append({"tool_calls": [{"index": i, **call}]})
                deltas += [{"content": w} for w in words(plan.get("text") or "") if w]
                events: list[tuple[str | None, Any]] = []
                for i, delta in enumerate(deltas):
                    reason = finish if i == len(deltas) - 1 else None
                    choice = {"index": 0, "delta": delta, "finish_reason": reason}
                    events.append((None, {**chunk, "choices": [choice]}))
                if (body.get("stream_options") or {}).get("include_usage"):
                    events.append((None, {**chunk, "choices": [], "usage": usage}))
                events.append((None, "[DONE]"))
                self._sse(events)

            # -- OpenAI Responses -----------------------------------------------------

            def _responses(self, body: dict[str, Any]) -> None:
                previous = body.get("previous_response_id")
                if previous is not None and previous not in owner._responses:
                    error = {"message": f"Previous response {previous} not found", "type": "x"}
                    self._json({"error": error}, 400)
                    return
                items = body.get("input") or []
                if isinstance(items, str):
                    items = [{"role": "user", "content": items}]
                results = [
                    text_of(i.get("output"))
                    for i in items
                    if i.get("type") == "function_call_output"
                ]
                last_user = next(
                    (text_of(i.get("content")) for i in reversed(items) if i.get("role") == "user"),
                    "",
                )
                plan = step(body.get("tools") or [], results, last_user)
                output: list[dict[str, Any]] = []
                if "call" in plan:
                    name, args = plan["call"]
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
                else:
                    output.append(
                        {
                            "id": "msg_" + rand(40, string.hexdigits.lower()),
                            "type": "message",
                            "role": "assistant",
                            "status": "completed",
                            "content": [
                                {"type": "output_text", "text": plan["text"], "annotations": []}
                            ],
                        }
                    )
                ident = "resp_" + rand(40, string.hexdigits.lower())
                owner._responses.add(ident)
                inp = random.randint(9, 99)
                response = {
                    "id": ident,
                    "object": "response",
                    "created_at": int(time.time()) - random.randint(0, 99),
                    "status": "completed",
                    "model": body.get("model"),
                    "output": output,
                    "parallel_tool_calls": True,
                    "previous_response_id": previous,
                    "tool_choice": body.get("tool_choice") or "auto",
                    "tools": body.get("tools") or [],
                    "text": {"format": {"type": "text"}},
                    "truncation": "disabled",
                    "usage": {
                        "input_tokens": inp,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": 5,
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": inp + 5,
                    },
                }
                if not body.get("stream"):
                    self._json(response)
                    return
                seq = iter(range(1000))
                pending = {**response, "status": "in_progress", "output": [], "usage": None}
                events: list[tuple[str | None, Any]] = [
                    ("response.created", {"response": pending}),
                    ("response.in_progress", {"response": pending}),
                ]
                for index, item in enumerate(output):
                    events.append(
                        (
                            "response.output_item.added",
                            {"output_index": index, "item": {**item, "status": "in_progress"}},
                        )
                    )
                    if item["type"] == "message":
                        part = {"type": "output_text", "text": "", "annotations": []}
                        ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
                        events.append(("response.content_part.added", {**ids, "part": part}))
                        for word in words(item["content"][0]["text"]):
                            events.append(
                                (
                                    "response.output_text.delta",
                                    {**ids, "delta": word, "logprobs": []},
                                )
                            )
                        text = item["content"][0]["text"]
                        events.append(
                            ("response.output_text.done", {**ids, "text": text, "logprobs": []})
                        )
                        events.append(
                            ("response.content_part.done", {**ids, "part": item["content"][0]})
                        )
                    events.append(
                        ("response.output_item.done", {"output_index": index, "item": item})
                    )
                events.append(("response.completed", {"response": response}))
                self._sse(
                    [
                        (name, {"type": name, "sequence_number": next(seq), **data})
                        for name, data in events
                    ]
                )

            # -- OpenAI embeddings ----------------------------------------------------

            def _embeddings(self, body: dict[str, Any]) -> None:
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = []
                for index, text in enumerate(texts):
                    values = vector(str(text), int(body.get("dimensions") or 8))
                    embedding: Any = values
                    if body.get("encoding_format") == "base64":
                        embedding = base64.b64encode(struct.pack(f"<{len(values)}f", *values))
                        embedding = embedding.decode()
                    data.append({"object": "embedding", "index": index, "embedding": embedding})
                usage = {"prompt_tokens": len(texts) * 3, "total_tokens": len(texts) * 3}
                self._json(
                    {"object": "list", "data": data, "model": body.get("model"), "usage": usage}
                )

            # -- Anthropic messages ---------------------------------------------------

            def _messages(self, body: dict[str, Any]) -> None:
                results, last_user = [], ""
                for m in body.get("messages") or []:
                    content = m.get("content")
                    if isinstance(content, str):
                        last_user = content if m["role"] == "user" else last_user
                        continue
                    for block in content or []:
                        if block.get("type") == "tool_result":
                            results.append(text_of(block.get("content")))
                        elif block.get("type") == "text" and m["role"] == "user":
                            last_user = block["text"]
                plan = step(body.get("tools") or [], results, last_user)
                content_blocks: list[dict[str, Any]] = []
                if "text" in plan:
                    content_blocks.append({"type": "text", "text": plan["text"]})
                else:
                    name, args = plan["call"]
                    content_blocks.append(
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
                    "content": content_blocks,
                    "stop_reason": "tool_use" if "call" in plan else "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": random.randint(9, 99), "output_tokens": 7},
                }
                if not body.get("stream"):
                    self._json(message, headers=[("request-id", "req_" + rand(24))])
                    return
                start = {**message, "content": [], "stop_reason": None}
                start["usage"] = {**message["usage"], "output_tokens": 1}
                events: list[tuple[str | None, Any]] = [
                    ("message_start", {"type": "message_start", "message": start})
                ]
                for i, block in enumerate(content_blocks):
                    if block["type"] == "text":
                        first: dict[str, Any] = {"type": "text", "text": ""}
                        deltas = [{"type": "text_delta", "text": w} for w in words(block["text"])]
                    else:
                        first = {**block, "input": {}}
                        partial = json.dumps(block["input"])
                        deltas = [{"type": "input_json_delta", "partial_json": partial}]
                    events.append(
                        (
                            "content_block_start",
                            {"type": "content_block_start", "index": i, "content_block": first},
                        )
                    )
                    events.append(("ping", {"type": "ping"}))
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
                            "usage": {"output_tokens": 7},
                        },
                    )
                )
                events.append(("message_stop", {"type": "message_stop"}))
                self._sse(events)

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        return self.base + "/v1"

    def __enter__(self) -> FakeWire:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
