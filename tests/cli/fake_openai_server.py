"""A tiny OpenAI-compatible HTTP server on 127.0.0.1: a fake *provider*, not a mock of a framework.

``POST /v1/chat/completions`` (plain and ``stream: true`` server-sent events) answers
like the real API: random ``chatcmpl-…`` ids, random ``call_…`` tool-call ids,
``created`` timestamps, system fingerprints and usage (for a stream, only when asked with
``stream_options: {include_usage: true}``). The script: if tools are offered
and no tool result is in the conversation yet, call the first tool with the city found
in the last user message; otherwise answer with the last tool result. Every request is
counted in ``calls``.

``python tests/cli/fake_openai_server.py`` serves it until Ctrl-C and prints the URL to set
as ``OPENAI_BASE_URL`` (and ``OPENAI_API_BASE``), the way the README's snippets are run.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    tools = body.get("tools") or []
    tool_results = [m for m in messages if m.get("role") == "tool"]
    user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    text = (
        user.get("content")
        if isinstance(user.get("content"), str)
        else json.dumps(user.get("content"))
    )
    if tools and not tool_results:
        found = re.search(r"in ([A-Z][a-z]+)", text or "")
        name = tools[0]["function"]["name"]
        args = json.dumps({"city": found.group(1) if found else "Paris"})
        call = {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": name, "arguments": args},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if tool_results:
        return {"role": "assistant", "content": f"Forecast: {tool_results[-1].get('content')}."}
    return {"role": "assistant", "content": f"You asked: {text}"}


class FakeOpenAI:
    def __init__(self) -> None:
        self.calls = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                owner.calls += 1
                message = _answer(body)
                ident = f"chatcmpl-{uuid.uuid4().hex}"
                created = int(time.time())
                usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
                if body.get("stream"):
                    self._stream(body, message, ident, created, usage)
                    return
                payload = {
                    "id": ident,
                    "object": "chat.completion",
                    "created": created,
                    "model": body.get("model"),
                    "system_fingerprint": f"fp_{uuid.uuid4().hex[:10]}",
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                            "logprobs": None,
                        }
                    ],
                    "usage": usage,
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(
                self,
                body: dict[str, Any],
                message: dict[str, Any],
                ident: str,
                created: int,
                usage: dict[str, int],
            ) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                base = {
                    "id": ident,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": body.get("model"),
                }
                deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
                if message.get("tool_calls"):
                    call = message["tool_calls"][0]
                    deltas.append(
                        {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": call["id"],
                                    "type": "function",
                                    "function": {
                                        "name": call["function"]["name"],
                                        "arguments": call["function"]["arguments"],
                                    },
                                }
                            ]
                        }
                    )
                else:
                    deltas += [
                        {"content": word} for word in re.findall(r"\S+\s*", message["content"])
                    ]
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                for index, delta in enumerate(deltas):
                    last = index == len(deltas) - 1
                    chunk = {
                        **base,
                        "choices": [
                            {"index": 0, "delta": delta, "finish_reason": finish if last else None}
                        ],
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                if (body.get("stream_options") or {}).get("include_usage"):  # as OpenAI does
                    self.wfile.write(
                        f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n".encode()
                    )
                self.wfile.write(b"data: [DONE]\n\n")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens: any request fails at once."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


if __name__ == "__main__":
    with FakeOpenAI() as fake:
        print(fake.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            fake.thread.join()
