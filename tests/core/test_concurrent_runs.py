"""``record`` is one run per intent, across processes that share no ``CHAINCASSETTE_RUN``.

Two real processes, each its own run, open one ``use_cassette(mode="record")`` block per
call on the same cassette: neither drops what the other (alive) recorded, and both drop
what a finished earlier run left. When both record the same calls at once, each key keeps
one answer: the run that began recording the cassette first, whoever saves first; the
other run is told so in one line.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from pathlib import Path

from chaincassette import Cassette, store

from .programs import PER_CALL, finished_run, script, spawn, wait_for

CALLS = 100


def start(folder: Path, cassette: Path, tag: str, same: bool) -> subprocess.Popen[str]:
    program = script(folder, "per_call", PER_CALL)
    child = spawn(program, str(cassette), tag, str(CALLS), "same" if same else "own")
    wait_for(child, "ready")
    return child


def go(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()


def finish(child: subprocess.Popen[str]) -> str:
    _, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    return err


def test_two_processes_recording_one_block_per_call_keep_every_call(tmp_path: Path) -> None:
    for trial in range(5):
        path = tmp_path / f"c{trial}.yaml"
        finished_run(path, tag="old", count=10)  # an earlier run's: both drop it
        first = start(tmp_path, path, "a", same=False)
        second = start(tmp_path, path, "b", same=False)
        go(first)
        if trial % 2:  # started apart: the later run must not drop the earlier one's calls
            time.sleep(0.4)
        go(second)
        finish(first), finish(second)
        answers = Counter(i.response["answer"].split("-")[0] for i in Cassette(path).interactions)
        assert answers == {"a": CALLS, "b": CALLS}, (trial, answers)
        assert store.journals(path).pending == []


def test_two_processes_recording_the_same_calls_keep_one_answer_each(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    first = start(tmp_path, path, "a", same=True)
    second = start(tmp_path, path, "b", same=True)
    go(first)
    assert first.stdout is not None and first.stdout.readline().strip() == "recorded 0"
    go(second)  # "a" began recording first, "b" is a moment behind: they race from here
    finish(first)
    told = finish(second)
    interactions = Cassette(path).interactions
    assert len(interactions) == CALLS and len({i.key for i in interactions}) == CALLS
    assert {i.response["answer"] for i in interactions} == {f"a-{n}" for n in range(CALLS)}
    assert "recorded by this run and by run" in told
    assert "the answers of the run that began recording this cassette first were kept" in told
