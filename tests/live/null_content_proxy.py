"""A loopback reverse proxy that repairs one request field the local server rejects.

Why it exists: after a tool call, an agent sends the assistant's tool-call message back
to the model, and both real clients (``langchain-openai`` and ``llama-index-llms-openai``)
send it as ``{"role": "assistant", "content": null, "tool_calls": [...]}`` - which is
valid OpenAI API. llama-cpp-python's ``chatml-function-calling`` template, however,
concatenates ``content`` as a string and answers HTTP 500 on ``null``. Patching either
client would mean the live tier no longer tests the real clients, and patching the
server would mean it no longer tests the real server; so this proxy sits between them
and rewrites exactly that: ``content: null`` on assistant messages becomes ``""``.
Everything else (headers, the body, streamed responses chunk by chunk) passes through
untouched.

The proxy is test infrastructure of the live tier and of ``--record`` in the examples;
it plays no part in replay, which never opens a connection.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

#: Response headers that describe the upstream connection, not the body; the proxy
#: answers with a close-delimited body instead (HTTP/1.0 style), which every client reads.
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"}
)


def repair_body(body: bytes) -> bytes:
    """Return ``body`` with ``content: null`` on assistant messages replaced by ``""``."""
    try:
        payload = json.loads(body)
    except ValueError:
        return body
    messages = payload.get("messages") if isinstance(payload, dict) else None
    if not isinstance(messages, list):
        return body
    changed = False
    for message in messages:
        if (
            isinstance(message, dict)
            and message.get("role") == "assistant"
            and "content" in message
            and message["content"] is None
        ):
            message["content"] = ""
            changed = True
    return json.dumps(payload).encode() if changed else body


def _handler(upstream_host: str, upstream_port: int) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = repair_body(self.rfile.read(length)) if length else None
            headers = {
                k: v
                for k, v in self.headers.items()
                if k.lower() not in _HOP_BY_HOP and k.lower() != "host"
            }
            if body is not None:
                headers["Content-Length"] = str(len(body))
            conn = http.client.HTTPConnection(upstream_host, upstream_port, timeout=300)
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                self.send_response(resp.status, resp.reason)
                for key, value in resp.getheaders():
                    if key.lower() not in _HOP_BY_HOP:
                        self.send_header(key, value)
                self.send_header("Connection", "close")
                self.end_headers()
                # read1 returns whatever has arrived, so server-sent events stream through.
                while chunk := resp.read1(65536):
                    self.wfile.write(chunk)
                    self.wfile.flush()
            finally:
                conn.close()

        do_GET = _forward
        do_POST = _forward

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean; the server keeps its own log

    return Handler


@contextlib.contextmanager
def proxied(base_url: str, port: int = 0) -> Iterator[str]:
    """Serve a repairing proxy in front of ``base_url`` for the block; yield the proxy's URL.

    ``base_url`` is like ``http://127.0.0.1:PORT/v1``; the yielded URL keeps its path.
    ``port=0`` picks a free port.
    """
    parts = urlsplit(base_url)
    assert parts.hostname and parts.port, base_url
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(parts.hostname, parts.port))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="null-content-proxy", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{parts.path}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
