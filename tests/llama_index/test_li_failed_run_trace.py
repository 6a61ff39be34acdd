"""A LlamaIndex run that failed keeps its error in the trace; its replay does not warn.

A workflow step asks the provider LLM, then refuses the answer with pydantic's
``ValidationError``, which ends the ``use_cassette`` block. The recorded trace names the
failure (the workflow's node and a closing ``error`` node); two replays fail the same way
and match it without a ``TraceDivergenceWarning``.
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest
from li_fake_provider import FakeProvider, Reply
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.workflow import StartEvent, StopEvent, Workflow, step
from pydantic import BaseModel, ValidationError

from chaincassette import Cassette, use_cassette
from chaincassette.trace import TraceDivergenceWarning


class Count(BaseModel):
    n: int


def answer(messages: Any, tools: Any) -> Reply:
    return Reply(text="several")


class Counting(Workflow):
    @step
    async def count(self, ev: StartEvent) -> StopEvent:
        reply = await FakeProvider(policy=answer).achat([ChatMessage(role="user", content="n?")])
        return StopEvent(result=Count.model_validate({"n": reply.message.content}))


async def run() -> Any:
    return await Counting(timeout=30).run()


def fail(path: Path, mode: str) -> Cassette:
    with pytest.raises(ValidationError), use_cassette(path, mode=mode) as cassette:
        asyncio.run(run())
    return cassette


def test_a_failed_workflow_is_recorded_failed_and_replays_without_warning(
    tmp_path: Path,
) -> None:
    path = tmp_path / "failed.yaml"
    fail(path, "record")
    stored = Cassette(path, mode="replay").recorded_trace or []
    assert [n["type"] for n in stored] == ["chain", "llm", "error"]
    assert stored[0]["error"].startswith("ValidationError: 1 validation error for Count")
    assert stored[-1]["name"] == "ValidationError"
    calls = len(FakeProvider.calls)
    traces = []
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error", TraceDivergenceWarning)
            replay = fail(path, "replay")
        assert replay.trace_divergence is None and replay.stats.replayed == 1
        traces.append([{k: v for k, v in n.items() if k != "source"} for n in replay.trace or []])
    assert traces[0] == traces[1] == stored
    assert len(FakeProvider.calls) == calls
