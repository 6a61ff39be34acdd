"""A program's own LangChain cache beside ``use_cassette``: the block's cassette answers
every call, and a model that asks for the global cache (``cache=True``) still runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fake_provider import PROVIDER_CALLS, FakeProviderChat, FakeProviderLLM
from langchain_core.caches import InMemoryCache
from langchain_core.globals import get_llm_cache, set_llm_cache

from chaincassette import use_cassette


def test_a_model_asking_for_the_global_cache_runs_in_a_block(tmp_path: Path) -> None:
    """``cache=True`` means "use the global cache": in a block that cache steps aside for
    the cassette, and the call must not fail with LangChain's "no cache found"."""
    path = tmp_path / "cache-true.yaml"

    def program() -> Any:
        chat = FakeProviderChat(cache=True)
        llm = FakeProviderLLM(cache=True)
        return chat.invoke("hello").content, llm.invoke("hi"), chat.invoke("hello").content

    user = InMemoryCache()
    set_llm_cache(user)
    try:
        with use_cassette(path, mode="record"):
            recorded = program()
        calls = len(PROVIDER_CALLS)
        for _ in range(2):
            with use_cassette(path, mode="replay") as cassette:
                assert program() == recorded
            assert cassette.stats.missed == 0
        assert len(PROVIDER_CALLS) == calls, "replay called the provider"
        assert get_llm_cache() is user
    finally:
        set_llm_cache(None)
