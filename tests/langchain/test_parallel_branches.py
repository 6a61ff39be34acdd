"""Branches of a ``RunnableParallel`` that ask the model the same thing each get their own answer.

Outside LangGraph too: ``RunnableParallel(one=chain, two=chain)`` sends one request per
branch in one ``invoke``, through a real ``ChatOpenAI`` to the fake provider, which answers
each with a fresh nonce after a random delay. The branches' threads (or tasks) look their
requests up in whatever order they run, so a replay that served identical requests
first-come-first-served swapped ``one``'s and ``two``'s answers in about half the replays.
Each branch is named by the ``map:key`` tags above its call, the same in every run.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import pytest
from fakes.nowhere import closed_port_url
from fakes.wire import FakeServer
from langchain_core.globals import set_llm_cache
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableParallel
from langgraph.graph import END, START, StateGraph
from test_identical_branches import QUESTION, chat, slow_nonce

from chaincassette import use_cassette
from chaincassette.integrations.langchain import CassetteCache

REPLAYS = 25
HERE = Path(__file__).resolve().parent


def chain(url: str) -> Any:
    prompt = ChatPromptTemplate.from_messages([("human", "{q}")])
    return prompt | chat(url) | StrOutputParser()


def pair(url: str) -> Any:
    """Two branches running the same chain: identical requests in one ``invoke``."""
    other = (lambda d: {"q": d["q"] + " Briefly."}) | chain(url)
    return RunnableParallel(one=chain(url), two=chain(url), other=other)


def nested(url: str) -> Any:
    """Parallels in parallels: ``x/one`` and ``y/one`` (and a dict step) ask the same."""
    return RunnableParallel(x=pair(url), y=pair(url), z={"a": chain(url), "b": chain(url)})


def bare(url: str) -> Any:
    """The model itself as each step: the ``map:key`` tag is on the model's own run."""
    model = chat(url) | StrOutputParser()
    return RunnableParallel(one=model, two=model)


class Pairs(TypedDict, total=False):
    a: dict[str, str]
    b: dict[str, str]


def graph(url: str) -> Any:
    """Two LangGraph nodes at once, each running the parallel: ``a/one`` ... ``b/two``."""
    built = StateGraph(Pairs)
    for name in ("a", "b"):
        built.add_node(name, lambda state, name=name: {name: pair(url).invoke({"q": QUESTION})})
        built.add_edge(START, name)
        built.add_edge(name, END)
    return built.compile()


PROGRAMS: dict[str, Callable[[str], Any]] = {
    "invoke": lambda url: pair(url).invoke({"q": QUESTION}),
    "ainvoke": lambda url: asyncio.run(pair(url).ainvoke({"q": QUESTION})),
    "nested": lambda url: nested(url).invoke({"q": QUESTION}),
    "anested": lambda url: asyncio.run(nested(url).ainvoke({"q": QUESTION})),
    "bare": lambda url: bare(url).invoke(QUESTION),
    "graph": lambda url: graph(url).invoke({}),
    "batch": lambda url: pair(url).batch([{"q": QUESTION}, {"q": "Why is grass green?"}]),
}


def answers(result: Any) -> list[str]:
    """Every answer of a result (dicts in dicts, a batch's list), to see they differ."""
    if isinstance(result, dict):
        return [a for v in result.values() for a in answers(v)]
    if isinstance(result, list):
        return [a for v in result for a in answers(v)]
    return [result]


def record(cassette: Path, name: str, cache: bool = False) -> Any:
    """Record ``name`` until its identical requests overlapped: under load a branch may be
    answered before another asks, and LangChain's cache then answers the other (its
    replay, whose branches ask at once, would miss: no test of branches, so not this)."""
    for _ in range(3):
        for stale in (cassette, cassette.with_suffix(".cache.yaml")):
            stale.unlink(missing_ok=True)
        with FakeServer(slow_nonce) as fake, use_cassette(cassette, mode="record"):
            if cache:
                set_llm_cache(CassetteCache(cassette.with_suffix(".cache.yaml"), mode="record"))
            try:
                recorded = PROGRAMS[name](fake.url)
            finally:
                set_llm_cache(None)
        if len(set(answers(recorded))) == len(answers(recorded)) or not cache:
            break
    assert len(set(answers(recorded))) == len(answers(recorded))  # every answer its own
    return recorded


def replay(cassette: Path, name: str, cache: bool = False) -> Any:
    with use_cassette(cassette) as played:
        if cache:
            set_llm_cache(CassetteCache(cassette.with_suffix(".cache.yaml"), mode="replay"))
        try:
            result = PROGRAMS[name](closed_port_url())
        finally:
            set_llm_cache(None)
    assert played.stats.missed == 0 and played.stats.recorded == 0
    return result


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_each_parallel_branch_replays_its_own_answer(tmp_path: Path, name: str) -> None:
    cassette = tmp_path / f"{name}.yaml"
    recorded = record(cassette, name)
    for _ in range(REPLAYS):
        assert replay(cassette, name) == recorded


def test_a_cassette_cache_in_the_block_serves_each_branch_its_own(tmp_path: Path) -> None:
    cassette = tmp_path / "cache.yaml"
    recorded = record(cassette, "invoke", cache=True)
    for _ in range(REPLAYS):
        assert replay(cassette, "invoke", cache=True) == recorded


def test_fresh_processes_replay_each_branch_its_own(tmp_path: Path) -> None:
    cassette = tmp_path / "nested.yaml"
    recorded = record(cassette, "nested")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent)])}
    env["PYTHONPATH"] += os.pathsep + os.environ.get("PYTHONPATH", "")
    env.pop("CHAINCASSETTE_MODE", None)
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, __file__, str(cassette)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == recorded


if __name__ == "__main__":  # one replay in this process (``test_fresh_processes_...``)
    print(json.dumps(replay(Path(sys.argv[1]), "nested")))
