"""LLMs a program builds itself, intercepted at class level while ``use_cassette`` is active.

An unmodified program (``li_unmodified_program.py``) recorded once and replayed in fresh
processes; ``Settings.llm`` assigned inside the block; recordings interchangeable with
``CassetteLLM``'s; a ``CassetteLLM`` in the block recorded once; LlamaIndex's own mock
LLMs left alone; patches restored; concurrent threads and tasks; transport-only settings
kept out of the key (real ``llama_index.llms.openai.OpenAI`` against a local fake server).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import random
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml
from fakes.nowhere import closed_port_url
from fakes.scripts import forecast
from fakes.wire import FakeServer
from li_fake_provider import FakeProvider, Reply
from li_scenarios import add, policy
from llama_index.core import Document, MockEmbedding, Settings, VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.llms import CustomLLM, MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.llm import LLM
from llama_index.core.llms.mock import MockFunctionCallingLLM

from chaincassette import Cassette, CassetteMiss, use_cassette
from chaincassette.integrations.llama_index import CassetteLLM, boundary
from chaincassette.integrations.llama_index.request import chat_request, sampling_params

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HERE = Path(__file__).parent
RUNNER = HERE / "li_run_program.py"


def run_agent(
    llm: Any, prompt: str = "What is 2 + 3?", tools: list[Any] | None = None, **kw: Any
) -> str:
    agent = FunctionAgent(tools=tools or [add], llm=llm, **kw)

    async def go() -> str:
        return str(await agent.run(user_msg=prompt))

    return asyncio.run(go())


def interactions(path: Path) -> list[dict[str, Any]]:
    return list(yaml.safe_load(path.read_text())["interactions"])


# -- an unmodified program, in fresh processes --------------------------------------------------


def _run_program(cassette: Path, mode: str, seed: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "IS_TESTING": "1"}
    env.pop("CHAINCASSETTE_MODE", None)
    return subprocess.Popen(
        [sys.executable, str(RUNNER), str(cassette), mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=600)  # a hang guard: loaded CI machines are slow
    assert process.returncode == 0, err[-3000:]
    result: dict[str, Any] = json.loads(out)
    return result


def test_an_unmodified_program_replays_in_fresh_processes(tmp_path: Path) -> None:
    cassette = tmp_path / "program.yaml"
    recorded = _result(_run_program(cassette, "record", 0))
    saved = cassette.read_bytes()
    replays = [_result(p) for p in [_run_program(cassette, "replay", s) for s in (1, 2)]]

    assert recorded["provider_calls"] == recorded["stats"]["recorded"] == 8
    events = recorded["llm_events"]
    assert events["LLMChatStartEvent"] == events["LLMChatEndEvent"] == 6  # once per call
    assert events["LLMCompletionStartEvent"] == 2
    assert recorded["output"]["settings"] == "The answer is 5."  # Settings.llm set in the block
    assert recorded["restored"]
    for replay in replays:
        assert replay["provider_calls"] == 0
        assert replay["stats"] == {"recorded": 0, "replayed": 8}
        assert replay["trace_divergence"] is None and replay["restored"]
        for field in ("output", "llm_events", "llm_spans"):
            assert replay[field] == recorded[field], field  # random tool ids included
    assert cassette.read_bytes() == saved
    document = yaml.safe_load(saved)
    llm_nodes = [n for n in document["trace"] if n["type"] == "llm"]
    assert {n["key"] for n in llm_nodes} == {i["key"][:16] for i in document["interactions"]}


# -- in one process -------------------------------------------------------------------------------


def test_settings_llm_assigned_inside_the_block(tmp_path: Path) -> None:
    path = tmp_path / "settings.yaml"
    Settings._llm = None
    with use_cassette(path, mode="record") as cassette:
        Settings.llm = FakeProvider(policy=policy)
        assert type(Settings.llm) is FakeProvider  # the program's own object, unwrapped
        assert run_agent(None) == "The answer is 5."
    assert cassette.stats.recorded == len(FakeProvider.calls) == 2
    FakeProvider.calls.clear()
    Settings._llm = None
    with use_cassette(path, mode="replay") as cassette:
        Settings.llm = FakeProvider(policy=policy)
        assert run_agent(None) == "The answer is 5."
    assert FakeProvider.calls == [] and cassette.stats.replayed == 2


def test_a_cassette_llm_inside_use_cassette_is_recorded_once(tmp_path: Path) -> None:
    path = tmp_path / "once.yaml"
    with use_cassette(path, mode="record") as cassette:
        assert run_agent(CassetteLLM(FakeProvider(policy=policy), cassette=cassette)) == (
            "The answer is 5."
        )
    assert len(FakeProvider.calls) == cassette.stats.recorded == len(interactions(path)) == 2

    own = tmp_path / "own.yaml"  # a wrapper with its own cassette inside another block
    FakeProvider.calls.clear()
    with use_cassette(tmp_path / "outer.yaml", mode="record") as outer:
        run_agent(CassetteLLM(FakeProvider(policy=policy), cassette=own, mode="record"))
    assert outer.stats.recorded == 0 and not (tmp_path / "outer.yaml").exists()
    assert len(interactions(own)) == len(FakeProvider.calls) == 2


def test_recordings_are_interchangeable_with_cassette_llm(tmp_path: Path) -> None:
    by_wrapper = tmp_path / "wrapper.yaml"
    expected = run_agent(
        CassetteLLM(FakeProvider(policy=policy), cassette=by_wrapper, mode="record")
    )
    with use_cassette(by_wrapper, mode="replay") as cassette:  # replayed at class level
        assert run_agent(FakeProvider(policy=policy)) == expected
    assert cassette.stats.replayed == 2 and len(FakeProvider.calls) == 2

    by_class = tmp_path / "class.yaml"
    with use_cassette(by_class, mode="record"):
        run_agent(FakeProvider(policy=policy), streaming=False)
    FakeProvider.calls.clear()
    assert run_agent(CassetteLLM(None, cassette=by_class), streaming=False) == expected
    assert FakeProvider.calls == []
    wrapped = tmp_path / "wrapped.yaml"
    wrapper = CassetteLLM(FakeProvider(policy=policy), cassette=wrapped, mode="record")
    run_agent(wrapper, streaming=False)
    assert [i["key"] for i in interactions(by_class)] == [i["key"] for i in interactions(wrapped)]


def test_a_changed_prompt_misses_at_class_level_too(tmp_path: Path) -> None:
    path = tmp_path / "miss.yaml"
    with use_cassette(path, mode="record"):
        run_agent(FakeProvider(policy=policy))
    with pytest.raises(CassetteMiss) as caught, use_cassette(path, mode="replay"):
        run_agent(FakeProvider(policy=policy), prompt="What is 2 + 4?")
    assert "What is 2 + 4?" in str(caught.value)


def test_streams_and_completions_sync_and_async_share_recordings(tmp_path: Path) -> None:
    path = tmp_path / "streams.yaml"
    llm = FakeProvider(policy=policy)
    hi = [ChatMessage(role="user", content="Hi")]
    with use_cassette(path, mode="record"):
        recorded = (
            [r.delta for r in llm.stream_chat(hi)],
            [r.delta for r in llm.stream_complete("Say hello")],
            llm.chat(hi).message.content,
        )
    calls = len(FakeProvider.calls)

    async def replay() -> tuple[Any, ...]:
        return (
            [r.delta async for r in await llm.astream_chat(hi)],
            [r.delta async for r in await llm.astream_complete("Say hello")],
            (await llm.achat(hi)).message.content,
        )

    with use_cassette(path, mode="replay"):
        assert asyncio.run(replay()) == recorded
    assert len(FakeProvider.calls) == calls == 3


def test_llamaindex_mocks_and_embeddings_are_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "mocks.yaml"
    with use_cassette(path, mode="record") as cassette:
        assert not boundary.is_wrapped(MockLLM) and not boundary.is_wrapped(MockFunctionCallingLLM)
        MockLLM().complete("hello")
        index = VectorStoreIndex.from_documents(
            [Document(text="chaincassette replays LLM calls.")],
            embed_model=MockEmbedding(embed_dim=8),
        )
        str(index.as_query_engine(llm=MockLLM()).query("What does it do?"))
    assert cassette.stats.recorded == 0 and not path.exists()


class Echo(CustomLLM):
    """A user's own CustomLLM: only the completion endpoints are its own."""

    calls: int = 0

    @property
    def metadata(self) -> Any:
        from llama_index.core.base.llms.types import LLMMetadata

        return LLMMetadata(model_name="echo")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        from llama_index.core.base.llms.types import CompletionResponse

        self.calls += 1
        return CompletionResponse(text=f"echo: {prompt[-12:]} #{random.randint(0, 999)}")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        yield self.complete(prompt)


class Counting(BaseEventHandler):
    counts: ClassVar[Counter[str]] = Counter()

    def handle(self, event: Any, **kwargs: Any) -> None:
        self.counts[event.class_name()] += 1


def test_a_custom_llm_records_its_completions_with_the_same_events(tmp_path: Path) -> None:
    path = tmp_path / "custom.yaml"
    handler = Counting()
    root = get_dispatcher()
    root.add_event_handler(handler)
    hi = [ChatMessage(role="user", content="Hi there")]
    try:
        with use_cassette(path, mode="record"):
            llm = Echo()
            recorded = [llm.chat(hi).message.content, llm.complete("Say hi").text]
        recorded_counts = dict(handler.counts)
        handler.counts.clear()
        with use_cassette(path, mode="replay"):
            replayer = Echo()
            assert [replayer.chat(hi).message.content, replayer.complete("Say hi").text] == (
                recorded
            )
        assert replayer.calls == 0 and dict(handler.counts) == recorded_counts
    finally:
        root.event_handlers.remove(handler)
    assert {i["request"]["kind"] for i in interactions(path)} == {"completion"}
    assert run_with_wrapper(path, hi) == recorded[0]  # CassetteCustomLLM reads the same keys


def run_with_wrapper(path: Path, messages: list[ChatMessage]) -> str | None:
    return CassetteLLM(None, cassette=path).chat(messages).message.content


def test_patches_stay_installed_and_undo_all_restores_them(tmp_path: Path) -> None:
    from chaincassette.patching import undo_all

    undo_all()
    originals = {name: vars(FakeProvider)[name] for name in ("chat", "achat", "astream_chat")}
    assert "__pydantic_init_subclass__" not in vars(BaseLLM)
    with use_cassette(tmp_path / "a.yaml", mode="record"):
        assert vars(FakeProvider)["chat"] is not originals["chat"]
        with use_cassette(tmp_path / "b.yaml", mode="record"):

            class Later(FakeProvider):  # defined after the install: wrapped as it is built
                def chat(self, messages: Any, **kwargs: Any) -> Any:
                    return super().chat(messages, **kwargs)

            assert boundary.is_wrapped(Later)
            Later(policy=policy).chat([ChatMessage(role="user", content="Hi")])
    assert boundary.PATCHES.active and boundary.is_wrapped(Later)  # kept for the next block
    undo_all()
    assert not boundary.PATCHES.active and not boundary.is_wrapped(Later)
    assert {name: vars(FakeProvider)[name] for name in originals} == originals
    assert "__pydantic_init_subclass__" not in vars(BaseLLM)
    assert "chat" in vars(Later) and vars(Later)["chat"].__name__ == "chat"
    assert len(interactions(tmp_path / "b.yaml")) == 1  # super() chain recorded once
    assert FakeProvider.calls == ["chat"]


def test_a_thread_without_a_cassette_is_served_by_the_open_block(tmp_path: Path) -> None:
    """A plain thread has no context: its calls go to the block open in the process, so a
    replay never goes live from a thread (and a recording keeps what the thread did)."""
    path = tmp_path / "threads.yaml"
    hi = [ChatMessage(role="user", content="Hi")]

    def run(mode: str) -> dict[str, Any]:
        inside, outside = threading.Barrier(2), threading.Barrier(2)
        results: dict[str, Any] = {}

        def block() -> None:
            with use_cassette(path, mode=mode) as cassette:
                inside.wait()
                results["in block"] = FakeProvider(policy=policy).chat(hi).message.content
                outside.wait()
            results["stats"] = (cassette.stats.recorded, cassette.stats.replayed)

        def bystander() -> None:
            inside.wait()  # the block is open now
            results["thread"] = FakeProvider(policy=policy).chat(hi).message.content
            outside.wait()

        threads = [threading.Thread(target=block), threading.Thread(target=bystander)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        return results

    recorded = run("record")
    assert recorded["in block"] == recorded["thread"] == "Hello there, friend."
    assert recorded["stats"] == (2, 0) and len(interactions(path)) == 2
    assert FakeProvider.calls == ["chat", "chat"]
    replayed = run("replay")
    assert replayed["stats"] == (0, 2) and replayed["thread"] == recorded["thread"]
    assert FakeProvider.calls == ["chat", "chat"]  # no live call from either thread


def test_concurrent_identical_calls_replay_in_order(tmp_path: Path) -> None:
    path = tmp_path / "gather.yaml"

    def numbered(messages: Any, tools: Any) -> Reply:
        return Reply(text=f"answer {len(FakeProvider.calls)}")

    llm = FakeProvider(policy=numbered)
    hi = [ChatMessage(role="user", content="Hi")]

    async def many() -> list[str]:
        async def one() -> str:
            await asyncio.sleep(random.random() / 1000)
            return str((await llm.achat(hi)).message.content)

        return await asyncio.gather(*(one() for _ in range(6)))

    with use_cassette(path, mode="record"):
        recorded = asyncio.run(many())
    for _ in range(3):
        with use_cassette(path, mode="replay"):
            assert sorted(asyncio.run(many())) == sorted(recorded)
    assert len(FakeProvider.calls) == 6


# -- transport-only settings ------------------------------------------------------------------

needs_llama_openai = pytest.mark.skipif(
    importlib.util.find_spec("llama_index.llms.openai") is None,
    reason="llama-index-llms-openai is needed",
)


def _openai(api_base: str, **kwargs: Any) -> LLM:
    from llama_index.llms.openai import OpenAI

    return OpenAI(
        model="gpt-4o-mini",
        temperature=0,
        api_key="sk-test-" + "x" * 32,
        api_base=api_base,
        **kwargs,
    )


@needs_llama_openai
def test_transport_settings_never_reach_the_key() -> None:
    cassette = Cassette("unused.yaml", mode="replay")
    hi = [ChatMessage(role="user", content="Hi")]
    keys = set()
    for url, timeout, retries in (("http://a.test/v1", 5.0, 0), ("http://b.test/v1", 60.0, 3)):
        llm = _openai(
            url,
            timeout=timeout,
            max_retries=retries,
            default_headers={"X-Trace": url},
            additional_kwargs={"seed": 7, "extra_headers": {"X-Run": url}, "timeout": timeout},
        )
        params = sampling_params(llm)
        assert params["additional_kwargs"] == {"seed": 7}
        call = {"timeout": timeout, "api_base": url, "top_p": 0.5}
        keys.add(cassette.key_for(chat_request("gpt-4o-mini", params, hi, call, stream=False)))
    assert len(keys) == 1


def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"12C and sunny in {city}"


@needs_llama_openai
def test_a_replay_against_another_base_url_still_hits(tmp_path: Path) -> None:
    path = tmp_path / "openai.yaml"
    question = "Weather in Rome?"
    with FakeServer(forecast) as provider, use_cassette(path, mode="record"):
        llm = _openai(provider.url, max_retries=0)
        recorded = run_agent(llm, prompt=question, tools=[get_weather])
        assert provider.requests == 2
    with use_cassette(path, mode="replay") as cassette:  # nothing listens there
        llm = _openai(closed_port_url(), max_retries=0, timeout=1.0)
        assert run_agent(llm, prompt=question, tools=[get_weather]) == recorded
    assert cassette.stats.replayed == 2 and recorded == "Forecast: 12C and sunny in Rome."
