"""What every wire format shares: the turn a request asks for, the reply the scripted model
gives, the answer the server writes, and the random ids, timestamps and usage real APIs
put in every answer (a replay that reached the fake would not reproduce a recording)."""

from __future__ import annotations

import base64
import json
import os
import random
import string
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ALNUM = string.ascii_letters + string.digits
HEX = string.hexdigits.lower()[:16]


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(random.choice(alphabet) for _ in range(n))


def signature() -> str:
    """An opaque signature or encrypted blob, fresh every time, as providers send them."""
    return base64.b64encode(os.urandom(48)).decode()


def created() -> int:
    """A ``created`` timestamp a little in the past, as a busy API's clock gives it."""
    return int(time.time()) - random.randint(0, 50)


def words(text: str) -> list[str]:
    """The text as a stream sends it: word by word, each with its trailing space."""
    parts = text.split(" ")
    pieces = [p + (" " if i < len(parts) - 1 else "") for i, p in enumerate(parts)]
    return [piece for piece in pieces if piece]


def text_of(content: Any) -> str:
    """The text of any wire's message content (a string, parts, blocks, a tool result)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(text_of(c) for c in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output", "json"):
            if key in content:
                return text_of(content[key])
        return json.dumps(content, sort_keys=True)
    return "" if content is None else str(content)


@dataclass
class Turn:
    """What the scripted model reads of a request, the same for every wire format."""

    model: str
    tools: list[dict[str, Any]]  # {"name", "parameters"} each, in the order offered
    results: list[str]  # the tool results so far, in order
    last_user: str  # the text of the last user message (or the completion's prompt)
    last_text: str = ""  # the text of the last message, whoever sent it
    answered: bool = False  # the last message is a tool result
    key: str = ""  # the API key the caller sent


Said = list[tuple[str, list[tuple[str, str]]]]
"""A conversation as ``(role, [(kind, text)…])``: kind ``result`` for a tool result, else
``text``; how the block-based wires (Anthropic, Gemini, Bedrock) hand theirs over."""


def said_of(
    messages: list[dict[str, Any]],
    blocks: str,
    kind: Callable[[dict[str, Any]], tuple[str, str] | None],
) -> Said:
    """The conversation of block-based messages: ``kind`` reads one block (``None``: not
    one the model reads)."""
    return [
        (str(m.get("role")), [k for b in m.get(blocks) or [] if (k := kind(b)) is not None])
        for m in messages
    ]


def conversation(model: str, tools: list[dict[str, Any]], said: Said) -> Turn:
    results: list[str] = []
    last_user = last_text = ""
    answered = False
    for role, blocks in said:
        answered = False
        for kind, text in blocks:
            answered = answered or kind == "result"
            if kind == "result":
                results.append(text)
            elif role == "user":
                last_user = text
            last_text = text
    return Turn(model, tools, results, last_user, last_text, answered)


@dataclass
class Reply:
    """What the scripted model says: a text or tool calls, and the tokens it counts."""

    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    usage: tuple[int, int] | None = None  # (input, output) tokens; random when not given

    def tokens(self) -> tuple[int, int]:
        if self.usage is not None:
            return self.usage
        return random.randint(20, 200), random.randint(5, 50)


@dataclass
class Answer:
    """What the server writes back: a JSON body, SSE events or NDJSON lines."""

    payload: Any = None
    events: list[tuple[str | None, Any]] | None = None
    lines: list[Any] | None = None
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    dropped: bool = False
    """The headers of a stream, then the connection drops before its first event."""
    hung_up: bool = False
    """No answer at all: the connection closes unanswered (the client's transport raises)."""
    stall: float = 0.0
    """Seconds the answer waits before it is written (a client's timeout may come first)."""


Script = Callable[[Turn], Reply | Answer]
"""A scripted model: the reply to one turn, or an error (an ``Answer``) in its place."""


def error(status: int, message: str, kind: str, **fields: Any) -> Answer:
    """An error in OpenAI's shape (``{"error": {...}}``), which every client here reads."""
    body = {"message": message, "type": kind, "param": None, "code": None, **fields}
    return Answer({"error": body}, status=status)
