"""Issue 13's "done when", each recorded in one fresh process and replayed in another against
a live fake provider that counts connections: a replay must make none and reproduce the
recorded run exactly (answers carry a random nonce, vectors random noise)."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from fakes.wire import FakeServer
from mc_helpers import run_cli, run_program


def interactions(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text())["interactions"]


def replay(scenario: str, cassette: Path, provider: FakeServer) -> dict:
    before = provider.connections
    result = run_program(scenario, cassette, "replay", provider.url)
    assert provider.connections == before, "the replay reached the provider"
    return result


def test_langchain_retrieval_chain_replays_answer_and_vectors(
    tmp_path: Path, provider: FakeServer
) -> None:
    cassette = tmp_path / "lc_rag.yaml"
    recorded = run_program("lc_rag", cassette, "record", provider.url)
    assert provider.by_path.get("/v1/embeddings", 0) >= 3
    assert recorded["answer"].startswith("Answer from context about Paris")
    replayed = replay("lc_rag", cassette, provider)
    assert replayed == recorded  # floats through JSON repr: bit for bit
    kinds = [i["request"]["kind"] for i in interactions(cassette)]
    # the documents, the retriever's query, the async query, the same query again
    assert kinds.count("embedding") == 4 and kinds.count("chat") == 1


def test_llama_index_query_engine_replays_with_chaincassette_run(
    tmp_path: Path, provider: FakeServer
) -> None:
    cassette = tmp_path / "li_rag.yaml"
    command = [sys.executable, str(Path(__file__).parent / "programs.py"), "li_rag", "-", "-"]
    done = run_cli("run", "--record", str(cassette), "--quiet", "--", *command, provider.url)
    assert done.returncode == 0, done.stderr[-3000:]
    recorded = done.stdout.strip().splitlines()[-1]
    assert "Answer from context about" in recorded and "Paris" in recorded
    before = provider.connections
    done = run_cli("run", "--replay", str(cassette), "--quiet", "--", *command, provider.url)
    assert done.returncode == 0, done.stderr[-3000:]
    assert provider.connections == before
    assert done.stdout.strip().splitlines()[-1] == recorded
    stored = interactions(cassette)
    vectors = [i["response"]["vectors"] for i in stored if i["request"]["kind"] == "embedding"]
    assert vectors and all(v["dtype"] == "float32" and v["dim"] == 64 for v in vectors)


def test_llama_index_query_engine_replays_in_use_cassette(
    tmp_path: Path, provider: FakeServer
) -> None:
    cassette = tmp_path / "li_block.yaml"
    recorded = run_program("li_rag", cassette, "record", provider.url)
    assert replay("li_rag", cassette, provider) == recorded


def test_with_fallbacks_replays_the_recorded_failure_path(
    tmp_path: Path, provider: FakeServer
) -> None:
    cassette = tmp_path / "fallbacks.yaml"
    provider.fail("primary-model", 500)
    recorded = run_program("fallbacks", cassette, "record", provider.url)
    # langchain-openai raises its own subclass of openai.InternalServerError
    assert recorded["events"][0] == "start:primary-model"
    assert recorded["events"][1].startswith("error:")
    assert recorded["events"][2:] == ["start:backup-model"]
    assert replay("fallbacks", cassette, provider) == recorded
    error = interactions(cassette)[0]["response"]["error"]
    assert "openai.InternalServerError" in [error["type"], *error["bases"]]
    assert error["status"] == 500


def test_with_retry_replays_a_429_then_the_answer(tmp_path: Path, provider: FakeServer) -> None:
    cassette = tmp_path / "retry.yaml"
    provider.fail("chat/completions", 429)
    recorded = run_program("retry", cassette, "record", provider.url)
    assert recorded["events"][0::2] == ["start:gpt-4o-mini", "start:gpt-4o-mini"]
    assert recorded["events"][1].startswith("error:") and len(recorded["events"]) == 3
    assert replay("retry", cassette, provider) == recorded
    first = interactions(cassette)[0]["response"]["error"]
    assert first["headers"]["retry-after"] == "0"
    assert first["attributes"]["code"] == "rate_limit_exceeded"


def test_hand_authored_rate_limit_sends_a_langgraph_agent_down_its_error_path(
    tmp_path: Path, provider: FakeServer
) -> None:
    cassette = tmp_path / "agent.yaml"
    recorded = run_program("agent", cassette, "record", provider.url)
    assert recorded["path"] == ["ask"]
    assert replay("agent", cassette, provider) == recorded
    done = run_cli("fault", str(cassette), "--interaction", "0", "--error", "rate_limit")
    assert done.returncode == 0, done.stderr
    faulted = replay("agent", cassette, provider)
    assert faulted["path"] == ["ask", "rate_limited", "back_off"]
    assert "Error code: 429" in faulted["answer"] and "retry after 1s" in faulted["answer"]
    assert replay("agent", cassette, provider) == faulted


def test_completion_llm_stream_replays_chunk_for_chunk(
    tmp_path: Path, provider: FakeServer
) -> None:
    cassette = tmp_path / "stream.yaml"
    recorded = run_program("completion_stream", cassette, "record", provider.url)
    assert len(recorded["chunks"]) > 3 and recorded["tokens"] == recorded["chunks"]
    assert replay("completion_stream", cassette, provider) == recorded
    stored = interactions(cassette)
    assert all(i["request"]["stream"] is True for i in stored)
    assert [len(i["response"]["chunks"]) for i in stored] == [
        len(recorded["chunks"]),
        len(recorded["async_chunks"]),
    ]
