"""Helpers shared by the CLI tests: real cassettes recorded through the engine, git."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

from chaincassette import Cassette, runs


def chat_request(
    question: str, *, temperature: float = 0.0, history: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "kind": "chat",
        "model": "gpt-4o-mini",
        "params": {"temperature": temperature},
        "tools": [
            {
                "type": "function",
                "function": {"name": "get_weather", "parameters": {"type": "object"}},
            }
        ],
        "messages": [
            {"role": "system", "content": "You are a weather assistant."},
            {"role": "user", "content": question},
            *(history or []),
        ],
    }


TOOL_TURN = [
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_9xq", "name": "get_weather", "args": {"city": "Paris"}}],
    },
    {"role": "tool", "tool_call_id": "call_9xq", "content": "12C and sunny"},
]


def ai(
    content: str = "", tool_calls: list[dict[str, Any]] | None = None, tokens: int = 20
) -> dict[str, Any]:
    """A response shaped like the LangChain integration's: a generation holding an AI message."""
    data: dict[str, Any] = {"content": content}
    if tool_calls:
        data["tool_calls"] = tool_calls
    return {
        "generations": [{"type": "ChatGeneration", "message": {"type": "ai", "data": data}}],
        "llm_output": {"token_usage": {"total_tokens": tokens}},
    }


def record_agent(
    path: Path, question: str = "Weather in Paris?", answer: str = "It is 12C and sunny."
) -> Path:
    """A two-turn tool-calling conversation, recorded through the engine as an integration would,
    by a run of its own (record mode then rewrites what earlier calls recorded)."""
    previous = os.environ.get(runs.RUN_ENV)
    os.environ[runs.RUN_ENV] = f"record-agent-{uuid.uuid4().hex}"
    try:
        cassette = Cassette(path, mode="record")
        meta = {"framework": "langchain", "agent": "weather"}
        call = {"id": "call_9xq", "name": "get_weather", "args": {"city": "Paris"}}
        cassette.begin(chat_request(question), meta=meta).answer(
            lambda: ai(tool_calls=[call], tokens=40)
        )
        cassette.begin(chat_request(question, history=TOOL_TURN), meta=meta).answer(
            lambda: ai(answer, tokens=25)
        )
        cassette.save()
    finally:
        if previous is None:
            os.environ.pop(runs.RUN_ENV, None)
        else:
            os.environ[runs.RUN_ENV] = previous
    return path


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
