"""The errors the fake answers with, the way OpenAI words them: faults set up by a test
(``fail``) and faults a request asks for by what it says (``BAD_KEY``, ``RATE_LIMIT_ONCE``,
``DROP_STREAM`` in a streamed request: the SDK's ``create`` returns, reading the stream raises;
``HANG_UP_TWICE``/``HANG_UP_ALWAYS``: the connection closes unanswered, a connection error;
``STALL_ONCE``/``STALL_ALWAYS``: the answer comes ``STALL_SECONDS`` late, after any client
timeout a test sets, a timeout)."""

from __future__ import annotations

import json
import threading
from typing import Any

from fakes.turns import Answer, error

MESSAGES = {
    429: "Rate limit reached for gpt-4o-mini on requests per min: Limit 3.",
    500: "The server had an error while processing your request.",
}
KINDS = {429: "requests", 500: "server_error", 400: "invalid_request_error"}
#: Marker → how many times the same request body is hung up on before it is answered.
HANG_UPS = {"HANG_UP_TWICE": 2, "HANG_UP_ALWAYS": 1_000_000}
#: Marker → how many times the same request body is answered late before it is answered.
STALLS = {"STALL_ONCE": 1, "STALL_ALWAYS": 1_000_000}
#: How late a stalled answer comes: longer than the tests' client timeouts (a second or so).
STALL_SECONDS = 10.0


def status_error(status: int) -> Answer:
    """OpenAI's error body for ``status``, with a ``retry-after`` of 0."""
    code = "rate_limit_exceeded" if status == 429 else None
    answer = error(
        status, MESSAGES.get(status, "Bad request."), KINDS.get(status, "invalid_request_error")
    )
    answer.payload["error"]["code"] = code
    answer.headers += [("retry-after", "0"), ("x-ratelimit-remaining-requests", "0")]
    return answer


def key_of(headers: dict[str, str]) -> str:
    """The API key a request carries (OpenAI's bearer token or Anthropic's ``x-api-key``)."""
    return headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")


def bad_key(quoted: str) -> Answer:
    """OpenAI's 401, which quotes the caller's key (``quoted``: whole or masked)."""
    message = (
        f"Incorrect API key provided: {quoted}. You can find your "
        "API key at https://platform.openai.com/account/api-keys."
    )
    return error(401, message, "invalid_request_error", code="invalid_api_key")


class Faults:
    """The faults still to serve; thread-safe, as the server answers on many threads."""

    def __init__(self) -> None:
        self._planned: list[list[Any]] = []
        self._limited: set[str] = set()
        self._hung_up: dict[str, int] = {}
        self._stalled: dict[str, int] = {}
        self._lock = threading.Lock()

    def fail(self, match: str, status: int, times: int = 1) -> None:
        """The next ``times`` requests whose path or model contains ``match`` get ``status``."""
        with self._lock:
            self._planned.append([match, status, times])

    def take(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Answer | None:
        """The error this request gets, if any (each planned fault and marker serves once)."""
        text = json.dumps(body)
        if "BAD_KEY" in text:
            return bad_key(key_of(headers))
        if "DROP_STREAM" in text and body.get("stream"):
            return Answer(events=[], dropped=True)
        with self._lock:
            for marker, times in HANG_UPS.items():
                if marker in text and self._hung_up.get(text, 0) < times:
                    self._hung_up[text] = self._hung_up.get(text, 0) + 1
                    return Answer(hung_up=True)
            for fault in self._planned:
                if fault[0] in f"{path} {body.get('model')}" and fault[2] > 0:
                    fault[2] -= 1
                    return status_error(int(fault[1]))
            marker = text.split("RATE_LIMIT_ONCE", 1)[-1][:40] if "RATE_LIMIT_ONCE" in text else ""
            if marker and marker not in self._limited:
                self._limited.add(marker)
                return status_error(429)
        return None

    def stall(self, body: dict[str, Any]) -> float:
        """How many seconds this request's answer waits before it is written (0: none)."""
        text = json.dumps(body)
        with self._lock:
            for marker, times in STALLS.items():
                if marker in text and self._stalled.get(text, 0) < times:
                    self._stalled[text] = self._stalled.get(text, 0) + 1
                    return STALL_SECONDS
        return 0.0
