"""A dead process's journal is applied as its own save would apply it to the file as it
is now, even where another process saved an alike recording (same key, same answer)
meanwhile: what its save wrote is never applied twice, and what it did not write is
never taken for "already there" because the file holds a copy someone else saved.

Real processes, killed with SIGKILL before their save (or after it, before they removed
their journal); a third process saves the file in between, so it is not the version
the dead ones read.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from chaincassette import Cassette, runs, store

from .programs import finished_run, own_run_env, script, wait_for
from .test_recovery import killed, opened_lines

ASK = """
import sys, time
from chaincassette import ledger, store, use_cassette

path, n, answer, times, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
def stalled(*args):
    print("saved", flush=True)
    time.sleep(60)
if hold == "in-discard":  # killed after its save, before it removes its journal
    store.Store.saved_all = stalled
if hold == "in-ledger":  # killed after writing the file, before the ledger learns of it
    ledger.Ledger.store = stalled
with use_cassette(path, mode="new_episodes") as cassette:
    for _ in range(times):  # asked again: the file answers what it holds, the rest is recorded
        request = {"kind": "call", "function": "ask", "args": {"n": n}}
        cassette.begin(request).answer(lambda: {"answer": answer, "pad": "x" * 400})
    print("recorded", flush=True)
    if hold in ("before-save", "between"):
        sys.stdin.readline()  # killed here, before the block's save
print("saved", flush=True)
if hold in ("after-save", "between"):
    sys.stdin.readline()  # alive (its run recording) until the test lets it go
"""


def asking(
    folder: Path,
    cassette: Path,
    n: int,
    answer: str,
    *,
    hold: str = "no",
    times: int = 1,
    run: str | None = None,
) -> subprocess.Popen[str]:
    """ASK: ``times`` calls of request ``n`` answered ``answer``, in run ``run`` (else its own)."""
    env = own_run_env(**({runs.RUN_ENV: run} if run is not None else {}))
    program = script(folder, "ask", ASK)
    return subprocess.Popen(
        [sys.executable, str(program), str(cassette), str(n), answer, str(times), hold],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def saves(
    folder: Path, cassette: Path, n: int, answer: str, *, times: int = 1, run: str | None = None
) -> None:
    """A process that asks request ``n`` ``times`` times and saves what it recorded."""
    child = asking(folder, cassette, n, answer, times=times, run=run)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 0, err


def served(cassette: Path, n: int, times: int) -> list[str | None]:
    """What a replay of a program asking request ``n`` ``times`` times gets (``None``: miss)."""
    replay = Cassette(cassette, mode="replay")
    got: list[str | None] = []
    for _ in range(times):
        try:
            call = replay.begin({"kind": "call", "function": "ask", "args": {"n": n}})
            got.append(call.response["answer"])
        except Exception:
            got.append(None)
    return got


def copies(cassette: Path, answer: str) -> int:
    return sum(1 for i in Cassette(cassette).interactions if i.response["answer"] == answer)


def test_two_dead_processes_of_one_run_keep_both_alike_recordings(tmp_path: Path) -> None:
    # one program in two processes asked the same thing once each: two occurrences of one
    # key, as their two saves would have written them (a replay in one process asks twice)
    path = tmp_path / "c.yaml"
    finished_run(path, tag="old", count=1, mode="new_episodes")
    run = f"shared-{uuid.uuid4().hex}"
    first = asking(tmp_path, path, 5, "same-5", hold="before-save", run=run)
    second = asking(tmp_path, path, 5, "same-5", hold="before-save", run=run)
    wait_for(first, "recorded")
    wait_for(second, "recorded")
    saves(tmp_path, path, 6, "other-6")  # a third process: the file is not the one they read
    killed(first)
    killed(second)
    lines = opened_lines(path)
    assert [line.count("recovered 1 recording") for line in lines] == [1, 1], lines
    assert served(path, 5, 2) == ["same-5", "same-5"]
    assert copies(path, "same-5") == 2 and copies(path, "other-6") == 1
    assert store.journals(path).pending == []


def test_a_dead_process_keeps_its_recording_alike_to_one_its_run_saved_meanwhile(
    tmp_path: Path,
) -> None:
    # another process of the same run saved the same answer first: two occurrences, not one
    path = tmp_path / "c.yaml"
    run = f"shared-{uuid.uuid4().hex}"
    dead = asking(tmp_path, path, 5, "same-5", hold="before-save", run=run)
    wait_for(dead, "recorded")
    saves(tmp_path, path, 5, "same-5", run=run)
    killed(dead)
    (line,) = opened_lines(path)
    assert "recovered 1 recording" in line
    assert served(path, 5, 2) == ["same-5", "same-5"]
    assert copies(path, "same-5") == 2


@pytest.mark.parametrize("other", ["same-5", "other-5"])
def test_a_dead_run_and_a_live_run_that_recorded_one_key_keep_one_runs_answers(
    tmp_path: Path, other: str
) -> None:
    # two runs at once: the answers of the one that began recording first stay, as a save
    # of the dead run would have kept them; an alike answer is neither lost nor doubled
    path = tmp_path / "c.yaml"
    finished_run(path, tag="old", count=1, mode="new_episodes")
    dead = asking(tmp_path, path, 5, "same-5", hold="before-save")
    wait_for(dead, "recorded")  # the dead run began recording first
    live = asking(tmp_path, path, 5, other, hold="after-save")
    try:
        wait_for(live, "saved")
        killed(dead)
        lines = opened_lines(path)
        if other == "same-5":  # the live run's alike answer stands for the dead one's
            assert lines == []
        else:
            (line,) = lines
            assert "recovered 1 recording" in line
            assert "keep the answers of the run that began recording first" in line
        assert served(path, 5, 2) == ["same-5", None]
        assert copies(path, "same-5") == 1 and copies(path, "other-5") == 0
    finally:
        live.communicate("\n", timeout=60)


def test_a_dead_run_that_began_after_a_live_run_of_one_key_says_its_answer_is_not_applied(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.yaml"
    live = asking(tmp_path, path, 5, "live-5", hold="between")
    try:
        wait_for(live, "recorded")  # the live run began recording first
        dead = asking(tmp_path, path, 5, "dead-5", hold="before-save")
        wait_for(dead, "recorded")
        assert live.stdin is not None
        live.stdin.write("\n")
        live.stdin.flush()
        wait_for(live, "saved")
        killed(dead)
        (line,) = opened_lines(path)
        assert "1 recording that a stopped process" in line and "not applied" in line
        assert "keep the answers of the run that began recording first" in line
        assert served(path, 5, 2) == ["live-5", None]
        assert store.journals(path).pending == []
    finally:
        live.communicate("\n", timeout=60)


def test_a_dead_runs_second_alike_call_is_recovered_after_another_process_saved(
    tmp_path: Path,
) -> None:
    # the file held the answer; the run asked twice and recorded the second alike; another
    # run's save meanwhile makes the file a version the journal never knew
    path = tmp_path / "c.yaml"
    finished_run(path, tag="same", count=1, mode="new_episodes")  # request 0 -> "same-0"
    dead = asking(tmp_path, path, 0, "same-0", hold="before-save", times=2)
    wait_for(dead, "recorded")
    saves(tmp_path, path, 6, "other-6")
    killed(dead)
    (line,) = opened_lines(path)
    assert "recovered 1 recording" in line
    assert served(path, 0, 2) == ["same-0", "same-0"]
    assert copies(path, "same-0") == 2


def test_a_journal_its_own_save_wrote_is_not_applied_again(tmp_path: Path) -> None:
    # killed after its save, before it removed its journal; others saved since: the ledger
    # says that save wrote it, so neither of its alike recordings is added a second time
    path = tmp_path / "c.yaml"
    run = f"shared-{uuid.uuid4().hex}"
    dead = asking(tmp_path, path, 5, "same-5", hold="in-discard", times=2, run=run)
    wait_for(dead, "saved")
    saves(tmp_path, path, 5, "same-5", times=3, run=run)  # its run again: a third occurrence
    saves(tmp_path, path, 6, "other-6")
    killed(dead)
    assert store.journals(path).pending_count == 2
    assert opened_lines(path) == []
    assert copies(path, "same-5") == 3 and copies(path, "other-6") == 1
    assert store.journals(path).pending == []


def test_a_later_run_adds_occurrences_of_what_a_recovered_run_recorded(tmp_path: Path) -> None:
    # the recovered run is over: a later run that asks its key once more records it, as
    # after a run that ended, never as a conflict with two runs recording at once
    path = tmp_path / "c.yaml"
    dead = asking(tmp_path, path, 5, "dead-5", hold="before-save")
    wait_for(dead, "recorded")
    killed(dead)
    (line,) = opened_lines(path)
    assert "recovered 1 recording" in line
    saves(tmp_path, path, 5, "later-5", times=2)
    assert served(path, 5, 3) == ["dead-5", "later-5", None]


def test_a_journal_its_save_wrote_before_the_ledger_knew_is_not_applied_again(
    tmp_path: Path,
) -> None:
    # killed between writing the file and the ledger: no save the ledger knows leads to
    # this version of the file, which holds every entry of the journal: it is that save's
    path = tmp_path / "c.yaml"
    finished_run(path, tag="old", count=1, mode="new_episodes")
    dead = asking(tmp_path, path, 5, "same-5", hold="in-ledger", times=2)
    wait_for(dead, "saved")
    killed(dead)
    assert store.journals(path).pending_count == 2
    assert opened_lines(path) == []
    assert copies(path, "same-5") == 2 and store.journals(path).pending == []
