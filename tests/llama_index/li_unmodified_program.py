"""A user's LlamaIndex program, as written without chaincassette: it builds its own LLMs.

A ``FunctionCallingLLM`` passed as ``llm=`` to agents (streaming and not), another one
assigned to ``Settings.llm`` halfway through and picked up by an agent without ``llm=``,
and direct completions, sync and streamed. ``li_run_program.py`` runs it inside
``use_cassette``; nothing here knows about cassettes.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from li_fake_provider import FakeProvider, Reply
from llama_index.core import Settings
from llama_index.core.agent.workflow import AgentStream, FunctionAgent, ToolCall, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def policy(messages: Sequence[ChatMessage], tools: list[dict[str, Any]]) -> Reply:
    results = [m.content for m in messages if m.role.value == "tool"]
    if results:
        return Reply(text=f"The answer is {results[-1]}.")
    if tools:
        return Reply(text="Let me add.", tool_calls=[("add", {"a": 2, "b": 3})])
    return Reply(text="Hello there, friend.")


async def streamed_agent(llm: FakeProvider) -> list[Any]:
    handler = FunctionAgent(tools=[add], llm=llm).run(user_msg="What is 2 + 3?")
    events: list[Any] = []
    async for event in handler.stream_events():
        if isinstance(event, AgentStream):
            events.append(["stream", event.delta, [c.tool_id for c in event.tool_calls]])
        elif isinstance(event, (ToolCall, ToolCallResult)):
            events.append([type(event).__name__, event.tool_id, event.tool_kwargs])
    events.append(["result", str(await handler)])
    return events


async def main() -> dict[str, Any]:
    llm = FakeProvider(policy=policy)
    streamed = await streamed_agent(llm)
    plain = str(await FunctionAgent(tools=[add], llm=llm, streaming=False).run("What is 2 + 3?"))
    Settings.llm = FakeProvider(policy=policy, temperature=0.5)
    settings = str(await FunctionAgent(tools=[add], streaming=False).run("What is 2 + 3?"))
    completion = Settings.llm.complete("Say hello").text
    deltas = [r.delta async for r in await llm.astream_complete("Say hello")]
    return {
        "streamed": streamed,
        "plain": plain,
        "settings": settings,
        "completion": completion,
        "deltas": deltas,
    }
