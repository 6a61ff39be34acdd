"""A run that failed keeps its error in the trace, and its faithful replay does not warn.

A structured-output chain whose model answers with arguments the schema refuses raises
pydantic's ``ValidationError`` out of the ``use_cassette`` block. The recording stores the
trace of that block closed by an ``error`` node naming it; each replay (two) fails the same
way and matches it without a ``TraceDivergenceWarning``; a replay whose program no longer
fails (it catches the error inside the block) is told that the run ended otherwise.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from fake_provider import PROVIDER_CALLS, FakeProviderChat
from pydantic import BaseModel, ValidationError

from chaincassette import Cassette, CassetteMiss, use_cassette
from chaincassette.trace import TraceDivergenceWarning


class Strict(BaseModel):
    """What the model's answer must hold (it answers ``city`` and ``temperature_c``)."""

    nope: int


def fail(path: Path, mode: str) -> Cassette:
    chain = FakeProviderChat(scenario="structured").with_structured_output(Strict)
    with pytest.raises(ValidationError), use_cassette(path, mode=mode) as cassette:
        chain.invoke("Weather in Paris?")
    return cassette


def error_nodes(trace: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [n for n in trace or [] if n.get("error") or n["type"] == "error"]


def test_a_failed_run_is_recorded_failed_and_replays_without_warning(tmp_path: Path) -> None:
    path = tmp_path / "failed.yaml"
    recording = fail(path, "record")
    stored = Cassette(path, mode="replay").recorded_trace
    assert [(n["type"], n["name"], n.get("error")) for n in error_nodes(stored)] == [
        ("chain", "RunnableSequence", "ValidationError"),
        ("chain", "PydanticToolsParser", "ValidationError"),
        ("error", "ValidationError", None),
    ]
    assert recording.stats.recorded == 1
    replays = []
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error", TraceDivergenceWarning)
            replay = fail(path, "replay")
        assert replay.trace_divergence is None and replay.stats.replayed == 1
        replays.append(replay.trace)
    assert replays[0] == replays[1] == stored
    assert PROVIDER_CALLS == ["structured:generate"]


def test_a_replay_that_no_longer_fails_is_told_so(tmp_path: Path) -> None:
    path = tmp_path / "failed.yaml"
    fail(path, "record")
    chain = FakeProviderChat(scenario="structured").with_structured_output(Strict)
    warned = pytest.warns(TraceDivergenceWarning, match="error ValidationError: recorded but")
    caught: list[BaseException] = []
    with warned, use_cassette(path, mode="replay") as cassette:
        try:  # caught inside: the block ends normally
            chain.invoke("Weather in Paris?")
        except ValidationError as error:
            caught.append(error)
    assert len(caught) == 1
    assert cassette.trace_divergence is not None


def test_a_block_a_miss_ended_keeps_no_trace(tmp_path: Path) -> None:
    path = tmp_path / "failed.yaml"
    fail(path, "record")
    chain = FakeProviderChat(scenario="structured").with_structured_output(Strict)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceDivergenceWarning)
        with pytest.raises(CassetteMiss), use_cassette(path, mode="replay") as cassette:
            chain.invoke("Weather in Lima?")  # never recorded: not the program's own path
    assert cassette.trace is None and cassette.trace_divergence is None
