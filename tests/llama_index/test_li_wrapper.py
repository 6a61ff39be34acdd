"""``CassetteLLM`` in one process: types, misses, streams, Settings.llm, tools and the trace."""

from __future__ import annotations

import asyncio
import copy
import random
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from li_fake_provider import FakeProvider, RawCompletion, Reply, ToolCallObject
from li_scenarios import add, policy
from llama_index.core import Settings
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, TextBlock, ThinkingBlock, ToolCallBlock
from llama_index.core.llms import MockLLM
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.tools import FunctionTool

from chaincassette import Cassette, CassetteMiss, use_cassette
from chaincassette.integrations.llama_index import (
    CassetteCustomLLM,
    CassetteFunctionCallingLLM,
    CassetteLLM,
    TraceDivergenceWarning,
    trace_divergence,
)
from chaincassette.registry import registered_hooks

# LlamaIndex workflows call inspect.getmembers on pydantic agents (their warnings, not ours).
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def fake() -> FakeProvider:
    return FakeProvider(policy=policy)


def run_agent(
    llm: Any, prompt: str = "What is 2 + 3?", tools: list[Any] | None = None, **kw: Any
) -> str:
    agent = FunctionAgent(tools=tools or [add], llm=llm, **kw)

    async def go() -> str:
        return str(await agent.run(user_msg=prompt))

    return asyncio.run(go())


def test_the_flavour_follows_the_wrapped_llm(tmp_path: Path) -> None:
    wrapped = CassetteLLM(fake(), cassette=tmp_path / "a.yaml")
    assert isinstance(wrapped, CassetteFunctionCallingLLM)
    assert isinstance(wrapped, FunctionCallingLLM) and isinstance(wrapped, CassetteLLM)
    plain = CassetteLLM(MockLLM(), cassette=tmp_path / "b.yaml")
    assert isinstance(plain, CassetteLLM) and not isinstance(plain, FunctionCallingLLM)
    assert wrapped.metadata == fake().metadata
    assert wrapped.to_payload() == fake().to_payload()
    copied = copy.deepcopy(wrapped)  # agents and workflows may copy their LLM
    assert isinstance(copied, CassetteFunctionCallingLLM) and copied.cassette is wrapped.cassette


def test_llm_none_needs_a_recording(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="holds no LlamaIndex recording"):
        CassetteLLM(None, cassette=tmp_path / "empty.yaml")


def test_replayed_responses_keep_types_and_are_fresh(tmp_path: Path) -> None:
    path = tmp_path / "chat.yaml"
    llm = CassetteLLM(fake(), cassette=path, mode="record")
    question = [ChatMessage(role="user", content="What is 2 + 3?")]
    tools = [FunctionTool.from_defaults(add)]
    recorded = llm.chat_with_tools(tools, chat_history=question)
    llm.cassette.save()

    replayer = CassetteLLM(fake(), cassette=path, mode="replay", allow_playback_repeats=True)
    first = replayer.chat_with_tools(tools, chat_history=question)
    assert FakeProvider.calls == ["chat"]  # only the recording run
    # a cassette is data: ``raw`` and provider objects not on the codec's list come back as
    # the plain data they were stored as, in the recording run too
    assert isinstance(first.raw, dict) and first.raw == recorded.raw
    assert first.raw["model"] == RawCompletion.model_validate(first.raw).model
    tool_call = first.message.additional_kwargs["tool_calls"][0]
    assert tool_call == recorded.message.additional_kwargs["tool_calls"][0]
    assert isinstance(tool_call, dict) and ToolCallObject.model_validate(tool_call).name == "add"
    kinds = [type(b) for b in first.message.blocks]
    assert kinds == [ThinkingBlock, TextBlock, ToolCallBlock]
    assert (
        replayer.get_tool_calls_from_response(first)[0].tool_id
        == recorded.message.blocks[-1].tool_call_id
    )
    first.message.blocks.clear()  # agents mutate what they get
    second = replayer.chat_with_tools(tools, chat_history=question)
    assert second.message.blocks == recorded.message.blocks


def test_a_changed_prompt_is_a_miss_naming_the_change(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    assert run_agent(CassetteLLM(fake(), cassette=path, mode="record")) == "The answer is 5."
    llm = CassetteLLM(fake(), cassette=path)
    with pytest.raises(CassetteMiss) as caught:
        run_agent(llm, prompt="What is 2 + 4?")
    message = str(caught.value)
    assert "messages[0] (user).content" in message
    assert "What is 2 + 3?" in message and "What is 2 + 4?" in message
    assert FakeProvider.calls and all(c == "astream_chat" for c in FakeProvider.calls)


def test_settings_llm_is_wrapped_for_the_block_and_restored(tmp_path: Path) -> None:
    from chaincassette.integrations import hooks

    assert hooks.llama_index in registered_hooks()  # from the entry point, no import by the user
    path = tmp_path / "settings.yaml"
    original = fake()
    Settings.llm = original
    with use_cassette(path, mode="record"):
        assert isinstance(Settings._llm, CassetteLLM) and Settings._llm.llm is original
        assert run_agent(None) == "The answer is 5."
    assert Settings._llm is original
    calls = len(FakeProvider.calls)
    with use_cassette(path, mode="replay") as cassette:
        assert run_agent(None) == "The answer is 5."
    assert len(FakeProvider.calls) == calls and cassette.stats.replayed == 2
    Settings._llm = None
    with use_cassette(path, mode="replay"):
        assert Settings._llm is None  # no default LLM built behind the user's back


def test_an_early_closed_stream_never_replays_as_complete(tmp_path: Path) -> None:
    path = tmp_path / "stream.yaml"
    messages = [ChatMessage(role="user", content="Hi")]
    llm = CassetteLLM(fake(), cassette=path, mode="record")
    stream = llm.stream_chat(messages)
    first = next(stream)
    stream.close()
    llm.cassette.save()
    response = yaml.safe_load(path.read_text())["interactions"][0]["response"]
    assert response["complete"] is False and len(response["chunks"]) == 1

    replayer = CassetteLLM(None, cassette=path, mode="replay")
    stream = replayer.stream_chat(messages)
    assert next(stream).delta == first.delta  # a consumer that also stops early is served
    stream.close()
    replayer = CassetteLLM(None, cassette=path, mode="replay")
    with pytest.raises(CassetteMiss, match="stopped after 1 chunk "):
        list(replayer.stream_chat(messages))


def test_an_early_closed_async_stream_is_recorded_incomplete(tmp_path: Path) -> None:
    path = tmp_path / "astream.yaml"
    llm = CassetteLLM(fake(), cassette=path, mode="record")

    async def go() -> None:
        stream = await llm.astream_complete("Say hello")
        async for _ in stream:
            break
        await stream.aclose()  # type: ignore[attr-defined]

    asyncio.run(go())
    llm.cassette.save()
    response = yaml.safe_load(path.read_text())["interactions"][0]["response"]
    assert response["complete"] is False and len(response["chunks"]) == 1


def test_sync_and_async_share_one_recording(tmp_path: Path) -> None:
    path = tmp_path / "shared.yaml"
    llm = CassetteLLM(fake(), cassette=path, mode="record")
    text = "".join(r.delta or "" for r in llm.stream_complete("Say hello"))
    llm.cassette.save()

    async def go() -> str:
        replayer = CassetteLLM(None, cassette=path)
        return "".join([r.delta or "" async for r in await replayer.astream_complete("Say hello")])

    assert asyncio.run(go()) == text == "Hello there, friend."


# -- parallel tools ------------------------------------------------------------------------------

FINISHED: list[str] = []
#: How each run orders the two tools: "ab" makes lookup_a finish first, "ba" lookup_b, and
#: "random" gives both a random latency. A forced order holds the later tool until the earlier
#: one has finished, so it never depends on the scheduler or the machine's load.
ORDER: dict[str, Any] = {"mode": "random", "first_done": None}


async def _finish(name: str) -> None:
    mode = ORDER["mode"]
    if mode == "random":
        await asyncio.sleep(random.random() / 100)
    elif mode[1] == name:  # the later one waits for the earlier one (bounded: no hang)
        await asyncio.wait_for(ORDER["first_done"].wait(), timeout=60)
    FINISHED.append(name)
    if mode != "random" and mode[0] == name:
        ORDER["first_done"].set()


async def lookup_a(city: str) -> str:
    """Weather in a city (slow, random)."""
    await _finish("a")
    return f"sunny in {city}"


async def lookup_b(city: str) -> str:
    """Time in a city (slow, random)."""
    await _finish("b")
    return f"noon in {city}"


def parallel_policy(messages: Any, tools: list[dict[str, Any]]) -> Reply:
    results = [m.content for m in messages if m.role.value == "tool"]
    if results:
        return Reply(text="Report: " + "; ".join(results))  # in the order the agent sent them
    return Reply(tool_calls=[("lookup_a", {"city": "Oslo"}), ("lookup_b", {"city": "Oslo"})])


def run_parallel(llm: Any, order: str) -> str:
    """One agent run whose two tool results finish in ``order`` ("ab", "ba" or "random")."""
    FINISHED.clear()
    ORDER["mode"] = order
    ORDER["first_done"] = asyncio.Event()
    try:
        return run_agent(llm, tools=[lookup_a, lookup_b])
    finally:
        ORDER["mode"] = "random"


@pytest.mark.parametrize("recorded_order", ["ab", "ba"])
def test_parallel_tool_results_replay_in_either_finishing_order(
    tmp_path: Path, recorded_order: str
) -> None:
    path = tmp_path / "parallel.yaml"
    recorder = CassetteLLM(FakeProvider(policy=parallel_policy), cassette=path, mode="record")
    expected = run_parallel(recorder, recorded_order)
    recorder.cassette.save()
    assert list(recorded_order) == FINISHED
    results = {"a": "sunny in Oslo", "b": "noon in Oslo"}  # the model saw them in this order:
    assert expected == "Report: " + "; ".join(results[t] for t in recorded_order)
    recorded_calls = len(FakeProvider.calls)
    assert recorded_calls == 2
    for order in ["ab", "ba"] * 5:
        llm = CassetteLLM(FakeProvider(policy=parallel_policy), cassette=path, mode="replay")
        assert run_parallel(llm, order) == expected
        assert list(order) == FINISHED  # this arrival order really happened
        assert llm.cassette.stats.missed == 0
    assert len(FakeProvider.calls) == recorded_calls


def test_parallel_tool_results_in_random_order_replay_every_time(tmp_path: Path) -> None:
    path = tmp_path / "parallel.yaml"
    recorder = CassetteLLM(FakeProvider(policy=parallel_policy), cassette=path, mode="record")
    expected = run_parallel(recorder, "random")
    recorder.cassette.save()
    recorded_calls = len(FakeProvider.calls)
    for _ in range(15):
        llm = CassetteLLM(FakeProvider(policy=parallel_policy), cassette=path, mode="replay")
        assert run_parallel(llm, "random") == expected
        assert sorted(FINISHED) == ["a", "b"]
    assert len(FakeProvider.calls) == recorded_calls


# -- tool replay ------------------------------------------------------------------------------

TOOL_RUNS: list[str] = []


def risky(x: int) -> int:
    """Fails on odd numbers."""
    TOOL_RUNS.append(f"risky {x}")
    if x % 2:
        raise ValueError(f"{x} is odd")
    return x * 10


def tool_policy(messages: Any, tools: list[dict[str, Any]]) -> Reply:
    results = [m.content for m in messages if m.role.value == "tool"]
    if results:
        return Reply(text="Results: " + " | ".join(sorted(results)))
    return Reply(tool_calls=[("risky", {"x": 2}), ("risky", {"x": 3})])


def test_tool_results_and_errors_replay_without_running_the_tool(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    TOOL_RUNS.clear()
    with use_cassette(path, mode="record", replay_tools=True) as cassette:
        llm = CassetteLLM(FakeProvider(policy=tool_policy), cassette=cassette)
        recorded = run_agent(llm, tools=[risky])
    assert sorted(TOOL_RUNS) == ["risky 2", "risky 3"] and "3 is odd" in recorded
    kinds = [i.request["kind"] for i in Cassette(path).interactions]
    assert kinds.count("tool") == 2
    TOOL_RUNS.clear()
    for _ in range(3):
        with use_cassette(path, mode="replay", replay_tools=True) as cassette:
            assert run_agent(CassetteLLM(None, cassette=cassette), tools=[risky]) == recorded
    assert TOOL_RUNS == []


def test_tools_run_normally_without_the_option(tmp_path: Path) -> None:
    TOOL_RUNS.clear()
    with use_cassette(tmp_path / "t.yaml", mode="record") as cassette:
        run_agent(CassetteLLM(FakeProvider(policy=tool_policy), cassette=cassette), tools=[risky])
    assert len(TOOL_RUNS) == 2


# -- trace --------------------------------------------------------------------------------------

ANSWERS = {"value": "first"}


def fetch(item: str) -> str:
    """Fetch an item and answer with it directly."""
    return f"{item}: {ANSWERS['value']}"


def fetch_policy(messages: Any, tools: list[dict[str, Any]]) -> Reply:
    return Reply(tool_calls=[("fetch", {"item": "report"})])


def test_a_replay_that_takes_another_path_reports_the_first_divergence(tmp_path: Path) -> None:
    path = tmp_path / "trace.yaml"
    tool = FunctionTool.from_defaults(fetch, return_direct=True)
    ANSWERS["value"] = "first"
    with use_cassette(path, mode="record") as cassette:
        run_agent(CassetteLLM(FakeProvider(policy=fetch_policy), cassette=cassette), tools=[tool])
    trace = yaml.safe_load(path.read_text())["trace"]
    assert [n["type"] for n in trace] == ["chain", "agent", "llm", "tool"]

    with use_cassette(path, mode="replay") as cassette, warnings.catch_warnings():
        warnings.simplefilter("error", TraceDivergenceWarning)
        run_agent(CassetteLLM(None, cassette=cassette), tools=[tool])
    assert trace_divergence(cassette) is None

    ANSWERS["value"] = "second"  # the tool now answers differently; no LLM call depends on it
    with (
        pytest.warns(TraceDivergenceWarning, match="tool fetch"),
        use_cassette(path, mode="replay") as cassette,
    ):
        run_agent(CassetteLLM(None, cassette=cassette), tools=[tool])
    divergence = trace_divergence(cassette)
    assert divergence is not None and "first" in divergence and "second" in divergence


# -- CustomLLM inners -------------------------------------------------------------------------


def _drive_custom(llm: Any) -> list[Any]:
    messages = [ChatMessage(role="user", content="Hi there")]

    async def go() -> list[Any]:
        return [
            (await llm.achat(messages)).message.content,
            [r.delta async for r in await llm.astream_chat(messages)],
            (await llm.acomplete("Say hi")).text,
        ]

    return [
        llm.chat(messages).message.content,
        [r.delta for r in llm.stream_chat(messages)],
        llm.complete("Say hi").text,
        *asyncio.run(go()),
    ]


def test_a_custom_llm_fires_the_same_events_in_record_and_replay(tmp_path: Path) -> None:
    from collections import Counter

    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    counts: Counter[str] = Counter()

    class Count(BaseEventHandler):
        def handle(self, event: Any, **kwargs: Any) -> None:
            counts[event.class_name()] += 1

    handler = Count()
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        path = tmp_path / "custom.yaml"
        recorder = CassetteLLM(MockLLM(max_tokens=4), cassette=path, mode="record")
        assert isinstance(recorder, CassetteCustomLLM)
        recorded = _drive_custom(recorder)
        recorded_counts = dict(counts)
        counts.clear()
        replayer = CassetteLLM(None, cassette=path, mode="replay")
        assert isinstance(replayer, CassetteCustomLLM)
        assert _drive_custom(replayer) == recorded
        assert dict(counts) == recorded_counts
        assert recorded_counts["LLMChatStartEvent"] >= 4
    finally:
        root.event_handlers.remove(handler)
