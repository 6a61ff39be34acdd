"""``BaseCache``'s contract where the engine routes calls past the cache.

With ``stream_replay=True`` (the default) a chat model's call is served at the provider
boundary and the cache steps aside; inside a ``use_cassette`` block the block's cassette
serves every call. The contract must hold for direct ``lookup``/``update`` calls there too,
while the boundary keeps serving each call in one pass and nothing is recorded twice. Each
program is recorded, then replayed twice, and compared exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fake_provider import PROVIDER_CALLS, FakeProviderChat
from langchain_core.globals import set_llm_cache
from langchain_core.load import dumps
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration

from chaincassette import Cassette, use_cassette
from chaincassette.integrations.langchain import CassetteCache


def chat_prompt(text: str) -> str:
    return dumps([HumanMessage(text)])


def test_direct_update_then_lookup_of_a_chat_prompt_returns_it(tmp_path: Path) -> None:
    llm_string = FakeProviderChat()._get_llm_string()
    for mode in ("record", "replay"):  # nothing is recorded: the replay needs no recording
        cache = CassetteCache(tmp_path / "direct.yaml", mode=mode)
        assert cache.lookup(chat_prompt("hello"), llm_string) is None
        cache.update(chat_prompt("hello"), llm_string, [ChatGeneration(message=AIMessage("hi"))])
        found = cache.lookup(chat_prompt("hello"), llm_string)
        assert found is not None and found[0].message.content == "hi"  # type: ignore[attr-defined]
        assert list(cache.stored()) == [(chat_prompt("hello"), llm_string)]
        cache.clear()
        assert cache.lookup(chat_prompt("hello"), llm_string) is None and cache.stored() == {}
        assert cache.cassette is not None and cache.cassette.stats.interactions == 0
        cache.close()
    assert not (tmp_path / "direct.yaml").exists()


def program() -> list[Any]:
    model = FakeProviderChat(scenario="chat")
    first = model.invoke("same question")
    again = model.invoke("same question")  # answered by the cache, not the boundary
    other = model.invoke("another question")
    return [m.id for m in (first, again, other)] + [m.content for m in (first, again, other)]


def test_the_boundary_serves_each_call_once_and_the_cache_answers_repeats(
    tmp_path: Path,
) -> None:
    path = tmp_path / "boundary.yaml"
    runs = []
    for mode in ("record", "replay", "replay"):
        cache = CassetteCache(path, mode=mode)
        set_llm_cache(cache)
        try:
            runs.append(program())
        finally:
            set_llm_cache(None)
            cache.close()
        stats = cache.cassette.stats if cache.cassette else None
        assert stats is not None and stats.interactions == 2  # one recording per distinct call
        assert (stats.recorded if mode == "record" else stats.replayed) == 2
        assert len(cache.stored()) == 2  # what LangChain gave update() after each call
    assert runs[0] == runs[1] == runs[2]
    assert runs[0][0] == runs[0][1] and runs[0][0] != runs[0][2]
    assert PROVIDER_CALLS == ["chat:generate", "chat:generate"]


def test_in_a_block_the_cache_stores_with_the_block_and_records_nothing(tmp_path: Path) -> None:
    own = tmp_path / "own.yaml"
    block = tmp_path / "block.yaml"
    runs = []
    for mode in ("record", "replay", "replay"):
        cache = CassetteCache(own, mode=mode)
        set_llm_cache(cache)
        try:
            with use_cassette(block, mode=mode) as first:
                results = program()
                stored = len(cache.stored())
            with use_cassette(Cassette(tmp_path / "other.yaml", mode="record")):
                assert cache.stored() == {}  # another block: nothing of the first one's
            runs.append(results)
        finally:
            set_llm_cache(None)
            cache.close()
        assert stored == 2 and first.stats.interactions == 2
        assert cache.cassette is not None and cache.cassette.stats.interactions == 0
    assert runs[0] == runs[1] == runs[2]
    assert not own.exists()
