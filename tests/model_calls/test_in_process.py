"""Embeddings, errors and the vector codec in one process, on real framework classes."""

from __future__ import annotations

import asyncio
import math
import random
import struct
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding

from chaincassette import Cassette, CassetteMiss, use_cassette
from chaincassette.error_codec import RecordedError, encode_error, rebuild_error
from chaincassette.integrations.langchain import CassetteEmbeddings
from chaincassette.integrations.llama_index import CassetteEmbedding
from chaincassette.vectors import decode_vectors, encode_vectors


def bits(vectors: list[list[float]]) -> list[bytes]:
    return [struct.pack(f"<{len(v)}d", *v) for v in vectors]


# -- the vector codec ------------------------------------------------------------------------


def test_float32_vectors_are_stored_in_4_bytes_a_dimension_and_come_back_bit_identical() -> None:
    values = [[struct.unpack("<f", struct.pack("<f", random.gauss(0, 1)))[0] for _ in range(1536)]]
    stored = encode_vectors(values)
    assert stored["vectors"]["dtype"] == "float32" and stored["vectors"]["dim"] == 1536
    assert len(stored["vectors"]["data"][0]) == 8192  # base64 of 6,144 bytes
    assert bits(decode_vectors(stored)) == bits(values)


def test_doubles_fall_back_to_float64_and_keep_every_bit() -> None:
    values = [[random.random() for _ in range(7)] + [-0.0, math.inf, 1e-310], [0.1, 0.2]]
    stored = encode_vectors(values)
    assert stored["vectors"]["dtype"] == "float64" and "dim" not in stored["vectors"]
    assert bits(decode_vectors(stored)) == bits(values)


def test_a_broken_vector_is_a_clear_error_naming_where() -> None:
    with pytest.raises(ValueError, match=r"x\.yaml: a stored vector is not valid base64"):
        decode_vectors({"vectors": {"dtype": "float32", "data": ["@@"]}}, where="x.yaml")


# -- errors ------------------------------------------------------------------------------------


def rate_limit(message: str = "Rate limit reached") -> openai.RateLimitError:
    request = httpx.Request("POST", "https://api.openai.com/v1/chat/completions")
    response = httpx.Response(
        429,
        headers={"retry-after": "7", "set-cookie": "s=1", "x-ratelimit-remaining-requests": "0"},
        request=request,
    )
    body = {"message": message, "type": "requests", "code": "rate_limit_exceeded"}
    return openai.RateLimitError(f"Error code: 429 - {message}", response=response, body=body)


def test_an_openai_error_is_rebuilt_as_its_class_with_status_headers_and_body() -> None:
    original = rate_limit()
    stored = encode_error(original)
    assert stored["headers"] == {"retry-after": "7", "x-ratelimit-remaining-requests": "0"}
    rebuilt = rebuild_error(stored)
    assert type(rebuilt) is openai.RateLimitError
    assert (str(rebuilt), repr(rebuilt)) == (str(original), repr(original))
    assert rebuilt.status_code == 429 and rebuilt.body == original.body  # type: ignore[attr-defined]
    assert rebuilt.response.headers["retry-after"] == "7"  # type: ignore[attr-defined]


def test_a_class_not_loaded_here_replays_as_a_look_alike_its_loaded_bases_catch() -> None:
    stored = encode_error(rate_limit())
    stored["type"] = "someprovider.errors.TooManyRequests"
    stored["bases"] = ["someprovider.errors.ProviderError", *stored["bases"]]  # not imported
    rebuilt = rebuild_error(stored)
    assert isinstance(rebuilt, openai.APIStatusError) and isinstance(rebuilt, RecordedError)
    assert type(rebuilt).__name__ == "TooManyRequests"
    assert str(rebuilt) == "Error code: 429 - Rate limit reached"
    assert rebuilt.status_code == 429  # type: ignore[attr-defined]


def _failing_call(tmp_path: Path, error: BaseException) -> Cassette:
    cassette = Cassette(tmp_path / "c.yaml", mode="record")
    call = cassette.begin({"kind": "chat", "model": "m", "messages": []})
    call.fail(error)
    return cassette


@pytest.mark.parametrize(
    "error",
    [KeyboardInterrupt(), asyncio.CancelledError(), GeneratorExit(), TypeError("bug")],
    ids=["KeyboardInterrupt", "CancelledError", "GeneratorExit", "TypeError"],
)
def test_interruptions_and_programming_errors_are_not_recorded(
    tmp_path: Path, error: BaseException
) -> None:
    assert _failing_call(tmp_path, error).interactions == []


def test_a_cassette_miss_is_never_an_answer(tmp_path: Path) -> None:
    miss = CassetteMiss("no", path=tmp_path, mode="replay", request={}, key="k")
    assert _failing_call(tmp_path, miss).interactions == []


def test_a_secret_in_an_error_never_reaches_the_cassette(tmp_path: Path) -> None:
    key = "sk-proj-" + "a1B2c3D4e5" * 4
    cassette = _failing_call(tmp_path, rate_limit(f"Incorrect API key provided: {key}"))
    cassette.save()
    text = (tmp_path / "c.yaml").read_text()
    assert key not in text and "<redacted:openai-key>" in text
    replayed = Cassette(tmp_path / "c.yaml", mode="replay").begin(
        {"kind": "chat", "model": "m", "messages": []}
    )
    with pytest.raises(openai.RateLimitError, match="redacted"):
        replayed.raise_if_error()


# -- embeddings: LangChain ----------------------------------------------------------------------


class NoisyEmbeddings(Embeddings):
    """A provider-like embedding model: random doubles, counted calls."""

    model = "noisy-1"
    dimensions = 5

    def __init__(self) -> None:
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [[random.random() for _ in range(self.dimensions)] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]  # built on embed_documents: recorded once


def test_langchain_embeddings_replay_bit_identical_inside_use_cassette(tmp_path: Path) -> None:
    path = tmp_path / "lc.yaml"
    live = NoisyEmbeddings()
    with use_cassette(path, mode="record"):
        recorded = (live.embed_documents(["a", "b"]), live.embed_query("q"))
        recorded_async = asyncio.run(live.aembed_documents(["c"]))
    assert live.calls == 3
    assert len(Cassette(path, mode="replay").interactions) == 3  # embed_query recorded once
    again = NoisyEmbeddings()
    with use_cassette(path, mode="replay"):
        replayed = (again.embed_documents(["a", "b"]), again.embed_query("q"))
        replayed_async = asyncio.run(again.aembed_documents(["c"]))
        with pytest.raises(CassetteMiss):
            again.embed_query("never recorded")
    assert again.calls == 0
    assert replayed == recorded and replayed_async == recorded_async
    assert bits(replayed[0]) == bits(recorded[0])


def test_a_class_defined_inside_the_block_is_intercepted(tmp_path: Path) -> None:
    with use_cassette(tmp_path / "late.yaml", mode="record") as cassette:

        class Late(NoisyEmbeddings):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return [[1.5] * 3 for _ in texts]

        Late().embed_documents(["x"])
        assert [i.request["model_class"] for i in cassette.interactions] == ["Late"]


def test_cassette_embeddings_wrapper_owns_and_saves_its_cassette(tmp_path: Path) -> None:
    path = tmp_path / "wrapped.yaml"
    recorded = CassetteEmbeddings(NoisyEmbeddings(), cassette=path, mode="record")
    vectors = recorded.embed_documents(["a"]), asyncio.run(recorded.aembed_query("b"))
    assert path.exists()  # saved after each recording: no block owns it
    provider = NoisyEmbeddings()
    replaying = CassetteEmbeddings(provider, cassette=path, mode="replay")
    assert (replaying.embed_documents(["a"]), asyncio.run(replaying.aembed_query("b"))) == vectors
    assert provider.calls == 0


def test_a_provider_error_of_an_embedding_call_replays(tmp_path: Path) -> None:
    class Limited(NoisyEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise rate_limit()

    path = tmp_path / "err.yaml"
    with use_cassette(path, mode="record"), pytest.raises(openai.RateLimitError):
        Limited().embed_query("q")
    with use_cassette(path, mode="replay"), pytest.raises(openai.RateLimitError) as caught:
        Limited().embed_query("q")  # raised from the cassette: Limited is not called
    assert caught.value.response.headers["retry-after"] == "7"


# -- embeddings: LlamaIndex ---------------------------------------------------------------------


class NoisyEmbedding(BaseEmbedding):
    """A provider-like LlamaIndex embedding model (random doubles, counted calls)."""

    calls: int = 0

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        self.calls += 1
        return [random.random() for _ in range(4)]


def run_llama_index(model: BaseEmbedding) -> Any:
    texts = model.get_text_embedding_batch(["one", "two", "three"])
    query = model.get_query_embedding("q")
    batch = asyncio.run(model.aget_text_embedding_batch(["four"]))
    return texts, query, batch, asyncio.run(model.aget_query_embedding("q2"))


def test_llama_index_embeddings_replay_inside_use_cassette(tmp_path: Path) -> None:
    path = tmp_path / "li.yaml"
    with use_cassette(path, mode="record"):
        recorded = run_llama_index(NoisyEmbedding(model_name="noisy-li"))
    provider = NoisyEmbedding(model_name="noisy-li")
    with use_cassette(path, mode="replay"):
        assert run_llama_index(provider) == recorded
    assert provider.calls == 0
    inputs = [i.request["input_type"] for i in Cassette(path, mode="replay").interactions]
    # LlamaIndex's own batch loops over _get_text_embedding (the provider's outermost
    # method, recorded per text); _get_query_embedding built on it records once
    assert inputs == ["text", "text", "text", "query", "text", "query"]


def test_cassette_embedding_wrapper_replays_without_a_block(tmp_path: Path) -> None:
    path = tmp_path / "li_wrapped.yaml"
    recorded = run_llama_index(CassetteEmbedding(NoisyEmbedding(), cassette=path, mode="record"))
    provider = NoisyEmbedding()
    replaying = CassetteEmbedding(provider, cassette=path, mode="replay")
    assert run_llama_index(replaying) == recorded and provider.calls == 0


# -- errors through the chat and LLM interception points ------------------------------------------


class Flaky:
    """Fails the first ``failures`` calls with a rate limit, then answers with a nonce."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise rate_limit()
        return f"answer {random.random()}"


def test_a_llama_index_llm_error_replays_then_the_answer(tmp_path: Path) -> None:
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata

    flaky = Flaky(failures=1)

    class Provider(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata()

        def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
            return CompletionResponse(text=flaky())

        def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:
            raise NotImplementedError

    def run() -> tuple[str, str]:
        with pytest.raises(openai.RateLimitError) as caught:
            Provider().complete("hi")
        return str(caught.value), Provider().complete("hi").text

    path = tmp_path / "li_err.yaml"
    with use_cassette(path, mode="record"):
        recorded = run()
    with use_cassette(path, mode="replay"):
        assert run() == recorded
    assert flaky.calls == 2


def test_a_chat_stream_refused_before_its_first_chunk_replays_the_refusal(tmp_path: Path) -> None:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk, ChatResult

    flaky = Flaky(failures=1)

    class Streamer(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "streamer"

        def _generate(self, messages: Any, stop: Any = None, **kw: Any) -> ChatResult:
            raise NotImplementedError

        def _stream(self, messages: Any, stop: Any = None, **kw: Any) -> Any:
            text = flaky()
            for word in text.split():
                yield ChatGenerationChunk(message=AIMessageChunk(content=word + " "))

    def run() -> tuple[str, list[str]]:
        with pytest.raises(openai.RateLimitError) as caught:
            list(Streamer().stream("hi"))
        return str(caught.value), [str(c.content) for c in Streamer().stream("hi")]

    path = tmp_path / "stream_err.yaml"
    with use_cassette(path, mode="record"):
        recorded = run()
    with use_cassette(path, mode="replay"):
        assert run() == recorded
    assert flaky.calls == 2 and len(recorded[1]) >= 2


def test_a_llama_index_stream_refused_at_its_first_chunk_is_refused_there_on_replay(
    tmp_path: Path, provider: Any
) -> None:
    """LlamaIndex's OpenAI sends a stream's request at its first chunk (a 429 is raised
    there, after ``stream_chat`` returned), a ``CustomLLM`` here when it is called: each
    replay raises where its recording raised, sync and async, replayed twice."""
    from llama_index.core.llms import ChatMessage, CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.llms.openai import OpenAI

    class Eager(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="eager")

        def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
            raise NotImplementedError

        def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:
            raise rate_limit("refused when called")

    def where(start: Any, pull: Any) -> str:
        try:
            stream = start()
        except openai.RateLimitError:
            return "raised when called"
        try:
            pull(stream)
        except openai.RateLimitError:
            return "raised at the first chunk"
        return "answered"

    def run(url: str) -> list[str]:
        llm = OpenAI(model="gpt-4o-mini", api_base=url, api_key="k", max_retries=0)
        ask = [ChatMessage(role="user", content="Weather in Paris?")]

        async def areading() -> str:
            try:
                stream = await llm.astream_chat(ask, temperature=0.5)
            except openai.RateLimitError:
                return "raised when called"
            try:
                await stream.__anext__()
            except openai.RateLimitError:
                return "raised at the first chunk"
            return "answered"

        return [
            where(lambda: llm.stream_chat(ask), next),
            asyncio.run(areading()),
            where(lambda: Eager().stream_complete("hi"), next),
        ]

    path = tmp_path / "li_stream_err.yaml"
    provider.fail("chat/completions", 429, times=2)
    with use_cassette(path, mode="record"):
        recorded = run(provider.url)
    assert recorded == ["raised at the first chunk"] * 2 + ["raised when called"]
    requests = provider.requests
    for _ in range(2):
        with use_cassette(path, mode="replay"):
            assert run("http://127.0.0.1:9/v1") == recorded
    assert provider.requests == requests
