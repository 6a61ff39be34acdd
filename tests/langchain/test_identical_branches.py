"""Concurrent LangGraph branches that ask the model the same thing each get their own answer.

Three nodes after ``START`` (and, in the map-reduce, ``Send`` branches) send identical
requests through a real ``ChatOpenAI`` to the fake provider, which answers each with a fresh
nonce after a random delay; a join node then asks about the answers in the graph's fixed
order. On replay the branches' threads look their requests up in whatever order the OS runs
them, so a replay that served identical requests first-come-first-served handed branch ``a``
the answer recorded for ``b``: the join's request then missed. Each branch must get the
answer its own node was given when recording, every time.
"""

from __future__ import annotations

import asyncio
import operator
import random
import time
import uuid
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from fakes.nowhere import closed_port_url
from fakes.turns import Reply, Turn
from fakes.wire import FakeServer
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from chaincassette import use_cassette

REPLAYS = 25
QUESTION = "Why is the sky blue?"


def slow_nonce(turn: Turn) -> Reply:
    """Answers after a random delay (branches finish in any order), each with a new nonce."""
    time.sleep(random.uniform(0, 0.08))
    return Reply(text=f"{turn.last_user} #{uuid.uuid4().hex[:8]}")


def chat(url: str) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key="not-a-real-key", max_retries=0)  # type: ignore[arg-type]


class Branches(TypedDict, total=False):
    a: str
    b: str
    c: str
    other: str
    joined: str


def branches(url: str) -> Any:
    """``a``, ``b`` and ``c`` ask the same question, ``other`` another; ``join`` quotes all."""
    model = chat(url)

    def ask(name: str, text: str) -> Any:
        return lambda state: {name: str(model.invoke(text).content)}

    def join(state: Branches) -> Branches:
        quoted = " | ".join(state[n] for n in ("a", "b", "c", "other"))  # type: ignore[literal-required]
        return {"joined": str(model.invoke("Join: " + quoted).content)}

    graph = StateGraph(Branches)
    for name in ("a", "b", "c"):
        graph.add_node(name, ask(name, QUESTION))
    graph.add_node("other", ask("other", "Why is grass green?"))
    graph.add_node("join", join)
    for name in ("a", "b", "c", "other"):
        graph.add_edge(START, name)
    graph.add_edge(["a", "b", "c", "other"], "join")
    graph.add_edge("join", END)
    return graph.compile()


SUBJECTS = ["cats", "dogs", "cats", "cats", "dogs"]


class Jokes(TypedDict, total=False):
    jokes: Annotated[list[str], operator.add]
    best: str


def map_reduce(url: str, *, is_async: bool) -> Any:
    """The how-to's map-reduce: one ``Send`` per subject (some the same), then a reduce."""
    model = chat(url)

    def fan_out(state: Jokes) -> list[Send]:
        return [Send("joke", {"subject": s}) for s in SUBJECTS]

    def joke(state: dict[str, str]) -> Jokes:
        return {"jokes": [str(model.invoke(f"Joke about {state['subject']}").content)]}

    async def ajoke(state: dict[str, str]) -> Jokes:
        answer = await model.ainvoke(f"Joke about {state['subject']}")
        return {"jokes": [str(answer.content)]}

    def best(state: Jokes) -> Jokes:
        return {"best": str(model.invoke("Best of: " + " | ".join(state["jokes"])).content)}

    graph = StateGraph(Jokes)
    graph.add_node("joke", ajoke if is_async else joke)
    graph.add_node("best", best)
    graph.add_conditional_edges(START, fan_out, ["joke"])
    graph.add_edge("joke", "best")
    graph.add_edge("best", END)
    return graph.compile()


def solo_then_branches(url: str) -> Any:
    """Node ``a`` asks alone first (its recording names no branch: it overlapped nothing),
    then with the others: the lone call must not take the answer a concurrent ``a`` got."""
    model = chat(url)
    graph = StateGraph(Branches)
    graph.add_node("a", lambda state: {"a": str(model.invoke(QUESTION).content)})
    graph.add_edge(START, "a")
    graph.add_edge("a", END)
    return [graph.compile().invoke({}), branches(url).invoke({})]


PROGRAMS = {
    "branches": lambda url: branches(url).invoke({}),
    "solo": solo_then_branches,
    "send": lambda url: map_reduce(url, is_async=False).invoke({"jokes": []}),
    "asend": lambda url: asyncio.run(map_reduce(url, is_async=True).ainvoke({"jokes": []})),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_each_branch_replays_its_own_answer(tmp_path: Path, name: str) -> None:
    program = PROGRAMS[name]
    cassette = tmp_path / f"{name}.yaml"
    with FakeServer(slow_nonce) as fake, use_cassette(cassette, mode="record"):
        recorded = program(fake.url)
    last = recorded[-1] if isinstance(recorded, list) else recorded
    assert len(set(last.get("jokes") or [last[n] for n in ("a", "b", "c")])) > 1
    dead = closed_port_url()
    for _ in range(REPLAYS):
        with use_cassette(cassette) as replay:
            assert program(dead) == recorded
        assert replay.stats.missed == 0 and replay.stats.recorded == 0
