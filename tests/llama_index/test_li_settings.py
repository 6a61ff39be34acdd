"""``Settings.llm`` set before ``use_cassette`` blocks that overlap (asyncio tasks, nesting)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from li_fake_provider import FakeProvider, Reply
from llama_index.core import Settings
from llama_index.core.base.llms.types import ChatMessage

from chaincassette import Cassette, use_cassette


def random_answer(messages: Any, tools: list[dict[str, Any]]) -> Reply:
    return Reply(text=f"answer {random.random():.6f}")


def prompts_in(path: Path) -> list[str]:
    return [i.request["messages"][-1]["content"] for i in Cassette(path).interactions]


def test_overlapping_blocks_record_each_call_in_its_own_cassette(tmp_path: Path) -> None:
    provider = FakeProvider(policy=random_answer)
    Settings.llm = provider
    paths = {"A": tmp_path / "a.yaml", "B": tmp_path / "b.yaml"}

    async def task(prompt: str, mode: str, first: asyncio.Event, second: asyncio.Event) -> str:
        async with use_cassette(paths[prompt], mode=mode):
            if prompt == "A":  # A's block opens first and its call comes last
                first.set()
                await second.wait()
            else:
                await first.wait()
            reply = await Settings.llm.achat([ChatMessage(role="user", content=prompt)])
            if prompt == "B":
                second.set()
            return str(reply.message.content)

    async def program(mode: str) -> list[str]:
        first, second = asyncio.Event(), asyncio.Event()
        return list(
            await asyncio.gather(task("A", mode, first, second), task("B", mode, first, second))
        )

    recorded = asyncio.run(program("record"))
    assert (prompts_in(paths["A"]), prompts_in(paths["B"])) == (["A"], ["B"])
    assert Settings._llm is provider
    calls = len(FakeProvider.calls)
    for _ in range(2):
        assert asyncio.run(program("replay")) == recorded
        assert Settings._llm is provider
    assert len(FakeProvider.calls) == calls


def test_a_nested_block_records_in_the_inner_cassette(tmp_path: Path) -> None:
    provider = FakeProvider(policy=random_answer)
    Settings.llm = provider

    def program(mode: str) -> list[str]:
        answers = []
        with use_cassette(tmp_path / "outer.yaml", mode=mode):
            wrapper = Settings.llm
            with use_cassette(tmp_path / "inner.yaml", mode=mode):
                assert Settings.llm is wrapper
                answers.append(Settings.llm.complete("inner").text)
            answers.append(Settings.llm.complete("outer").text)
        assert Settings._llm is provider
        answers.append(provider.complete("no cassette").text)  # passes through, unrecorded
        return answers

    recorded = program("record")
    stored = {n: Cassette(tmp_path / f"{n}.yaml").interactions for n in ("outer", "inner")}
    assert {n: [i.request["prompt"] for i in v] for n, v in stored.items()} == {
        "outer": ["outer"],
        "inner": ["inner"],
    }
    for _ in range(2):
        assert program("replay")[:2] == recorded[:2]
