"""LlamaIndex streams are stored as their deltas and the final message, like LangChain's.

A real LlamaIndex ``OpenAI`` client streams two answers from the fake OpenAI server (one
``stream_chat``, one ``astream_chat``) in one process, and asks the same two questions
unstreamed in another. The streamed cassette stays within 1.5x of the unstreamed one and
holds no raw provider chunk; replays in fresh processes (no key, the server gone) give
what the recording run gave, chunk for chunk. ``raw_stream_chunks=True`` keeps the raw
``ChatCompletionChunk`` of every chunk, and a cassette written the old way (every chunk
whole, raw included) still replays.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("llama_index.llms.openai")
from fakes.nowhere import closed_port_url
from fakes.scripts import forecast
from fakes.wire import FakeServer

PROGRAM = Path(__file__).with_name("li_stream_program.py")


def run(mode: str, cassette: Path, url: str, kind: str, *extra: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("CHAINCASSETTE_MODE", None)
    if mode != "replay":
        env["OPENAI_API_KEY"] = "sk-test-" + "x" * 32
    done = subprocess.run(
        [sys.executable, str(PROGRAM), mode, str(cassette), url, kind, *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def chunks_of(cassette: Path) -> list[list[dict[str, Any]]]:
    return [i["response"]["chunks"] for i in yaml.safe_load(cassette.read_text())["interactions"]]


def test_two_streamed_calls_take_at_most_one_and_a_half_times_the_unstreamed_file(
    tmp_path: Path,
) -> None:
    streamed, plain = tmp_path / "streamed.yaml", tmp_path / "plain.yaml"
    with FakeServer(forecast) as provider:
        recorded = run("record", streamed, provider.url, "stream")
        run("record", plain, provider.url, "plain")
    assert streamed.stat().st_size <= 1.5 * plain.stat().st_size, (
        streamed.stat().st_size,
        plain.stat().st_size,
    )
    text = streamed.read_text()
    assert "ChatCompletionChunk" not in text and "__pydantic__" not in text
    for chunks in chunks_of(streamed):
        assert all(set(c) <= {"delta", "additional_kwargs"} for c in chunks[:-1])  # deltas only
        final = chunks[-1]["message"]  # ... and the final message, whole
        assert final["blocks"] == [
            {"block_type": "text", "text": "".join(c["delta"] for c in chunks)}
        ]
    assert [c[-1]["content"] for c in recorded] == [
        "You asked: Tell me about the weather in Oslo please",
        "You asked: And about Lima, in a few more words",
    ]
    assert all(chunk["raw"] == "NoneType" for stream in recorded for chunk in stream)
    offline = closed_port_url()
    assert [run("replay", streamed, offline, "stream") for _ in range(2)] == [recorded] * 2


def test_raw_chunks_are_kept_when_a_test_asks_and_old_cassettes_still_replay(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "raw.yaml"
    with FakeServer(forecast) as provider:
        recorded = run("record", cassette, provider.url, "stream", "raw")
    raws = {tuple(chunk["raw"]) for stream in recorded for chunk in stream}
    assert raws and all("choices" in raw and "id" in raw for raw in raws)  # as plain data
    assert run("replay", cassette, closed_port_url(), "stream", "raw") == recorded

    # the way cassettes were written before: every chunk with its whole message so far
    document = yaml.safe_load(cassette.read_text())
    for interaction in document["interactions"]:
        text = ""
        for chunk in interaction["response"]["chunks"]:
            text += chunk["delta"] or ""
            chunk.setdefault(
                "message",
                {
                    "role": "assistant",
                    "blocks": [{"block_type": "text", "text": text}],
                    "additional_kwargs": {},
                },
            )
            chunk.setdefault("additional_kwargs", {})
            chunk.setdefault("logprobs", None)
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump(document, sort_keys=False, explicit_end=True))
    assert run("replay", old, closed_port_url(), "stream", "raw") == recorded
