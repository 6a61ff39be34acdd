"""Replay keeps the recorded completion order of concurrent calls, in fresh processes.

The programs of ``order_programs.py`` (a LangGraph ``Send`` map-reduce streamed sync and
async, its branches streaming tokens in ``stream_mode="messages"``, ``asyncio.gather``,
sync calls in a thread pool, ``abatch``, parallel tool calls) start their slowest call
first, so on record the calls complete in the opposite order. They are recorded once, in a
fresh process, then replayed in 20 fresh processes (forked, ten each from two interpreters
that only imported the programs: no chaincassette state, no first call made, without paying
the imports 20 times): every replay must see exactly what the recording saw, in the same
order, with no provider call and no wait given up. Concurrent streams replay one after another in the order they completed (each whole),
so the ``messages`` program is compared per branch, and by the order of the branches.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).with_name("order_programs.py")
REPLAYS = 20
START_ORDER = ["slow", "mid", "fast"]  # the order every program starts its calls in


def start(directory: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("CHAINCASSETTE_MODE", None)
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(directory), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def finish(process: subprocess.Popen[str]) -> Any:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    return json.loads(out)


def subjects(texts: list[str]) -> list[str]:
    return [next(s for s in START_ORDER if s in text) for text in texts]


def branches(chunks: list[str]) -> list[str]:
    """The answer IDs of a ``messages`` stream, one per run of consecutive chunks."""
    return [answer for answer, _ in itertools.groupby(c.split(":")[1] for c in chunks)]


def per_branch(chunks: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for chunk in chunks:
        out.setdefault(chunk.split(":")[1], []).append(chunk)
    return out


def completion_order(chunks: list[str]) -> list[str]:
    """The answer IDs of a recorded ``messages`` stream in the order their last chunk came."""
    last = {answer: n for n, answer in enumerate(c.split(":")[1] for c in chunks)}
    return sorted(last, key=last.__getitem__)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("order")
    recorded = finish(start(folder, "record"))
    pair = [start(folder, f"replay*{REPLAYS // 2}") for _ in range(2)]  # one per core
    replays = [report for process in pair for report in finish(process)]
    assert len(replays) == REPLAYS
    return {"recorded": recorded, "replays": replays}


def test_the_recording_completed_in_another_order_than_it_started(runs: dict[str, Any]) -> None:
    recorded = runs["recorded"]
    assert subjects(recorded["send"]["result"]) != START_ORDER
    assert subjects(recorded["asend"]["result"]) != START_ORDER
    assert recorded["gather"]["result"]["completed"] != START_ORDER
    assert recorded["threads"]["result"]["completed"] != START_ORDER
    assert recorded["abatch"]["result"]["ended"] != START_ORDER
    assert subjects(recorded["tools"]["result"]) != START_ORDER
    messages = recorded["messages"]["result"]
    assert branches(messages) != completion_order(messages)  # the streams interleaved live
    for name, report in recorded.items():
        assert report["recorded"] == 3, name
    assert recorded["send"]["calls"] == 3 and recorded["tools"]["calls"] == 0


@pytest.mark.parametrize("name", ["send", "asend", "gather", "threads", "abatch", "tools"])
def test_every_replay_sees_the_recorded_order(runs: dict[str, Any], name: str) -> None:
    recorded = runs["recorded"][name]["result"]
    for replay in runs["replays"]:
        report = replay[name]
        assert report["result"] == recorded
        assert (report["calls"], report["recorded"], report["missed"]) == (0, 0, 0)
        assert report["replayed"] == 3 and report["given_up"] == 0


def test_concurrent_streams_replay_whole_in_the_order_they_completed(
    runs: dict[str, Any],
) -> None:
    recorded = runs["recorded"]["messages"]["result"]
    first = runs["replays"][0]["messages"]["result"]
    assert branches(first) == completion_order(recorded)  # one after another, as they ended
    assert per_branch(first) == per_branch(recorded)  # each stream chunk for chunk
    for replay in runs["replays"]:
        report = replay["messages"]
        assert report["result"] == first
        assert (report["calls"], report["missed"], report["given_up"]) == (0, 0, 0)
