"""A LangChain program whose parallel tool results reach the model in the order they finish.

The program is a hand-written agent loop, as many are: the model asks for two tools, both
run concurrently, each ``ToolMessage`` is appended when its tool finishes, and the model
is asked again. The second request therefore carries the tool results in finishing order,
which changes from run to run. Recorded once, it must replay identically whatever the order,
with no provider call. Forced orders ("ab": weather first, "ba": time first) prove both
orders really happen; random latencies are what a real program sees.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from fake_provider import PROVIDER_CALLS, FakeProviderChat
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from lc_programs import messages_summary

from chaincassette import use_cassette

FINISHED: list[str] = []
#: "ab" makes get_weather finish first, "ba" get_time, "random" gives both a random latency.
#: A forced order holds the later tool until the earlier one has finished (bounded wait).
ORDER: dict[str, Any] = {"mode": "random", "first_done": None}


async def _finish(name: str) -> None:
    mode = ORDER["mode"]
    if mode == "random":
        await asyncio.sleep(random.random() / 100)
    elif mode[1] == name:
        await asyncio.wait_for(ORDER["first_done"].wait(), timeout=60)
    FINISHED.append(name)
    if mode != "random" and mode[0] == name:
        ORDER["first_done"].set()


@tool
async def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    await _finish("a")
    return f"Sunny in {city}"


@tool
async def get_time(tz: str) -> str:
    """Get the current time in a timezone."""
    await _finish("b")
    return f"12:00 {tz}"


TOOLS = {t.name: t for t in (get_weather, get_time)}


async def agent_loop(question: str) -> list[BaseMessage]:
    model = FakeProviderChat(scenario="parallel").bind_tools(list(TOOLS.values()))
    messages: list[BaseMessage] = [HumanMessage(question)]
    answer = await model.ainvoke(messages)
    messages.append(answer)
    running = [asyncio.create_task(TOOLS[c["name"]].ainvoke(c)) for c in answer.tool_calls]
    for finished in asyncio.as_completed(running):
        result = await finished
        assert isinstance(result, ToolMessage)
        messages.append(result)
    messages.append(await model.ainvoke(messages))
    return messages


def run(order: str) -> list[dict[str, Any]]:
    """One run of the program whose tools finish in ``order`` ("ab", "ba" or "random")."""
    FINISHED.clear()
    ORDER["mode"] = order
    ORDER["first_done"] = asyncio.Event()
    try:
        return messages_summary(asyncio.run(agent_loop("Weather and time in Paris?")))
    finally:
        ORDER["mode"] = "random"


def tool_names(summary: list[dict[str, Any]]) -> list[str]:
    return [m["name"] for m in summary if m["type"] == "tool"]


@pytest.mark.parametrize("recorded_order", ["ab", "ba"])
def test_parallel_tool_results_replay_in_either_finishing_order(
    tmp_path: Path, recorded_order: str
) -> None:
    path = tmp_path / "parallel.yaml"
    with use_cassette(path, mode="record"):
        recorded = run(recorded_order)
    assert list(recorded_order) == FINISHED
    by_order = {"ab": ["get_weather", "get_time"], "ba": ["get_time", "get_weather"]}
    assert tool_names(recorded) == by_order[recorded_order]  # the model saw this order
    calls = len(PROVIDER_CALLS)
    assert calls == 2
    for order in ["ab", "ba"] * 5:
        with use_cassette(path, mode="replay") as cassette:
            replayed = run(order)
        assert list(order) == FINISHED
        assert tool_names(replayed) == by_order[order]
        # the tool messages follow the run; every model answer is the recorded one
        assert [m for m in replayed if m["type"] == "ai"] == [
            m for m in recorded if m["type"] == "ai"
        ]
        assert cassette.stats.missed == 0 and cassette.stats.replayed == 2
    assert len(PROVIDER_CALLS) == calls


def test_parallel_tool_results_in_random_order_replay_every_time(tmp_path: Path) -> None:
    path = tmp_path / "parallel.yaml"
    with use_cassette(path, mode="record"):
        recorded = run("random")
    calls = len(PROVIDER_CALLS)
    answers = [m for m in recorded if m["type"] == "ai"]
    for _ in range(15):
        with use_cassette(path, mode="replay") as cassette:
            replayed = run("random")
        assert sorted(FINISHED) == ["a", "b"]
        assert [m for m in replayed if m["type"] == "ai"] == answers
        assert sorted(map(str, replayed)) == sorted(map(str, recorded))  # same messages
        assert cassette.stats.missed == 0
    assert len(PROVIDER_CALLS) == calls
