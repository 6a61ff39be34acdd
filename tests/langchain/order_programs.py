"""Concurrent LangChain/LangGraph programs whose calls finish in an order set by latency.

``python tests/langchain/order_programs.py DIR MODE [NAME...]`` runs each program against
its cassette in DIR with record mode MODE and prints one JSON document: per program, what
the program saw in the order it saw it (graph updates, completed calls, streamed chunks,
tool results), the provider calls made and the cassette's statistics. MODE ``replay*N``
prints a list of N such documents, each replayed in a process forked for it.

Each call's latency comes from the subject it is about (``LATENCY``): on record, the
``slow`` call finishes last although every program starts it first, so a replay that
handed back its answers at once would show the start order instead of the recorded one.
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import sys
import threading
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).parent))
warnings.filterwarnings("ignore", category=DeprecationWarning)

from fake_provider import PROVIDER_CALLS, FakeProviderChat  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.messages import BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGenerationChunk, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.types import Send  # noqa: E402

from chaincassette import use_cassette  # noqa: E402

#: Seconds a provider takes for a call about each subject; the programs start ``slow`` first.
LATENCY = {"slow": 0.4, "mid": 0.2, "fast": 0.05}
SUBJECTS = ("slow", "mid", "fast")


def subject_of(text: str) -> str:
    return next(s for s in SUBJECTS if s in text)


class LatentChat(FakeProviderChat):
    """``FakeProviderChat`` whose answers take the time of their subject (async natively)."""

    def _latency(self, messages: list[BaseMessage]) -> float:
        return LATENCY[subject_of(str(messages[-1].content))]

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        time.sleep(self._latency(messages))
        return super()._generate(messages, *args, **kwargs)

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        await asyncio.sleep(self._latency(messages))
        return super()._generate(messages, *args, **kwargs)

    def _stream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        pause = self._latency(messages) / 4
        for chunk in super()._stream(messages, *args, **kwargs):
            time.sleep(pause)
            yield chunk

    async def _astream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        pause = self._latency(messages) / 4
        async for chunk in super()._astream(messages, *args, **kwargs):
            await asyncio.sleep(pause)
            yield chunk


def question(subject: str) -> str:
    return f"Tell a joke about the {subject} one"


# -- a LangGraph Send map-reduce ------------------------------------------------------------------


class Jokes(TypedDict):
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]


def map_reduce(*, is_async: bool, streaming: bool = False) -> Any:
    """The LangGraph how-to's map-reduce: one ``Send`` per subject, slow one first."""
    model = LatentChat(scenario="chat")

    def fan_out(state: Jokes) -> list[Send]:
        return [Send("joke", {"subject": s}) for s in state["subjects"]]

    def joke(state: dict[str, str]) -> dict[str, list[str]]:
        return {"jokes": [str(model.invoke(question(state["subject"])).content)]}

    async def ajoke(state: dict[str, str]) -> dict[str, list[str]]:
        if streaming:
            parts = [str(c.content) async for c in model.astream(question(state["subject"]))]
            return {"jokes": ["".join(parts)]}
        return {"jokes": [str((await model.ainvoke(question(state["subject"]))).content)]}

    graph = StateGraph(Jokes)
    graph.add_node("joke", ajoke if is_async else joke)
    graph.add_conditional_edges(START, fan_out, ["joke"])
    graph.add_edge("joke", END)
    return graph.compile()


INPUT = {"subjects": list(SUBJECTS), "jokes": []}


def run_send() -> Any:
    """``graph.stream`` updates: each branch's joke as the graph emits it."""
    return [u["joke"]["jokes"][0] for u in map_reduce(is_async=False).stream(INPUT)]


def run_asend() -> Any:
    async def main() -> list[str]:
        graph = map_reduce(is_async=True)
        return [u["joke"]["jokes"][0] async for u in graph.astream(INPUT)]

    return asyncio.run(main())


def run_messages() -> Any:
    """``stream_mode="messages"`` of streamed branches: which branch each chunk came from."""

    async def main() -> list[str]:
        graph = map_reduce(is_async=True, streaming=True)
        seen: list[str] = []
        async for chunk, meta in graph.astream(INPUT, stream_mode="messages"):
            seen.append(f"{meta['langgraph_node']}:{chunk.id}:{chunk.content}")
        return seen

    return asyncio.run(main())


# -- plain concurrency ------------------------------------------------------------------------------


def run_gather() -> Any:
    """``asyncio.gather`` of three calls: the order they complete in, and their answers."""

    async def main() -> dict[str, Any]:
        model = LatentChat(scenario="chat")
        completed: list[str] = []

        async def ask(subject: str) -> str:
            answer = await model.ainvoke(question(subject))
            completed.append(subject)
            return str(answer.content)

        answers = await asyncio.gather(*(ask(s) for s in SUBJECTS))
        return {"completed": completed, "answers": answers}

    return asyncio.run(main())


def run_threads() -> Any:
    """Sync calls in a thread pool (no context copied: the open block serves them)."""
    model = LatentChat(scenario="chat")
    completed: list[str] = []
    lock = threading.Lock()

    def ask(subject: str) -> str:
        answer = str(model.invoke(question(subject)).content)
        with lock:
            completed.append(subject)
        return answer

    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(ask, SUBJECTS))
    return {"completed": completed, "answers": answers}


class Ends(BaseCallbackHandler):
    """The order in which model calls end, as a callback handler sees it."""

    def __init__(self) -> None:
        self.ended: list[str] = []

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.ended.append(subject_of(response.generations[0][0].text))


def run_abatch() -> Any:
    """``abatch``: results by position, ``on_llm_end`` in the order the calls completed."""

    async def main() -> dict[str, Any]:
        ends = Ends()
        model = LatentChat(scenario="chat")
        answers = await model.abatch([question(s) for s in SUBJECTS], {"callbacks": [ends]})
        return {"ended": ends.ended, "answers": [str(a.content) for a in answers]}

    return asyncio.run(main())


@tool
async def look_up(subject: str) -> str:
    """Look a subject up (takes the time of its subject)."""
    await asyncio.sleep(LATENCY[subject])
    return f"{subject}: found at {time.time():.6f}"  # a clock: only a replayed tool repeats it


def run_tools() -> Any:
    """Parallel tool calls, results taken as they finish (tools replayed: ``replay_tools``)."""

    async def main() -> list[str]:
        running = [asyncio.ensure_future(look_up.ainvoke({"subject": s})) for s in SUBJECTS]
        return [str(await finished) for finished in asyncio.as_completed(running)]

    return asyncio.run(main())


PROGRAMS = {
    "send": run_send,
    "asend": run_asend,
    "messages": run_messages,
    "gather": run_gather,
    "threads": run_threads,
    "abatch": run_abatch,
    "tools": run_tools,
}


def run_all(directory: Path, mode: str, only: list[str] | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for name, program in PROGRAMS.items():
        if only and name not in only:
            continue
        before = len(PROVIDER_CALLS)
        with use_cassette(directory / f"{name}.yaml", mode=mode, replay_tools=True) as cassette:
            result = program()
        stats = cassette.stats
        report[name] = {
            "result": result,
            "calls": len(PROVIDER_CALLS) - before,
            "replayed": stats.replayed,
            "recorded": stats.recorded,
            "missed": stats.missed,
            "given_up": cassette.replay_order.given_up,
        }
    return report


def replay_forked(directory: Path, times: int) -> list[dict[str, Any]]:
    """``times`` replays, each in a process of its own forked from this one, which has only
    imported the programs (no cassette, no patch, no call made): every replay starts with
    no chaincassette state, as in a fresh interpreter, without paying its imports again."""
    reports = []
    for n in range(times):
        out = directory / f"replay-{os.getpid()}-{n}.json"
        child = os.fork()
        if child == 0:  # the replay, which leaves through os._exit whatever happens
            status = 1
            try:
                out.write_text(json.dumps(run_all(directory, "replay"), sort_keys=True))
                status = 0
            finally:
                os._exit(status)
        _, status = os.waitpid(child, 0)
        assert status == 0, f"replay {n} failed ({status})"
        reports.append(json.loads(out.read_text()))
    return reports


if __name__ == "__main__":
    folder, mode = Path(sys.argv[1]), sys.argv[2]
    if mode.startswith("replay*"):  # ``replay*N``: N replays in forked processes
        print(json.dumps(replay_forked(folder, int(mode[7:])), sort_keys=True))
    else:
        print(json.dumps(run_all(folder, mode, sys.argv[3:] or None), sort_keys=True))
