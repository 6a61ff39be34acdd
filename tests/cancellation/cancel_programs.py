"""Programs whose own timers cancel a model call in flight, run as fresh processes.

``python cancel_programs.py DIR MODE [NAME ...]`` runs each program (all by default) with
its cassette ``DIR/NAME.yaml`` in record mode MODE and prints one JSON document: what each
program got, how long it took, and its cassette's statistics; last, the connections the
run attempted (``OFFLINE`` set: every socket is blocked, so a replay shows it made none).
The slow question says ``STALL_ALWAYS``: the fake server answers it 10 s late, long after
the program's own ``TIMEOUT`` cancelled it. ``OPENAI_BASE_URL`` is the fake server's; a
replay is given none (a closed port).

``SIGINT_AFTER_FIRST`` makes ``interrupted`` print ``asked`` once its slow call is on its
way, for a test that then presses Ctrl-C (``BLOCK``: ``outside`` asyncio.run, ``inside``
the coroutine, or ``none``: a ``CassetteLLM`` given the path).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))
warnings.filterwarnings("ignore")

import no_network  # noqa: E402

if os.environ.get("OFFLINE"):
    no_network.install()

import openai  # noqa: E402
from langchain_core.globals import set_llm_cache  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from llama_index.core.llms import ChatMessage  # noqa: E402
from llama_index.llms.openai import OpenAI  # noqa: E402

from chaincassette import Cassette, use_cassette  # noqa: E402
from chaincassette.integrations.langchain import CassetteCache  # noqa: E402
from chaincassette.integrations.llama_index import CassetteLLM  # noqa: E402

URL = os.environ.get("OPENAI_BASE_URL") or "http://127.0.0.1:9/v1"
#: The program's own timeout (s).
TIMEOUT = 0.5
SLOW = "STALL_ALWAYS: a question the model takes too long to answer"
#: How long each slow call took until it ended (answered, cancelled) in this run (s).
SLOW_SECONDS: list[float] = []


async def slow(asked: Awaitable[Any]) -> Any:
    """Await the slow call, timing it (the program's timer fires at ``TIMEOUT``)."""
    started = time.perf_counter()
    try:
        return await asked
    finally:
        SLOW_SECONDS.append(time.perf_counter() - started)


def chat() -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4o-mini", base_url=URL, max_retries=0)


def llama() -> OpenAI:
    return OpenAI(model="gpt-4o-mini", api_base=URL, max_retries=0)


async def lc_wait_for() -> dict[str, Any]:
    """``asyncio.wait_for`` around ``ChatOpenAI.ainvoke``, with a fallback call."""
    model = chat()
    try:
        answer = await asyncio.wait_for(slow(model.ainvoke(SLOW)), TIMEOUT)
        return {"answer": answer.content}
    except TimeoutError:
        fallback = await model.ainvoke("the fallback question")
        return {"timed_out": True, "fallback": fallback.content}


async def lc_timeout() -> dict[str, Any]:
    """``asyncio.timeout`` (the call runs in the program's own task), no fallback."""
    try:
        async with asyncio.timeout(TIMEOUT):
            answer = await slow(chat().ainvoke(SLOW))
        return {"answer": answer.content}
    except TimeoutError as error:
        return {"raised": type(error).__name__}


async def lc_task_group() -> dict[str, Any]:
    """A ``TaskGroup`` cancels the slow call when its sibling's call fails (a 429)."""
    model = chat()

    async def failing() -> None:
        await model.ainvoke("RATE_LIMIT_ONCE: the sibling that fails")

    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(slow(model.ainvoke(SLOW)))
            group.create_task(failing())
        return {"failed": []}
    except Exception as error:  # an ExceptionGroup (no except*: this file parses on 3.10)
        failed = getattr(error, "exceptions", (error,))
        return {"failed": [f"{type(e).__name__}: {e}" for e in failed]}


class Question(TypedDict, total=False):
    question: str
    answer: str


async def lg_step_timeout() -> dict[str, Any]:
    """A LangGraph graph whose ``step_timeout`` cancels its node's model call."""
    model = chat()

    async def ask(state: Question) -> Question:
        answer = await slow(model.ainvoke(state["question"]))
        return {"answer": str(answer.content)}

    builder = StateGraph(Question)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile()
    graph.step_timeout = TIMEOUT
    try:
        return dict(await graph.ainvoke({"question": SLOW}))
    except TimeoutError as error:
        return {"raised": type(error).__name__}


async def li_wait_for() -> dict[str, Any]:
    """``asyncio.wait_for`` around a LlamaIndex ``OpenAI.achat``, with a fallback call."""
    return await li_ask(llama())


async def li_wrapped(path: Path, mode: str) -> dict[str, Any]:
    """The same through a ``CassetteLLM`` given the path: no ``use_cassette`` block."""
    return await li_ask(CassetteLLM(llama(), cassette=str(path), mode=mode))


async def li_ask(llm: Any) -> dict[str, Any]:
    """The slow question under ``wait_for``, then the fallback question if it timed out."""
    try:
        asked = slow(llm.achat([ChatMessage(role="user", content=SLOW)]))
        answer = await asyncio.wait_for(asked, TIMEOUT)
        return {"answer": answer.message.content}
    except TimeoutError:
        fallback = await llm.achat([ChatMessage(role="user", content="the fallback question")])
        return {"timed_out": True, "fallback": fallback.message.content}


async def sdk_wait_for() -> dict[str, Any]:
    """``asyncio.wait_for`` around the OpenAI SDK's own async ``create``."""
    client = openai.AsyncOpenAI(base_url=URL, max_retries=0)
    try:
        asked = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": SLOW}]
        )
        answer = await asyncio.wait_for(slow(asked), TIMEOUT)
        return {"answer": answer.choices[0].message.content}
    except TimeoutError:
        return {"timed_out": True}
    finally:
        await client.close()


async def lc_global_cache(path: Path, mode: str) -> dict[str, Any]:
    """``wait_for`` with a fallback, the model served by ``set_llm_cache(CassetteCache(...))``."""
    set_llm_cache(CassetteCache(path, mode=mode))
    try:
        return await lc_wait_for()
    finally:
        set_llm_cache(None)


IN_BLOCK: dict[str, Callable[[], Awaitable[dict[str, Any]]]] = {
    "lc_wait_for": lc_wait_for,
    "lc_timeout": lc_timeout,
    "lc_task_group": lc_task_group,
    "lg_step_timeout": lg_step_timeout,
    "li_wait_for": li_wait_for,
    "sdk_wait_for": sdk_wait_for,
}
WRAPPED: dict[str, Callable[[Path, str], Awaitable[dict[str, Any]]]] = {
    "li_wrapped": li_wrapped,
    "lc_global_cache": lc_global_cache,
}


def run(name: str, path: Path, mode: str) -> dict[str, Any]:
    started = time.perf_counter()
    divergence = None
    if name in WRAPPED:
        result = asyncio.run(WRAPPED[name](path, mode))
    else:
        with use_cassette(path, mode=mode) as cassette:
            result = asyncio.run(IN_BLOCK[name]())
        divergence = cassette.trace_divergence
    seconds = time.perf_counter() - started
    slow_seconds = max(SLOW_SECONDS, default=None)
    SLOW_SECONDS.clear()
    stats = Cassette(path).stats if path.exists() else None
    responses = [i.response for i in Cassette(path).interactions] if path.exists() else []
    return {
        "result": result,
        "seconds": round(seconds, 2),
        "slow_seconds": slow_seconds,
        "trace_divergence": divergence,
        "interactions": stats.interactions if stats else 0,
        "cancelled": [r["cancelled"] for r in responses if "cancelled" in r],
    }


async def slow_call(llm: Any) -> None:
    print("asked", flush=True)
    await llm.achat([ChatMessage(role="user", content=SLOW)])


def interrupted(path: Path, mode: str) -> None:
    """One answered call, then one the test interrupts with Ctrl-C while it waits."""
    block = os.environ.get("BLOCK", "outside")
    if block == "none":
        llm = CassetteLLM(llama(), cassette=str(path), mode=mode)
        asyncio.run(llm.achat([ChatMessage(role="user", content="a quick question")]))
        asyncio.run(slow_call(llm))
        return
    if block == "inside":

        async def main() -> None:
            async with use_cassette(path, mode=mode):
                llm = llama()
                await llm.achat([ChatMessage(role="user", content="a quick question")])
                await slow_call(llm)

        asyncio.run(main())
        return
    with use_cassette(path, mode=mode):
        llm = llama()
        asyncio.run(llm.achat([ChatMessage(role="user", content="a quick question")]))
        asyncio.run(slow_call(llm))


def main() -> None:
    directory, mode, *names = sys.argv[1:]
    if names == ["interrupted"]:
        interrupted(Path(directory) / "interrupted.yaml", mode)
        return
    report = {
        name: run(name, Path(directory) / f"{name}.yaml", mode)
        for name in names or [*IN_BLOCK, *WRAPPED]
    }
    report["connections"] = len(no_network.attempts())  # type: ignore[assignment]
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
