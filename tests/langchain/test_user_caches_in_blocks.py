"""A program's own LangChain cache beside ``use_cassette``: the block's cassette answers
every call, and a model that asks for the global cache (``cache=True``) still runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fake_provider import PROVIDER_CALLS, FakeProviderChat, FakeProviderLLM
from langchain_core.caches import InMemoryCache
from langchain_core.globals import get_llm_cache, set_llm_cache
from stream_refusal import assert_streams_refused

from chaincassette import use_cassette


def replays_as_recorded(program: Callable[[str], Any]) -> None:
    """``program(mode)`` returns (its answers, the cassette): recorded once, then replayed
    twice, it gives the same answers with no miss and no provider call."""
    try:
        recorded, _ = program("record")
        calls = len(PROVIDER_CALLS)
        for _ in range(2):
            replayed, cassette = program("replay")
            assert replayed == recorded
            assert cassette is not None and cassette.stats.missed == 0
        assert len(PROVIDER_CALLS) == calls, "replay called the provider"
    finally:
        set_llm_cache(None)


def test_a_model_asking_for_the_global_cache_runs_in_a_block(tmp_path: Path) -> None:
    """``cache=True`` means "use the global cache": in a block that cache steps aside for
    the cassette, and the call must not fail with LangChain's "no cache found"."""
    path = tmp_path / "cache-true.yaml"

    def program() -> Any:
        chat = FakeProviderChat(cache=True)
        llm = FakeProviderLLM(cache=True)

        async def concurrently() -> Any:
            return await llm.ainvoke("hi"), (await chat.ainvoke("hello")).content

        again = asyncio.run(concurrently())
        return chat.invoke("hello").content, llm.invoke("hi"), chat.invoke("hello").content, again

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


class FlakyError(Exception):
    """A provider's answer that is an error (a rate limit, a refused request)."""


def test_a_cassette_cache_replays_a_failing_completion_and_its_fallback(tmp_path: Path) -> None:
    """``set_llm_cache(CassetteCache(...))`` answers completion LLMs through LangChain's cache
    hook, which never sees a provider error: the error must still be recorded, or the replay
    misses where the live call failed (and ``with_fallbacks`` hides the miss)."""
    from chaincassette.integrations.langchain import CassetteCache

    path = tmp_path / "fallback.yaml"

    class Failing(FakeProviderLLM):
        def _generate(self, prompts: list[str], *args: Any, **kwargs: Any) -> Any:
            PROVIDER_CALLS.append("failing")
            raise FlakyError("rate limited")

    def program(mode: str) -> Any:
        with CassetteCache(path, mode=mode) as cache:
            set_llm_cache(cache)
            chain = Failing(model="primary").with_fallbacks([FakeProviderLLM(model="backup")])
            answers = [chain.invoke("hi"), chain.invoke("hi")]
            cache.clear()  # the next call asks the cassette again
            answers.append(chain.invoke("hi"))
            return answers, cache.cassette

    replays_as_recorded(program)


def test_a_cache_without_stream_replay_replays_a_failing_chat_model_and_its_fallback(
    tmp_path: Path,
) -> None:
    """``CassetteCache(stream_replay=False)`` answers chat models through the cache hook too."""
    from chaincassette.integrations.langchain import CassetteCache

    path = tmp_path / "chat-fallback.yaml"

    class FailingChat(FakeProviderChat):
        def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            PROVIDER_CALLS.append("failing")
            raise FlakyError("overloaded")

    def program(mode: str) -> Any:
        with CassetteCache(path, mode=mode, stream_replay=False) as cache:
            set_llm_cache(cache)
            primary = FailingChat(model="primary")
            chain = primary.with_fallbacks([FakeProviderChat(model="backup")])
            answers = [chain.invoke("hello").content for _ in range(2)]
            cache.clear()
            answers.append(chain.invoke("hello").content)
            return answers, cache.cassette

    replays_as_recorded(program)


def test_stream_replay_off_never_lets_a_completion_stream_go_live_in_replay(
    tmp_path: Path,
) -> None:
    """A completion LLM's stream bypasses LangChain's cache like a chat model's: replaying
    with ``stream_replay=False`` it must raise ``CassetteMiss``, never call the provider."""
    from langchain_core.outputs import GenerationChunk

    from chaincassette.integrations.langchain import CassetteCache

    class StreamingLLM(FakeProviderLLM):
        def _stream(self, prompt: str, *args: Any, **kwargs: Any) -> Any:
            PROVIDER_CALLS.append("completion:stream")
            yield GenerationChunk(text=prompt.upper())

    path = tmp_path / "completion-stream.yaml"
    with CassetteCache(path, mode="record", stream_replay=False) as cache:
        set_llm_cache(cache)
        StreamingLLM().invoke("hi")
    try:
        with CassetteCache(path, mode="replay", stream_replay=False) as cache:
            set_llm_cache(cache)
            assert_streams_refused(StreamingLLM, "hi")
    finally:
        set_llm_cache(None)


CACHE_ONLY = """
import json, random, sys, uuid
sys.path.insert(0, sys.argv[3])
from fake_provider import PROVIDER_CALLS, FakeProviderLLM
from langchain_core.embeddings import Embeddings
from langchain_core.globals import set_llm_cache
from langchain_core.outputs import GenerationChunk
from chaincassette.integrations.langchain import CassetteCache


class StreamingLLM(FakeProviderLLM):
    def _stream(self, prompt, *args, **kwargs):
        PROVIDER_CALLS.append("completion:stream")
        for word in (prompt, "#" + uuid.uuid4().hex[:6]):
            yield GenerationChunk(text=word)


class Vectors(Embeddings):
    def embed_documents(self, texts):
        PROVIDER_CALLS.append("embedding")
        return [[float(len(t)), random.random()] for t in texts]

    def embed_query(self, text):
        return self.embed_documents([text])[0]


with CassetteCache(sys.argv[1], mode=sys.argv[2]) as cache:
    set_llm_cache(cache)
    streamed = [chunk for chunk in StreamingLLM().stream("roses")]
    vectors = Vectors().embed_documents(["a", "bb"])
print(json.dumps({"streamed": streamed, "vectors": vectors, "calls": PROVIDER_CALLS}))
"""


def test_a_global_cassette_cache_alone_replays_completion_streams_and_embeddings(
    tmp_path: Path,
) -> None:
    """``set_llm_cache(CassetteCache(...))`` in a process that never opened a ``use_cassette``
    block: a completion LLM's stream (which bypasses LangChain's cache) and the embeddings
    the global cache serves are recorded and replayed, never called live by a replay."""
    import json
    import subprocess
    import sys

    script = tmp_path / "program.py"
    script.write_text(CACHE_ONLY)
    here = str(Path(__file__).parent)

    def run(mode: str) -> Any:
        argv = [sys.executable, str(script), str(tmp_path / "cache.yaml"), mode, here]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    recorded = run("record")
    assert recorded["calls"] == ["completion:stream", "embedding"]
    for _ in range(2):
        replayed = run("replay")
        assert replayed["calls"] == [], "replay called the provider"
        assert replayed["streamed"] == recorded["streamed"]
        assert replayed["vectors"] == recorded["vectors"]


def test_a_batch_of_one_prompt_through_a_cassette_cache_replays_each_answer(
    tmp_path: Path,
) -> None:
    """``batch`` of a completion LLM and ``abatch`` of a chat model look every input up before
    any answer is stored, so a recording holds one answer per input: the replay gives each
    input its own, not the first one's again from what the cache stored of it."""
    from chaincassette.integrations.langchain import CassetteCache

    def program(mode: str) -> Any:
        with CassetteCache(tmp_path / "batch.yaml", mode=mode) as cache:
            set_llm_cache(cache)
            texts = FakeProviderLLM().batch(["hi", "hi"])
            chats = asyncio.run(FakeProviderChat().abatch(["yo", "yo"]))
            again = FakeProviderLLM().invoke("hi"), FakeProviderChat().invoke("yo").content
            return texts, [c.content for c in chats], again, cache.cassette

    try:
        *recorded, _ = program("record")
        assert len(set(recorded[0])) == len(set(recorded[1])) == 2  # each input its own answer
        calls = len(PROVIDER_CALLS)
        for _ in range(2):
            *replayed, cassette = program("replay")
            assert replayed == recorded
            assert cassette.stats.missed == 0 and cassette.stats.unused == 0
        assert len(PROVIDER_CALLS) == calls, "replay called the provider"
    finally:
        set_llm_cache(None)
