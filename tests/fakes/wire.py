"""One local HTTP server on 127.0.0.1 speaking every provider wire format the tests' clients
use: a fake *provider*, not a mock of a client.

The real client packages (the OpenAI and Anthropic SDKs, langchain-openai, -anthropic,
-google-genai, -mistralai, -ollama, -aws and the LlamaIndex ones) talk to it over HTTP, and
the request path picks the format, as the providers' own URLs do:

- ``…/chat/completions``: OpenAI chat completions, JSON or SSE (the usage chunk only when
  ``stream_options.include_usage``); Azure's deployments; Mistral's flavour by model name;
- ``…/completions``: legacy text completions; ``…/embeddings``: vectors, float or base64;
- ``…/responses``: a ``Response`` or its SSE events; ``previous_response_id`` must name a
  response this server gave;
- ``…/messages``: Anthropic Messages, JSON or SSE;
- ``…:generateContent`` / ``…:streamGenerateContent``: Gemini; ``…/api/chat``: Ollama
  (NDJSON streaming); ``…/converse``: AWS Bedrock Converse.

Every answer carries fresh random ids, timestamps and usage, and OpenAI's edge headers (a
request id, a Cloudflare cookie, the organization). What the model says is a script (see
``fakes.scripts``); errors are served on cue (``fail``, ``fakes.faults``). ``requests``
counts the requests (``paths`` and ``headers`` hold them), ``connections`` the accepted TCP
connections (a replay must make none). A stalled answer (``STALL_ONCE``) waits on its own
connection's thread: the other requests are answered meanwhile.

Every answer closes its connection (``Connection: close``): the client then closes its own
socket at once, so that a client a test never closes holds no pooled socket for the garbage
collector to find, with a ``ResourceWarning``, in some later test. On exit the server also
closes the connections still open (a stream a client left unread), so that no handler
thread or socket outlives it.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakes import anthropic_wire, bedrock_wire, gemini_wire, ollama_wire, openai_wire
from fakes.faults import Faults, key_of
from fakes.turns import Answer, Reply, Script, Turn, error, rand

MAX_REQUESTS = 2000  # bounded: a runaway client cannot keep the server busy forever


def edge_headers() -> list[tuple[str, str]]:
    """What OpenAI's edge adds to every answer (the recorder must keep the cookie off disk)."""
    return [
        ("x-request-id", "req_" + rand(20)),
        ("Set-Cookie", "__cf_bm=" + rand(30) + "; path=/"),
        ("openai-organization", "org-" + rand(12)),
    ]


class FakeServer:
    """The server; ``with FakeServer(script) as fake: fake.url`` (``…/v1``), ``fake.base``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests = 0
        self.connections = 0
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.faults = Faults()
        self._issued: set[str] = set()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        #: set on exit: a stalled answer stops waiting (and is never written)
        self.stopping = threading.Event()
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        return self.base + "/v1"

    @property
    def by_path(self) -> dict[str, int]:
        return dict(Counter(self.paths))

    def fail(self, match: str, status: int, times: int = 1) -> None:
        """The next ``times`` requests whose path or model contains ``match`` get ``status``."""
        self.faults.fail(match, status, times)

    def answer(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Answer:
        """The answer to one request (called on the handler's thread)."""
        with self._lock:
            self.requests += 1
            self.paths.append(path)
            self.headers.append(headers)
            over = self.requests > MAX_REQUESTS
        if over:
            return error(429, "too many requests", "requests")
        try:
            fault = self.faults.take(path, body, headers)
            answer = fault or self._route(path.split("?")[0], body, key_of(headers))
            stall = self.faults.stall(body)
            return replace(answer, stall=stall) if stall else answer
        except Exception as exc:  # a bug of the fake itself: say it to the client
            return error(500, repr(exc), "server_error")

    def _route(self, path: str, body: dict[str, Any], key: str) -> Answer:
        if path.endswith("/embeddings"):
            return openai_wire.embeddings(body)
        if path.endswith("/responses"):
            refused = openai_wire.unknown_previous(body, self._issued)
            if refused is not None:
                return refused
        wire = _wire(path, self._issued)
        if wire is None:
            return error(404, f"unknown path {path}", "invalid_request_error")
        read, write = wire
        said = self.script(replace(read(body), key=key))
        return said if isinstance(said, Answer) else write(body, said)

    def opened(self, connection: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self._open.add(connection)

    def closed(self, connection: socket.socket) -> None:
        with self._lock:
            self._open.discard(connection)

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._server.shutdown()
        with self._lock:
            still_open = list(self._open)
        for connection in still_open:  # its handler thread reads the end and closes it
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._server.server_close()


Read = Callable[[dict[str, Any]], Turn]
Write = Callable[[dict[str, Any], Reply], Answer]


def _wire(path: str, issued: set[str]) -> tuple[Read, Write] | None:
    """How to read a request on ``path`` and write the reply, as that provider does."""
    if path.endswith("/chat/completions"):
        return openai_wire.chat_turn, openai_wire.chat
    if path.endswith("/completions"):
        return openai_wire.completion_turn, openai_wire.completion
    if path.endswith("/responses"):
        return openai_wire.responses_turn, partial(openai_wire.responses, issued=issued)
    if path.endswith("/messages"):
        return anthropic_wire.messages_turn, anthropic_wire.messages
    if ":generateContent" in path or ":streamGenerateContent" in path:
        stream = ":streamGenerateContent" in path
        return gemini_wire.gemini_turn, partial(gemini_wire.gemini, stream=stream)
    if path.endswith("/api/chat"):
        return ollama_wire.ollama_turn, ollama_wire.ollama
    if path.endswith("/converse"):
        return bedrock_wire.converse_turn, bedrock_wire.converse
    return None


class _Server(ThreadingHTTPServer):
    """Tells its owner of every connection it accepts and closes."""

    daemon_threads = True

    def __init__(self, owner: FakeServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = super().get_request()
        self.owner.opened(connection)
        return connection, address

    def shutdown_request(self, request: Any) -> None:
        self.owner.closed(request)
        super().shutdown_request(request)


class _Handler(BaseHTTPRequestHandler):
    """Reads a request's JSON body (gzip too) and writes the owner's answer."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        headers = {k.lower(): v for k, v in self.headers.items()}
        owner = self.server.owner
        answer = owner.answer(self.path, json.loads(raw or b"{}"), headers)
        if not answer.stall:
            self._write(answer)
            return
        if owner.stopping.wait(answer.stall):  # the server is closing: nothing more to say
            answer = Answer(hung_up=True)
        with contextlib.suppress(OSError):  # the client timed out and closed its end long ago
            self._write(answer)

    def _write(self, answer: Answer) -> None:
        if answer.hung_up:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.send_response(answer.status)
        self.send_header("Connection", "close")  # the client closes its socket on reading it
        for name, value in [*edge_headers(), *answer.headers]:
            self.send_header(name, value)
        if answer.events is None and answer.lines is None:
            data = json.dumps(answer.payload).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if answer.events is not None:
            kind, frames = "text/event-stream; charset=utf-8", _sse(answer.events)
        else:
            kind = "application/x-ndjson"
            frames = [json.dumps(line).encode() + b"\n" for line in answer.lines or []]
        self.send_header("Content-Type", kind)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if answer.dropped:
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        for frame in frames:  # one chunk an event, flushed: a client reads them as they come
            self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


def _sse(events: list[tuple[str | None, Any]]) -> list[bytes]:
    frames = []
    for name, payload in events:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        head = f"event: {name}\n" if name else ""
        frames.append(f"{head}data: {text}\n\n".encode())
    return frames
