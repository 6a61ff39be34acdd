"""Streams a consumer stops reading inside a ``use_cassette`` block, then leaves unclosed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from li_fake_provider import FakeProvider, Reply
from llama_index.core.base.llms.types import ChatMessage

from chaincassette import use_cassette
from chaincassette.integrations.llama_index import CassetteLLM


def five_words(messages: Any, tools: list[dict[str, Any]]) -> Reply:
    return Reply(text="one two three four five")


@pytest.mark.parametrize("wrapped", [False, True], ids=["intercepted", "cassette_llm"])
def test_a_stream_left_open_when_the_block_ends_keeps_its_prefix(
    tmp_path: Path, wrapped: bool
) -> None:
    path = tmp_path / "open.yaml"
    held: list[Any] = []  # generators still referenced after the block: finalized later

    async def program(mode: str) -> dict[str, Any]:
        async with use_cassette(path, mode=mode) as cassette:
            provider = FakeProvider(policy=five_words)
            llm = CassetteLLM(provider, cassette=cassette) if wrapped else provider
            stream = await llm.astream_chat([ChatMessage(role="user", content="async hi")])
            first = await stream.__anext__()  # type: ignore[attr-defined]
            sync_stream = llm.stream_chat([ChatMessage(role="user", content="sync hi")])
            sync_first = next(sync_stream)
            held.extend([stream, sync_stream])
        return {"async": first.delta, "sync": sync_first.delta, "stats": cassette.stats}

    recorded = asyncio.run(program("record"))
    assert recorded["stats"].recorded == 2
    responses = [i["response"] for i in yaml.safe_load(path.read_text())["interactions"]]
    assert [(r["complete"], len(r["chunks"])) for r in responses] == [(False, 1), (False, 1)]
    held.clear()
    text = path.read_text()
    calls = len(FakeProvider.calls)
    for _ in range(2):
        replayed = asyncio.run(program("replay"))
        assert (replayed["async"], replayed["sync"]) == (recorded["async"], recorded["sync"])
        assert replayed["stats"].replayed == 2 and replayed["stats"].missed == 0
        held.clear()
    assert len(FakeProvider.calls) == calls
    assert path.read_text() == text  # replays write nothing


@pytest.mark.filterwarnings("ignore::chaincassette.redact.SecretMaskedWarning")  # said, masked
def test_a_secret_in_tool_arguments_a_stream_grows_is_masked_in_every_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream's chunks may each hold the text so far (LlamaIndex's growing partial JSON of
    tool-call arguments): a secret variable's value in the last is masked in each earlier
    one too, where only its start stood, and the replay streams what the recording kept."""
    value = "acme-" + "Hb7" * 6
    monkeypatch.setenv("ACME_API_KEY", value)
    path = tmp_path / "grow.yaml"

    def lookup(messages: Any, tools: list[dict[str, Any]]) -> Reply:
        return Reply(tool_calls=[("lookup", {"q": value})])

    def program(mode: str) -> list[Any]:
        with use_cassette(path, mode=mode):
            chunks = FakeProvider(policy=lookup).stream_chat(
                [ChatMessage(role="user", content="hi")]
            )
            return [c.message.model_dump(mode="json") for c in chunks]

    recorded = program("record")
    text = path.read_text()
    assert value[:8] not in text and text.count("<redacted:env:ACME_API_KEY>") >= 2
    replayed = program("replay")
    assert replayed[-1] == recorded[-1]  # the run saw its last chunk masked (its first, live)
    assert value[:8] not in str(replayed) and replayed == program("replay")
