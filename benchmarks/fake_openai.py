"""A tiny OpenAI-compatible chat server on 127.0.0.1, for recording HTTP cassettes.

It answers ``POST /v1/chat/completions`` the way a real provider does, per-response
noise included (a random ``chatcmpl-<uuid>`` id, a ``created`` timestamp, a system
fingerprint, usage, random ``call_…`` tool-call ids), so that the vcrpy cassette recorded
against it is as realistic as one recorded against the real API. Without tools the answer
text is fixed: every benchmark variant returns the same message; with tools it follows
``agent_script`` (a few tool calls, then an answer).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent_script import ANSWER, next_step

__all__ = ["ANSWER", "completion", "serving"]


def completion(request: dict[str, Any]) -> dict[str, Any]:
    """The chat-completion response body for ``request``."""
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in request["messages"])
    message, finish = _message(request)
    return {
        "id": f"chatcmpl-{uuid.uuid4()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "gpt-4o-mini"),
        "system_fingerprint": f"fp_{uuid.uuid4().hex[:10]}",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 14,
            "total_tokens": prompt_tokens + 14,
        },
    }


def _message(request: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The assistant message and finish reason: ``ANSWER``, or the agent script's next step."""
    tools = [t["function"]["name"] for t in request.get("tools") or []]
    messages = request["messages"]
    user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    results = [str(m.get("content")) for m in messages if m.get("role") == "tool"]
    step = next_step(str(user.get("content")), results, tools)
    if isinstance(step, str):
        return {"role": "assistant", "content": step, "refusal": None}, "stop"
    name, arguments = step
    call = {
        "id": f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call], "refusal": None}, (
        "tool_calls"
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without this, a kept-alive connection waits for
    # the client's delayed ACK (about 40 ms) on every call, which is no provider's speed
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.rstrip("/") != "/v1/chat/completions":
            self.send_error(404)
            return
        payload = json.dumps(completion(json.loads(body))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@contextmanager
def serving() -> Iterator[str]:
    """Run the server on a free port for the block; yields its ``base_url``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
