"""Hand-authored provider errors: deterministic fault injection for agents.

An interaction whose response is ``{"error": {...}}`` is replayed by raising that error
(``error_codec.rebuild_error``), whether a recording run put it there or a person did.
``fault(name)`` is the stored form of a typical provider failure, as OpenAI's client
raises it (the class itself when ``openai`` is imported where the cassette replays,
else a look-alike with the same text that ``except Exception`` catches)::

    response:
      error:
        type: openai.RateLimitError
        bases: [openai.APIStatusError, openai.APIError, openai.OpenAIError, builtins.Exception]
        message: "Error code: 429 - Rate limit reached"
        status: 429
        headers: {retry-after: "1"}

``chaincassette fault FILE --interaction N --error rate_limit`` writes it for you.
"""

from __future__ import annotations

import re
from typing import Any

from .error_codec import refusal

_QUALIFIED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_STATUS_BASES = ["openai.APIStatusError", "openai.APIError", "openai.OpenAIError"]
_CONNECTION_BASES = ["openai.APIConnectionError", "openai.APIError", "openai.OpenAIError"]
_TAIL = ["builtins.Exception", "builtins.BaseException"]

#: name -> (class, its bases, HTTP status or None, default message, error type, code)
FAULTS: dict[str, tuple[str, list[str], int | None, str, str | None, str | None]] = {
    "rate_limit": (
        "openai.RateLimitError",
        _STATUS_BASES,
        429,
        "Rate limit reached for requests. Please try again in 1s.",
        "requests",
        "rate_limit_exceeded",
    ),
    "server_error": (
        "openai.InternalServerError",
        _STATUS_BASES,
        500,
        "The server had an error while processing your request.",
        "server_error",
        None,
    ),
    "overloaded": (
        "openai.InternalServerError",
        _STATUS_BASES,
        503,
        "The engine is currently overloaded, please try again later.",
        "server_error",
        None,
    ),
    "content_filter": (
        "openai.BadRequestError",
        _STATUS_BASES,
        400,
        "The response was filtered due to the prompt triggering content management policy.",
        "invalid_request_error",
        "content_filter",
    ),
    "auth": (
        "openai.AuthenticationError",
        _STATUS_BASES,
        401,
        "Incorrect API key provided.",
        "invalid_request_error",
        "invalid_api_key",
    ),
    "timeout": ("openai.APITimeoutError", _CONNECTION_BASES, None, "Request timed out.", None, None),
    "connection": ("openai.APIConnectionError", ["openai.APIError", "openai.OpenAIError"], None,
                   "Connection error.", None, None),
}  # fmt: skip


def fault(
    name: str,
    *,
    message: str | None = None,
    type_name: str | None = None,
    status: int | None = None,
    retry_after: float | None = None,
) -> dict[str, Any]:
    """The stored ``error`` of the fault ``name`` (see ``FAULTS``); raises ``ValueError``
    naming the known faults for an unknown one, and for a ``type_name`` that is not a
    class's qualified name or not an error of a call (``error_codec.refusal``: a test's
    skip, ``KeyboardInterrupt``, ``SystemExit`` are refused)."""
    if name not in FAULTS:
        raise ValueError(f"unknown fault {name!r}; expected one of: {', '.join(sorted(FAULTS))}")
    if type_name is not None:
        if not _QUALIFIED.fullmatch(type_name):
            raise ValueError(
                f"--type {type_name!r} is not a class's qualified name (module.Class, e.g. "
                "anthropic.RateLimitError)"
            )
        why = refusal(type_name)
        if why is not None:
            raise ValueError(f"--type {type_name} cannot be a provider error: {why}")
    kind, bases, default_status, default_message, error_type, code = FAULTS[name]
    kind = type_name or kind
    status = status if status is not None else default_status
    detail = message or default_message
    text = f"Error code: {status} - {detail}" if status is not None else detail
    qualname = kind.rpartition(".")[2]
    error: dict[str, Any] = {
        "type": kind,
        "bases": [*bases, *_TAIL] if type_name is None else [*_TAIL],
        "args": [text],
        "message": text,
        "repr": f"{qualname}({text!r})",
    }
    if status is not None:
        error["status"] = status
        body = {"message": detail, "type": error_type, "param": None, "code": code}
        error["attributes"] = {
            "status_code": status,
            "message": text,
            "body": body,
            "type": error_type,
            "code": code,
            "param": None,
        }
    if name == "rate_limit" or retry_after is not None:
        error["headers"] = {"retry-after": str(retry_after if retry_after is not None else 1)}
    return error
