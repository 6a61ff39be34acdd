"""The provider SDKs' wire: who sent a request, response bodies as data, SSE events.

Pure functions over bytes and headers, no engine, no SDK and no httpx import: what the
transport layer reads from a live exchange, stores, and turns back into bytes the SDK
parses again. A stored response is plain data a person can read in the cassette::

    {"status": 200, "headers": {"content-type": "application/json"}, "body": {...}}
    {"status": 200, "headers": {...}, "text": "..."}        # other text
    {"status": 200, "headers": {...}, "base64": "..."}      # bytes (audio, files)
    {"chunks": [{"event": "message_start", "data": {...}}, {"data": "[DONE]"}]}   # SSE

Request headers (``Authorization``, ``x-api-key``) are never read beyond the two that say
which SDK is talking; response headers are kept from a short allow-list.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Every Stainless-generated SDK (openai, anthropic, groq, cerebras, …) sends this header:
#: it marks a request as a provider SDK's, so the rest of a program's HTTP traffic (a tool's
#: API call, tracing, model downloads) is never touched.
SDK_HEADER = "x-stainless-lang"
#: Only Anthropic's SDK sends this one: its requests speak Anthropic's wire format.
ANTHROPIC_HEADER = "anthropic-version"

#: Response headers kept with a recording (lower case): what the SDK and its retry logic
#: read, never credentials, cookies or account ids.
KEPT_HEADERS = frozenset(
    {
        "content-type",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "x-request-id",
        "request-id",
    }
)
KEPT_HEADER_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")

SSE_TYPE = "text/event-stream"
#: Events after which a stream has nothing left to say: a consumer that stops reading right
#: after one (OpenAI's SDK closes the response at ``[DONE]``) read a complete answer.
TERMINAL_EVENTS = frozenset(
    {"message_stop", "response.completed", "response.failed", "response.incomplete"}
)
DONE = "[DONE]"


@dataclass(frozen=True)
class Client:
    """Which SDK sent a request (``openai``, ``anthropic``, ``groq``…) and the wire format
    it speaks (``openai`` or ``anthropic``)."""

    sdk: str
    wire: str


def client_of(headers: Mapping[str, str]) -> Client | None:
    """The SDK behind a request, from its headers; ``None`` for any other HTTP request."""
    if SDK_HEADER not in headers:
        return None
    agent = str(headers.get("user-agent") or "")
    name = agent.split("/", 1)[0].strip().lower() if "/" in agent else ""
    name = name.removeprefix("async")  # AsyncOpenAI/Python, AsyncAnthropic/Python
    wire = "anthropic" if ANTHROPIC_HEADER in headers else "openai"
    return Client(sdk=name or wire, wire=wire)


def kept_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    kept: dict[str, str] = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered in KEPT_HEADERS or lowered.startswith(KEPT_HEADER_PREFIXES):
            kept[lowered] = value
    return dict(sorted(kept.items()))


def media_type(headers: Mapping[str, str]) -> str:
    return str(headers.get("content-type") or "").split(";", 1)[0].strip().lower()


def is_sse(status: int, headers: Mapping[str, str]) -> bool:
    return status == 200 and media_type(headers) == SSE_TYPE


def json_body(content: bytes) -> Any:
    """``content`` as JSON, or ``None`` when it is not JSON."""
    if not content:
        return None
    try:
        return json.loads(content)
    except ValueError:
        return None


def stored_response(status: int, headers: Mapping[str, str], content: bytes) -> dict[str, Any]:
    """The stored form of a whole (not streamed) response."""
    stored: dict[str, Any] = {"status": status}
    kept = kept_headers(headers.items())
    if kept:
        stored["headers"] = kept
    kind = media_type(headers)
    if not content:
        return stored
    if kind.endswith("json"):
        body = json_body(content)
        if body is not None:
            stored["body"] = body
            return stored
    if kind.startswith("text/") or kind.endswith(("json", "xml")):
        try:
            stored["text"] = content.decode("utf-8")
            return stored
        except UnicodeDecodeError:
            pass
    stored["base64"] = base64.b64encode(content).decode("ascii")
    return stored


def response_parts(stored: Mapping[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body bytes) of a stored whole response, as the SDK will read it."""
    status = int(stored.get("status") or 200)
    headers = {str(k): str(v) for k, v in dict(stored.get("headers") or {}).items()}
    if "body" in stored:
        content = json.dumps(stored["body"], ensure_ascii=False, separators=(",", ":")).encode()
        headers.setdefault("content-type", "application/json")
    elif "text" in stored:
        content = str(stored["text"]).encode("utf-8")
    elif "base64" in stored:
        content = base64.b64decode(str(stored["base64"]).encode("ascii"))
    else:
        content = b""
    return status, headers, content


def is_whole_response(stored: Any) -> bool:
    return isinstance(stored, dict) and "status" in stored


# -- server-sent events ---------------------------------------------------------------------


class SSEParser:
    """Server-sent events from bytes as they arrive (the WHATWG rules), each a dict of the
    fields it had; JSON ``data`` is stored parsed, so a cassette shows it as data."""

    def __init__(self) -> None:
        self._buffer = b""
        self._fields: dict[str, Any] = {}
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self._buffer += chunk
        events: list[dict[str, Any]] = []
        while True:
            line, ending = _split_line(self._buffer)
            if ending is None:
                return events
            self._buffer = self._buffer[len(line) + len(ending) :]
            event = self._line(line.decode("utf-8"))
            if event is not None:
                events.append(event)

    def flush(self) -> list[dict[str, Any]]:
        """The event a stream that ended without a last blank line still held."""
        events = self.feed(b"\n") if self._buffer else []
        last = self._line("")
        return [*events, last] if last is not None else events

    def _line(self, line: str) -> dict[str, Any] | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name in ("event", "id"):
            self._fields[name] = value
        elif name == "retry" and value.isdigit():
            self._fields[name] = int(value)
        return None

    def _dispatch(self) -> dict[str, Any] | None:
        if not self._data and not self._fields:
            return None
        event = dict(self._fields)
        if self._data:
            event["data"] = _data_value("\n".join(self._data))
        self._fields, self._data = {}, []
        return event


def _split_line(buffer: bytes) -> tuple[bytes, bytes | None]:
    """The first line of ``buffer`` and its ending (``None``: no whole line yet)."""
    lf, cr = buffer.find(b"\n"), buffer.find(b"\r")
    if cr == -1 or (lf != -1 and lf < cr):
        return (buffer[:lf], b"\n") if lf != -1 else (buffer, None)
    if cr + 1 == len(buffer):
        return buffer, None  # a CR at the end may be the first half of a CRLF: wait
    return buffer[:cr], (b"\r\n" if buffer[cr + 1] == 0x0A else b"\r")


def _data_value(text: str) -> Any:
    if text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def event_bytes(event: Mapping[str, Any]) -> bytes:
    """One stored event as the bytes a server sends (what the SDK's decoder reads)."""
    lines = []
    for name in ("event", "id", "retry"):
        if name in event:
            lines.append(f"{name}: {event[name]}")
    if "data" in event:
        data = event["data"]
        text = (
            data
            if isinstance(data, str)
            else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        )
        lines.extend(f"data: {part}" for part in text.split("\n"))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def is_terminal(event: Mapping[str, Any]) -> bool:
    return event.get("data") == DONE or event.get("event") in TERMINAL_EVENTS


def stream_tokens(events: list[Any]) -> int:
    """Total tokens of a recorded stream: the last usage any event carried (OpenAI's usage
    chunk, ``response.completed``), or Anthropic's input tokens from ``message_start`` plus
    its output tokens from the last ``message_delta``."""
    total = inputs = outputs = 0
    for event in events:
        data = event.get("data") if isinstance(event, dict) else None
        if not isinstance(data, dict):
            continue
        for holder in (data, data.get("message"), data.get("response")):
            usage = holder.get("usage") if isinstance(holder, dict) else None
            if not isinstance(usage, dict):
                continue
            if isinstance(usage.get("total_tokens"), int):
                total = usage["total_tokens"]
            if isinstance(usage.get("input_tokens"), int):
                inputs = usage["input_tokens"]
            if isinstance(usage.get("output_tokens"), int):
                outputs = usage["output_tokens"]
    return total or inputs + outputs
