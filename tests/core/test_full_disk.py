"""Never lose silently: a full disk or a read-only folder is one clear error naming the path,
and a process that cannot keep its recordings says how many it loses, where the rest are,
and what to do, before it exits.

The real thing: a small tmpfs (or one remounted read-only) in a private mount namespace
(``unshare --mount``), holding the cassette and the state folder with its journal. Where a
mount namespace cannot be made, those tests skip; the injected one (``ENOSPC`` raised by
``os.write`` and ``mkstemp``) runs everywhere.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .programs import own_run_env

CALLS = 200

PROGRAM = """
import sys
from chaincassette import use_cassette
with use_cassette(sys.argv[1], mode="new_episodes") as cassette:
    for n in range(int(sys.argv[2])):
        request = {"kind": "call", "function": "ask", "args": {"n": n}}
        cassette.begin(request).answer(lambda n=n: {"answer": f"{n}", "pad": "x" * 800})
"""

COUNT = """
import sys
from pathlib import Path
from chaincassette import store
print("journaled", store.journals(Path(sys.argv[1])).pending_count)
"""

NAMESPACE = """
set -e
disk="$1/disk"; python="$2"; options="$3"; calls="$4"; readonly_part="$5"
mkdir -p "$disk"
mount -t tmpfs -o "$options" tmpfs "$disk"
mkdir -p "$disk/state" "$disk/cassettes"
if [ "$readonly_part" = all ]; then mount -o remount,ro "$disk"; fi
if [ "$readonly_part" = cassettes ]; then mount --bind -o ro "$disk/cassettes" "$disk/cassettes"; fi
export CHAINCASSETTE_STATE_DIR="$disk/state"
"$python" "$1/program.py" "$disk/cassettes/c.yaml" "$calls" > "$1/out" 2> "$1/err" || true
"$python" "$1/count.py" "$disk/cassettes/c.yaml"
"""


def in_namespace(tmp_path: Path, options: str, calls: int, readonly: str = "") -> tuple[str, int]:
    """Run PROGRAM on a fresh tmpfs; returns (its stderr, recordings its journal holds)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1) to make a private mount namespace")
    prefix = [unshare, "--mount"] if os.geteuid() == 0 else [unshare, "-rm"]
    probe = subprocess.run([*prefix, "mount", "-t", "tmpfs", "tmpfs", "/mnt"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.decode().strip()}")
    (tmp_path / "program.py").write_text(PROGRAM)
    (tmp_path / "count.py").write_text(COUNT)
    (tmp_path / "ns.sh").write_text(NAMESPACE)
    extra = [str(calls), readonly]
    done = subprocess.run(
        [*prefix, "sh", str(tmp_path / "ns.sh"), str(tmp_path), sys.executable, options, *extra],
        capture_output=True,
        text=True,
        env=own_run_env(),
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    journaled = int(done.stdout.split("journaled")[-1])
    return (tmp_path / "err").read_text(), journaled


def numbers(pattern: str, text: str) -> list[int]:
    return [int(n) for n in re.findall(pattern, text)]


def test_a_full_disk_says_how_many_calls_are_lost_and_where_the_rest_are(tmp_path: Path) -> None:
    err, journaled = in_namespace(tmp_path, "size=160k", CALLS)
    disk = f"{tmp_path}/disk"
    (warned,) = [line for line in err.splitlines() if "cannot write the journal" in line]
    assert "the disk is full (No space left on device" in warned and disk in warned
    assert "cannot write cassette" in err and "the disk is full" in err
    (safe,) = numbers(r"(\d+) recordings? of this run (?:is|are) safe in the journal", err)
    (memory,) = numbers(r"(\d+) recordings? of this run (?:is|are) only in memory", err)
    (lost,) = numbers(r"LOST (\d+) recorded calls? of " + re.escape(disk), err)
    assert 0 < journaled < CALLS and safe == journaled  # the journal holds what it says
    assert memory == lost == CALLS - journaled  # and nothing is lost without that line
    assert "What to do: make room on that disk" in err


def test_a_read_only_file_system_is_one_clear_error_naming_the_path(tmp_path: Path) -> None:
    err, journaled = in_namespace(tmp_path, "size=1m", 5, readonly="all")
    disk = f"{tmp_path}/disk"
    assert journaled == 0
    assert f"the file system is read-only ({disk}/" in err
    (lost,) = numbers(r"LOST (\d+) recorded calls? of " + re.escape(disk), err)
    assert lost == 5


def test_a_read_only_cassette_folder_keeps_everything_in_the_journal(tmp_path: Path) -> None:
    err, journaled = in_namespace(tmp_path, "size=1m", 5, readonly="cassettes")
    assert journaled == 5 and "LOST" not in err
    assert f"the file system is read-only ({tmp_path}/disk/cassettes)" in err
    assert "5 recordings of this run are safe in the journal" in err and "--finalize" in err


INJECTED = """
import errno, os, sys, tempfile
real_write = os.write
writes = 0
def write(fd, data):
    global writes
    writes += 1
    if writes > 40:
        raise OSError(errno.ENOSPC, "No space left on device")
    return real_write(fd, data)
def mkstemp(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device", kwargs.get("dir"))
os.write = write
tempfile.mkstemp = mkstemp
exec(open(sys.argv[3]).read())
"""


def test_an_injected_full_disk_says_the_same(tmp_path: Path) -> None:
    """Where no tmpfs can be mounted: ENOSPC raised by the journal's ``os.write`` and the
    cassette's ``mkstemp``."""
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    done = subprocess.run(
        [sys.executable, "-c", INJECTED, str(tmp_path / "c.yaml"), str(CALLS), str(program)],
        capture_output=True,
        text=True,
        env=own_run_env(),
        timeout=120,
        check=False,
    )
    err = done.stderr
    assert done.returncode != 0 and "the disk is full" in err
    (safe,) = numbers(r"(\d+) recordings? of this run (?:is|are) safe in the journal", err)
    (lost,) = numbers(r"LOST (\d+) recorded calls? of ", err)
    assert safe + lost == CALLS and 0 < lost < CALLS
