"""An SDK call in the trace where it happened: under the LangGraph tool that made it, under
the LlamaIndex workflow (naming the step), or on its own; a replay compares it as recorded."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest
from fakes.wire import FakeServer
from sdk_clients import DEAD, anthropic_client, openai_client

from chaincassette import Cassette, use_cassette
from chaincassette.trace import TraceDivergenceWarning


def langgraph_agent(url: str) -> Any:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def summarise(topic: str) -> str:
        """Summarise a topic."""
        completion = openai_client(url).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"Summarise {topic}"}]
        )
        return str(completion.choices[0].message.content)

    model = ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key="sk-x", max_retries=0)
    return create_agent(model, [summarise])


def workflow(base: str) -> Any:
    from llama_index.core.workflow import StartEvent, StopEvent, Workflow, step

    class Review(Workflow):
        @step
        async def grade(self, ev: StartEvent) -> StopEvent:
            message = anthropic_client(base).messages.create(
                model="claude-sonnet-4-5",
                max_tokens=8,
                messages=[{"role": "user", "content": str(ev.draft)}],
            )
            return StopEvent(result=message.content[0].text)

    return Review(timeout=10)


def children(trace: list[dict[str, Any]], parent: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        n
        for n in trace
        if n.get("parent") == parent["id"] and n.get("source") == parent.get("source")
    ]


def record_and_replay(tmp_path: Path, run: Any, fake: FakeServer) -> list[dict[str, Any]]:
    path = tmp_path / "t.yaml"
    with use_cassette(path, mode="record"):
        recorded = run(fake.url, fake.base)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceDivergenceWarning)
        with use_cassette(path, mode="replay") as cassette:
            assert run(DEAD + "/v1", DEAD) == recorded
    assert cassette.trace_divergence is None
    trace = Cassette(path, mode="replay").recorded_trace
    assert trace is not None
    return trace


def test_a_call_in_a_langgraph_tool_hangs_under_the_tool(tmp_path: Path, fake: FakeServer) -> None:
    def run(url: str, base: str) -> str:
        result = langgraph_agent(url).invoke({"messages": [("user", "Docker please")]})
        return str(result["messages"][-1].content)

    trace = record_and_replay(tmp_path, run, fake)
    (tool,) = [n for n in trace if n["type"] == "tool"]
    assert tool["name"] == "summarise"
    (sdk,) = children(trace, tool)
    assert (
        sdk["type"] == "llm" and sdk["name"] == "openai chat.completions" and len(sdk["key"]) == 16
    )


def test_a_call_in_a_workflow_step_names_the_step(tmp_path: Path, fake: FakeServer) -> None:
    def run(url: str, base: str) -> str:
        async def main() -> str:
            return str(await workflow(base).run(draft="My essay"))

        return asyncio.run(main())

    trace = record_and_replay(tmp_path, run, fake)
    (chain,) = [n for n in trace if n["type"] == "chain" and n["name"] == "Review"]
    (sdk,) = children(trace, chain)
    assert sdk["name"] == "anthropic messages" and sdk["in"].endswith("Review.grade")


def test_a_call_outside_every_framework_is_traced_on_its_own(
    tmp_path: Path, fake: FakeServer
) -> None:
    def run(url: str, base: str) -> list[str]:
        client = openai_client(url)
        said = []
        for question in ("b", "a"):
            completion = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
            )
            said.append(str(completion.choices[0].message.content))
        client.embeddings.create(model="text-embedding-3-small", input="x")
        return said

    trace = record_and_replay(tmp_path, run, fake)
    assert [(n["type"], n["name"], n["parent"]) for n in trace] == [
        ("embedding", "openai embeddings", None),
        ("llm", "openai chat.completions", None),
        ("llm", "openai chat.completions", None),
    ]


def test_a_replay_that_skips_a_call_says_so(tmp_path: Path, fake: FakeServer) -> None:
    path = tmp_path / "t.yaml"
    ask = [{"role": "user", "content": "Hi"}]
    with use_cassette(path, mode="record"):
        openai_client(fake.url).chat.completions.create(model="gpt-4o-mini", messages=ask)
        anthropic_client(fake.base).messages.create(
            model="claude-sonnet-4-5", max_tokens=8, messages=ask
        )
    with (
        pytest.warns(
            TraceDivergenceWarning, match="anthropic messages: recorded but did not happen"
        ),
        use_cassette(path, mode="replay"),
    ):
        openai_client(DEAD + "/v1").chat.completions.create(model="gpt-4o-mini", messages=ask)
