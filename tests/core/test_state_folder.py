"""The state folder holds what a run needs while it lives and nothing after a clean save;
the journal is written at once and synced in groups.

Cleanup is checked on real processes with a state folder of their own: a process that
records many cassettes and exits leaves no file; a pytest-like session (a holder process
whose children record) leaves none once it ends; a killed recorder's leftovers go once
the next open has recovered them and that process ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chaincassette import Cassette, journal, statedir, use_cassette

from .programs import own_run_env, record, wait_for

MANY = """
import sys
from chaincassette import use_cassette
folder, count = sys.argv[1], int(sys.argv[2])
for n in range(count):
    mode = "record" if n % 2 else "new_episodes"
    with use_cassette(f"{folder}/c{n}.yaml", mode=mode) as cassette:
        cassette.begin({"kind": "call", "function": "f", "args": {"n": n}}).answer(lambda: {"v": 1})
"""

SESSION = """
import subprocess, sys
from pathlib import Path
from chaincassette import runs, store
previous = runs.start_run()  # as the pytest plugin's controller does
subprocess.run([sys.executable, "-c", sys.argv[1], sys.argv[2], "3"], check=True)
alive = sorted(str(p.relative_to(sys.argv[3])) for p in Path(sys.argv[3]).rglob("*") if p.is_file())
print("during", len([a for a in alive if a.endswith("state.json")]))
store.finish_run(runs.end_run(previous))
"""


def files_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_a_process_that_saved_cleanly_leaves_nothing_in_the_state_folder(tmp_path: Path) -> None:
    state = tmp_path / "state"
    subprocess.run(
        [sys.executable, "-c", MANY, str(tmp_path), "40"],
        env=own_run_env(**{statedir.STATE_ENV: str(state)}),
        check=True,
        timeout=300,
    )
    assert len(list(tmp_path.glob("c*.yaml"))) == 40
    assert files_in(state) == []


def test_a_session_keeps_its_ledgers_while_it_lives_and_removes_them_at_its_end(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    done = subprocess.run(
        [sys.executable, "-c", SESSION, MANY, str(tmp_path), str(state)],
        env=own_run_env(**{statedir.STATE_ENV: str(state)}),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    # the child's run is the session's: its ledgers outlive the child, for the next worker
    assert done.stdout.split() == ["during", "3"]
    assert files_in(state) == []


def test_what_a_killed_recorder_left_goes_after_the_next_open_recovers_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = own_run_env(**{statedir.STATE_ENV: str(state)})
    child = record(tmp_path, tmp_path / "c.yaml", count=20, env={**env, "HOLD_AFTER": "5"})
    wait_for(child, "recorded 5")
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert any(name.endswith(journal.SUFFIX) for name in files_in(state))
    opener = "from chaincassette import Cassette; import sys; Cassette(sys.argv[1]).load()"
    subprocess.run(
        [sys.executable, "-W", "ignore", "-c", opener, str(tmp_path / "c.yaml")],
        env=env,
        check=True,
        timeout=120,
    )
    assert len(Cassette(tmp_path / "c.yaml").interactions) >= 6
    assert files_in(state) == []  # the journal, the ledger, the dead run's locks: all gone


def test_each_recording_is_written_at_once_and_synced_in_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(journal, "SYNC_SECONDS", 3600.0)
    path = tmp_path / "c.yaml"
    with use_cassette(path, mode="record") as cassette:
        for n in range(200):
            request = {"kind": "call", "function": "f", "args": {"n": n}}
            cassette.begin(request).answer(lambda n=n: {"v": n})
            if n in (0, 99, 199):  # in the file the moment it completes (a kill keeps it)
                (written,) = journal.live(statedir.cassette_folder(path))
                assert len(journal.read(written).entries) == n + 1
        journaled = len(synced)
    assert journaled == 200 // journal.SYNC_EVERY  # not one fsync per call
    assert len(synced) == journaled + 1  # and the cassette's own write at the save


def test_a_recording_after_a_quiet_moment_is_synced_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    monkeypatch.setattr(journal, "SYNC_SECONDS", 0.05)
    cassette = Cassette(tmp_path / "c.yaml", mode="record")
    for n in range(3):
        cassette.begin({"kind": "call", "function": "f", "args": {"n": n}}).answer(lambda: 1)
    before = len(synced)
    time.sleep(0.06)
    cassette.begin({"kind": "call", "function": "f", "args": {"n": 3}}).answer(lambda: 1)
    assert len(synced) == before + 1
    cassette.discard_unsaved()


TOUCH_THEN_LOOK = """
import sys
from pathlib import Path
from chaincassette import runs
runs.touch(Path(sys.argv[1]))  # a process's first recording of a cassette names its folder
print(runs.tag(runs.current_run()) in runs.dead_runs())
"""


def test_a_run_that_names_its_first_cassette_is_alive_from_that_moment(tmp_path: Path) -> None:
    """Another process ending meanwhile must not take the run for a dead one and clean the
    state it is about to write (its folder held no lock until its first journal line)."""
    looked = subprocess.run(
        [sys.executable, "-c", TOUCH_THEN_LOOK, str(tmp_path / "state" / "cassettes" / "c1")],
        env=own_run_env(**{statedir.STATE_ENV: str(tmp_path / "state")}),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert looked.stdout.split() == ["False"]
