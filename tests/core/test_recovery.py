"""A dead run's journal is applied as that run meant it, or set aside and reported.

Real processes, killed with SIGKILL: a ``record`` run killed during its save is never
merged behind the old answers (a replay serves only the old file's or only the new
run's); a cassette deleted or changed after the run died never gets its calls back; a
journal is found through any path to the same file; every open and ``verify`` say in one
line what they recovered or set aside, and why.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from chaincassette import Cassette, store, use_cassette
from chaincassette.cli import main as cli
from chaincassette.store import JournalWarning

from .programs import (
    answers,
    finished_run,
    own_run_env,
    record,
    recorded,
    script,
    spawn,
    wait_for,
)

CALLS = 30
STALLED = own_run_env(STALL_IN_SAVE="60")
"""A child killed while recording never finishes its save first, however fast it records."""


def opened_lines(path: Path, mode: str = "replay") -> list[str]:
    """The warnings one open of ``path`` gives (what it recovered or set aside)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Cassette(path, mode=mode).load()
    return [str(w.message) for w in caught if issubclass(w.category, JournalWarning)]


def killed(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait()


def test_a_record_run_killed_in_its_save_replays_old_or_new_never_both(tmp_path: Path) -> None:
    rng = random.Random(25_1)
    outcomes = []
    for trial in range(20):
        path = tmp_path / f"c{trial}.yaml"
        finished_run(path, tag="old", count=CALLS)
        child = record(
            tmp_path, path, tag="new", count=CALLS, env=own_run_env(STALL_IN_SAVE="0.02")
        )
        if trial % 4 == 0:  # some die while recording, the rest somewhere in their save
            wait_for(child, f"recorded {rng.randrange(CALLS)}")
        else:
            wait_for(child, "saving")
            time.sleep(rng.uniform(0.0, 0.06))
        killed(child)
        lines = opened_lines(path)
        served = answers(path, CALLS)
        sources = {answer.split("-")[0] for answer in served if answer is not None}
        assert len(sources) <= 1, (trial, served)  # never the old and the new mixed
        if sources == {"old"}:
            assert served == [f"old-{n}" for n in range(CALLS)], trial
        else:  # the new run's, as far as it got, and nothing of the old
            assert sources == {"new"} and served[0] == "new-0", (trial, served)
        assert len(lines) <= 1 and all("replace" in line for line in lines), lines
        assert store.journals(path).pending == []
        outcomes.append(sources.pop())
    assert "new" in outcomes  # the dead run's recordings were applied, not only dropped


def test_a_recovered_record_journal_replaces_the_old_answers(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    finished_run(path, tag="old", count=CALLS)
    child = record(tmp_path, path, tag="new", count=CALLS, env=own_run_env(STALL_IN_SAVE="60"))
    wait_for(child, "saving")
    killed(child)
    (line,) = opened_lines(path)
    assert f"recovered {CALLS} recordings" in line and "mode record" in line
    assert f"they replace {CALLS} older recordings, as that record run meant" in line
    assert answers(path, CALLS) == [f"new-{n}" for n in range(CALLS)]
    assert len(Cassette(path).interactions) == CALLS  # written at once, not behind the old
    assert opened_lines(path) == []  # said once: the journal is gone


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_a_recording_holding_a_unicode_line_separator_is_recovered(
    tmp_path: Path, separator: str
) -> None:
    # JSON leaves these characters unescaped: a journal line holding one is still one line
    path = tmp_path / "c.yaml"
    tag = f"new{separator}line"
    child = record(tmp_path, path, mode="new_episodes", tag=tag, count=3, env=STALLED)
    wait_for(child, "saving")
    killed(child)
    (line,) = opened_lines(path)
    assert "recovered 3 recordings" in line
    assert answers(path, 3) == [f"{tag}-{n}" for n in range(3)]


ASK_TWICE = """
import sys
from chaincassette import use_cassette

with use_cassette(sys.argv[1], mode="new_episodes") as cassette:
    for _ in range(2):  # the file answers the first; the second is recorded, alike
        request = {"kind": "call", "function": "ask", "args": {"n": 0}}
        cassette.begin(request).answer(lambda: {"answer": "same-0", "pad": "x" * 400})
    print("recorded", flush=True)
    sys.stdin.readline()  # killed here, before the block's save
"""


def test_a_dead_runs_recording_alike_to_one_the_file_holds_is_recovered(tmp_path: Path) -> None:
    # the journal's entry equals what the file held before the run, yet the run never
    # saved it: the file is the version the journal knew, so nothing of it is in there
    path = tmp_path / "c.yaml"
    finished_run(path, tag="same", count=1, mode="new_episodes")
    child = spawn(script(tmp_path, "ask_twice", ASK_TWICE), str(path))
    wait_for(child, "recorded")
    killed(child)
    (line,) = opened_lines(path)
    assert "recovered 1 recording" in line
    replay = Cassette(path, mode="replay")
    request = {"kind": "call", "function": "ask", "args": {"n": 0}}
    assert [replay.begin(request).response["answer"] for _ in range(2)] == ["same-0"] * 2
    assert len(Cassette(path).interactions) == 2


def test_deleting_a_cassette_and_recording_again_never_brings_back_a_dead_run(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.yaml"
    finished_run(path, tag="old", count=CALLS)
    child = record(tmp_path, path, tag="dead", count=CALLS, env=STALLED)
    wait_for(child, f"recorded {CALLS - 5}")
    killed(child)
    path.unlink()  # the user starts over
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with use_cassette(path, mode="once") as cassette:
            for n in range(3):
                request = {"kind": "call", "function": "ask", "args": {"n": n}}
                cassette.begin(request).answer(lambda n=n: {"answer": f"again-{n}"})
    assert answers(path, 3) == ["again-0", "again-1", "again-2"]
    assert len(Cassette(path).interactions) == 3
    (line,) = [str(w.message) for w in caught if issubclass(w.category, JournalWarning)]
    assert "set aside" in line and "the cassette was deleted after that run stopped" in line
    assert "--drop" in line and "--finalize" in line
    (aside,) = store.journals(path).aside
    assert len(aside.entries) >= CALLS - 4 and aside.aside and aside.aside["code"] == "deleted"


def test_a_cassette_restored_from_git_after_the_run_died_keeps_the_restored_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.yaml"
    finished_run(path, tag="committed", count=5)
    committed = path.read_bytes()
    finished_run(path, tag="old", count=CALLS, mode="new_episodes")
    child = record(tmp_path, path, tag="dead", count=CALLS + 10, mode="new_episodes", env=STALLED)
    wait_for(child, f"recorded {CALLS + 3}")
    killed(child)
    restored = tmp_path / "restored.yaml"  # git writes a new file in its place
    restored.write_bytes(committed)
    os.replace(restored, path)
    (line,) = opened_lines(path)
    assert "the cassette changed after that run stopped" in line
    assert path.read_bytes() == committed


def test_a_journal_is_found_through_a_symlinked_folder(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real, target_is_directory=True)
    child = record(
        tmp_path, alias / "c.yaml", tag="new", count=CALLS, mode="new_episodes", env=STALLED
    )
    wait_for(child, "recorded 10")
    killed(child)
    (line,) = opened_lines(real / "c.yaml")
    assert "recovered" in line
    assert answers(real / "c.yaml", 11) == [f"new-{n}" for n in range(11)]
    os.chdir(real)  # and through a relative path (pytest restores the folder)
    assert store.journals(Path("c.yaml")).pending == []


BIND_MOUNT = """
set -e
mkdir -p "$1/real" "$1/mnt"
mount --bind "$1/real" "$1/mnt"
"$2" "$3" "$1/mnt/c.yaml" new_episodes new 30 > "$1/out" &
child=$!
until grep -q "recorded 10" "$1/out" 2>/dev/null; do sleep 0.01; done
kill -9 $child
wait $child || true
"$2" -c "from chaincassette import store; print(store.journals(__import__('pathlib').Path('$1/real/c.yaml')).pending_count)"
"""


def test_a_journal_is_found_through_a_bind_mount(tmp_path: Path) -> None:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1) to make a private mount namespace")
    from .programs import RECORD, script

    program = script(tmp_path, "record", RECORD)
    shell = tmp_path / "bind.sh"
    shell.write_text(BIND_MOUNT)
    prefix = [unshare, "--mount"] if os.geteuid() == 0 else [unshare, "-rm"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a mount namespace here: {probe.stderr.decode().strip()}")
    done = subprocess.run(
        [*prefix, "sh", str(shell), str(tmp_path), sys.executable, str(program)],
        capture_output=True,
        text=True,
        env=own_run_env(STALL_IN_SAVE="60"),  # killed before its save ends, however fast
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) >= 11  # the journal written through the mount


def test_verify_and_the_next_open_say_what_was_recovered_or_set_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    finished_run(path, tag="old", count=5)
    child = record(tmp_path, path, tag="new", count=5, env=own_run_env(STALL_IN_SAVE="60"))
    wait_for(child, "saving")
    killed(child)
    assert cli(["verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    (problem,) = [line for line in out.splitlines() if "unsaved:" in line]
    assert "5 recordings" in problem and "(record)" in problem and "--finalize" in problem
    # a record run opening it now replaces that older run: set aside, one line, and why
    (line,) = opened_lines(path, mode="record")
    assert "set aside 5 recordings" in line and "this record run replaces" in line
    assert cli(["verify", str(tmp_path)]) == 0  # the file is what replays; a warning remains
    (warning,) = [line for line in capsys.readouterr().out.splitlines() if "set aside" in line]
    assert "this record run replaces" in warning and "--drop" in warning
    assert cli(["journal", str(path), "--drop"]) == 0
    assert "dropped 5 recordings" in capsys.readouterr().out
    assert store.journals(path).aside == []


def test_finalize_writes_set_aside_recordings_after_what_the_cassette_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    finished_run(path, tag="old", count=3)
    child = record(tmp_path, path, tag="dead", count=CALLS, env=own_run_env(HOLD_AFTER="1"))
    wait_for(child, "recorded 1")
    killed(child)
    path.unlink()
    recorded(tmp_path, path, tag="again", count=1)
    assert len(store.journals(path).aside) == 1
    assert cli(["journal", str(path)]) == 1
    assert "the cassette was deleted" in capsys.readouterr().out
    assert cli(["journal", str(path), "--finalize"]) == 0
    assert "wrote" in capsys.readouterr().out
    served = [i.response["answer"] for i in Cassette(path).interactions]
    assert served[0] == "again-0" and served[1:3] == ["dead-0", "dead-1"]


def test_a_journal_written_before_the_cassettes_folder_existed_is_found_by_its_real_path(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real, target_is_directory=True)
    cassette = alias / "new" / "folder" / "c.yaml"  # "once" on a new cassette: no folder yet
    held = own_run_env(HOLD_AFTER="10")
    child = record(tmp_path, cassette, tag="new", count=CALLS, mode="once", env=held)
    wait_for(child, "recorded 10")
    killed(child)
    assert not (real / "new").exists()  # the journal is in the state folder only
    assert store.journals(real / "new" / "folder" / "c.yaml").pending_count == 11
    (real / "new" / "folder").mkdir(parents=True)  # and once the folder exists
    (line,) = opened_lines(real / "new" / "folder" / "c.yaml")
    assert "recovered" in line
    assert answers(cassette, 11) == [f"new-{n}" for n in range(11)]
    assert store.journals(cassette).pending == []


STRICT = """
import sys
from chaincassette import modes, use_cassette
from chaincassette.errors import CassetteWriteError

modes.set_policy(modes.ModePolicy(refuse_writes="--cassette-strict"))  # to the end
try:
    with use_cassette(sys.argv[1], mode=sys.argv[2]) as cassette:
        cassette.begin({"kind": "call", "function": "ask", "args": {"n": 0}}).answer(
            lambda: {"answer": "strict"}
        )
except CassetteWriteError as exc:
    print("refused:", exc)
"""


@pytest.mark.parametrize("mode", ["record", "new_episodes"])
def test_strict_mode_makes_no_folder_and_leaves_no_journal_to_apply(
    tmp_path: Path, mode: str
) -> None:
    cassette = tmp_path / "cassettes" / "c.yaml"
    done = subprocess.run(
        [sys.executable, "-c", STRICT, str(cassette), mode],
        capture_output=True,
        text=True,
        env=own_run_env(),
        timeout=60,
        check=True,
    )
    assert "refused:" in done.stdout and "LOST" not in done.stderr
    assert "1 recorded call of" in done.stderr and "not kept: writing cassettes is refused" in (
        done.stderr
    )  # said at exit, plainly: nothing lost by accident
    assert not (tmp_path / "cassettes").exists()
    assert store.journals(cassette).pending == [] and store.journals(cassette).aside == []


def test_a_strict_open_replays_the_file_as_it_is_and_leaves_a_dead_runs_journal(
    tmp_path: Path,
) -> None:
    from chaincassette import modes

    path = tmp_path / "c.yaml"
    finished_run(path, tag="old", count=5)
    child = record(tmp_path, path, tag="new", count=5, env=own_run_env(STALL_IN_SAVE="60"))
    wait_for(child, "saving")
    killed(child)
    before = path.read_bytes()
    with modes.policy(refuse_writes="--cassette-strict"):
        (line,) = opened_lines(path)
        assert "5 recordings" in line and "not applied" in line and "--cassette-strict" in line
        with pytest.warns(JournalWarning, match="not applied"):  # every open says so
            assert answers(path, 5) == [f"old-{n}" for n in range(5)]
    assert path.read_bytes() == before and store.journals(path).pending_count == 5
    (line,) = opened_lines(path)  # the next open that may write applies it
    assert "recovered 5 recordings" in line
    assert answers(path, 5) == [f"new-{n}" for n in range(5)]
