"""A fake OpenAI-compatible *provider* on 127.0.0.1 for chat, completions and embeddings.

It behaves like the real API where a recording can tell: random ``chatcmpl-``/``cmpl-``
ids, ``created`` timestamps, usage; every answer carries a random nonce and every vector
random noise, so a replay that reached it would not reproduce the recorded run. Embeddings
answer as float lists or, when asked (the OpenAI client asks by default), base64 float32.
Errors are injected on cue: ``fail(path_part, status, times)`` makes the next ``times``
requests whose path (or model) contains ``path_part`` answer with ``status`` and OpenAI's
error body, a ``retry-after`` header and an ``x-request-id``. Every TCP connection is
counted in ``connections`` (a replay must make none).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import struct
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMENSIONS = 64


def embed(text: str) -> list[float]:
    """A bag-of-words vector (similar texts are close) plus random noise, as float32."""
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z]+", text.lower()):
        slot = int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSIONS
        vector[slot] += 1.0
    noisy = [v + random.uniform(-0.01, 0.01) for v in vector]
    return list(struct.unpack(f"<{DIMENSIONS}f", struct.pack(f"<{DIMENSIONS}f", *noisy)))


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


CITIES = ("Paris", "Berlin", "Tokyo", "Lisbon")


def _answer_text(prompt: str) -> str:
    """Names the cities the prompt's context mentions, in order, plus a random nonce."""
    context = prompt.rsplit("Question", 1)[0] if "Question" in prompt else prompt
    found = sorted((context.find(c), c) for c in CITIES if c in context)
    about = ", ".join(c for _, c in found) or "nothing"
    return f"Answer from context about {about} (nonce {uuid.uuid4().hex[:8]})"


class FakeProvider:
    def __init__(self) -> None:
        self.requests = 0
        self.connections = 0
        self.by_path: dict[str, int] = {}
        self._faults: list[list[Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def process_request(self, request: Any, client_address: Any) -> None:
                with owner._lock:
                    owner.connections += 1
                super().process_request(request, client_address)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path
                with owner._lock:
                    owner.requests += 1
                    owner.by_path[path] = owner.by_path.get(path, 0) + 1
                    fault = owner._take_fault(f"{path} {body.get('model')}")
                if fault is not None:
                    self._error(fault)
                elif path.endswith("/embeddings"):
                    self._embeddings(body)
                elif path.endswith("/chat/completions"):
                    self._chat(body)
                elif path.endswith("/completions"):
                    self._completion(body)
                else:
                    self._send(404, {"error": {"message": f"no route {path}", "type": "x"}})

            def _send(
                self, status: int, payload: Any, headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int) -> None:
                kinds = {429: "requests", 500: "server_error", 400: "invalid_request_error"}
                message = {
                    429: "Rate limit reached for gpt-4o-mini on requests per min: Limit 3.",
                    500: "The server had an error while processing your request.",
                }.get(status, "Bad request.")
                body = {
                    "error": {
                        "message": message,
                        "type": kinds.get(status, "invalid_request_error"),
                        "param": None,
                        "code": "rate_limit_exceeded" if status == 429 else None,
                    }
                }
                headers = {"retry-after": "0", "x-ratelimit-remaining-requests": "0"}
                self._send(status, body, headers)

            def _embeddings(self, body: dict[str, Any]) -> None:
                inputs = body.get("input")
                texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
                data = []
                for index, text in enumerate(texts):
                    vector = embed(str(text))
                    if body.get("dimensions"):
                        vector = vector[: int(body["dimensions"])]
                    if body.get("encoding_format") == "base64":
                        packed = struct.pack(f"<{len(vector)}f", *vector)
                        value: Any = base64.b64encode(packed).decode()
                    else:
                        value = vector
                    data.append({"object": "embedding", "index": index, "embedding": value})
                tokens = sum(len(str(t).split()) for t in texts)
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body.get("model"),
                        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                    },
                )

            def _chat(self, body: dict[str, Any]) -> None:
                text = _answer_text(_last_user_text(body.get("messages") or []))
                ident, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
                usage = {"prompt_tokens": 31, "completion_tokens": 9, "total_tokens": 40}
                if body.get("stream"):
                    chunks = [{"role": "assistant", "content": ""}]
                    chunks += [{"content": w} for w in re.findall(r"\S+\s*", text)]
                    events = [
                        {
                            "id": ident,
                            "object": "chat.completion.chunk",
                            "created": created,
                            "model": body.get("model"),
                            "choices": [{"index": 0, "delta": d, "finish_reason": None}],
                        }
                        for d in chunks
                    ]
                    events[-1]["choices"][0]["finish_reason"] = "stop"
                    self._sse(events)
                    return
                self._send(
                    200,
                    {
                        "id": ident,
                        "object": "chat.completion",
                        "created": created,
                        "model": body.get("model"),
                        "system_fingerprint": f"fp_{uuid.uuid4().hex[:10]}",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                                "logprobs": None,
                            }
                        ],
                        "usage": usage,
                    },
                )

            def _completion(self, body: dict[str, Any]) -> None:
                prompts = body.get("prompt")
                prompt = prompts[0] if isinstance(prompts, list) else str(prompts)
                text = " " + _answer_text(prompt)
                ident, created = f"cmpl-{uuid.uuid4().hex}", int(time.time())
                if body.get("stream"):
                    events = [
                        {
                            "id": ident,
                            "object": "text_completion",
                            "created": created,
                            "model": body.get("model"),
                            "choices": [
                                {"text": w, "index": 0, "logprobs": None, "finish_reason": None}
                            ],
                        }
                        for w in re.findall(r"\s*\S+", text)
                    ]
                    events[-1]["choices"][0]["finish_reason"] = "stop"
                    self._sse(events)
                    return
                self._send(
                    200,
                    {
                        "id": ident,
                        "object": "text_completion",
                        "created": created,
                        "model": body.get("model"),
                        "choices": [
                            {"text": text, "index": 0, "logprobs": None, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21},
                    },
                )

            def _sse(self, events: list[dict[str, Any]]) -> None:
                payload = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
                payload += b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def fail(self, match: str, status: int, times: int = 1) -> None:
        """The next ``times`` requests whose path or model contains ``match`` get ``status``."""
        with self._lock:
            self._faults.append([match, status, times])

    def _take_fault(self, target: str) -> int | None:
        for fault in self._faults:
            if fault[0] in target and fault[2] > 0:
                fault[2] -= 1
                return int(fault[1])
        return None

    def __enter__(self) -> FakeProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
