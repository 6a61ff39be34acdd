"""A LangGraph human-in-the-loop program (a tool that calls ``interrupt()``, resumed by
``Command(resume=...)``) replays without a trace divergence: the interrupt's id is new in
every run (it hashes the checkpoint's task id), so the trace names the control-flow error
the tool raised by its type, not by its text. Real ``ChatOpenAI`` against the fake server."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from fakes.nowhere import closed_port_url
from fakes.scripts import weather_tour
from fakes.wire import FakeServer
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent
from langgraph.types import Command, interrupt

from chaincassette import use_cassette
from chaincassette.trace import TraceDivergenceWarning


def get_weather(city: str) -> str:
    """Today's weather in a city."""
    allowed = interrupt({"question": f"look up the weather in {city}?"})
    return f"sunny in {city} ({allowed})"


def get_time(city: str) -> str:
    """The local time in a city."""
    return f"10:00 in {city}"


def _run(url: str) -> list[Any]:
    model = ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key="sk-test", max_retries=0)
    agent = create_react_agent(model, [get_weather, get_time], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "1"}}
    result = agent.invoke({"messages": [("user", "Weather and time in Paris?")]}, config)
    asked = []
    while result.get("__interrupt__"):
        asked += [i.value["question"] for i in result["__interrupt__"]]
        result = agent.invoke(Command(resume="yes"), config)
    return [asked, [m.content for m in result["messages"]]]


def test_an_interrupted_tool_replays_on_the_recorded_path(tmp_path: Path) -> None:
    cassette = tmp_path / "interrupts.yaml"
    with FakeServer(weather_tour) as fake, use_cassette(cassette, mode="record"):
        recorded = _run(fake.url)
    assert recorded[0] == ["look up the weather in Paris?", "look up the weather in Lyon?"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceDivergenceWarning)
        with use_cassette(cassette, mode="replay") as replay:
            assert _run(closed_port_url()) == recorded
    assert replay.trace_divergence is None
    assert replay.stats.replayed == 3
