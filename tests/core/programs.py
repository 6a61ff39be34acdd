"""Programs the crash and concurrency tests start as real processes, and how they start them.

Each program records through ``use_cassette`` like a user's would, prints one line per
completed call (``recorded N``) and, where asked, ``saving`` when its save begins, so a
test can kill it at a chosen moment; ``HOLD_AFTER=N`` holds it still after call N, so a
kill there is never overtaken by a fast child reaching its save. Every one runs as a run of its own (no
``CHAINCASSETTE_RUN`` inherited from the test session) unless a test gives it one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from chaincassette import Cassette, runs, store

RECORD = """
import os, sys, time
from chaincassette import storage, use_cassette

path, mode, tag, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
stall = float(os.environ.get("STALL_IN_SAVE", "0"))
hold_after = int(os.environ.get("HOLD_AFTER", "-1"))
real_dumps = storage.dumps
def dumps(document, fmt):
    print("saving", flush=True)
    time.sleep(stall)
    return real_dumps(document, fmt)
storage.dumps = dumps
with use_cassette(path, mode=mode) as cassette:
    for n in range(count):
        request = {"kind": "call", "function": "ask", "args": {"n": n}}
        cassette.begin(request).answer(lambda n=n: {"answer": f"{tag}-{n}", "pad": "x" * 400})
        print(f"recorded {n}", flush=True)
        if n == hold_after:
            time.sleep(60)
print("saved", flush=True)
"""

PER_CALL = """
import sys
from chaincassette import use_cassette

path, tag, count, same = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "same"
print("ready", flush=True)
sys.stdin.readline()  # both start together
for n in range(count):
    with use_cassette(path, mode="record") as cassette:
        request = {"kind": "call", "function": "ask", "args": {"n": n if same else f"{tag}-{n}"}}
        cassette.begin(request).answer(lambda n=n: {"answer": f"{tag}-{n}"})
    print(f"recorded {n}", flush=True)
"""


def script(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.py"
    if not path.exists():
        path.write_text(text)
    return path


def spawn(program: Path, *args: str) -> subprocess.Popen[str]:
    """``program`` run with ``args`` as a run of its own, its stdin a pipe to hold it at a
    line it waits for, its output read by ``wait_for``."""
    return subprocess.Popen(
        [sys.executable, str(program), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=own_run_env(),
    )


def own_run_env(**extra: str) -> dict[str, str]:
    """The test's environment without its run: the child is a run of its own."""
    env = {k: v for k, v in os.environ.items() if k != runs.RUN_ENV}
    env.update(extra)
    return env


def record(
    folder: Path,
    cassette: Path,
    *,
    mode: str = "record",
    tag: str = "new",
    count: int = 30,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    """Start RECORD: ``count`` calls answered ``<tag>-<n>`` into ``cassette``."""
    program = script(folder, "record", RECORD)
    return subprocess.Popen(
        [sys.executable, str(program), str(cassette), mode, tag, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or own_run_env(),
    )


def recorded(folder: Path, cassette: Path, **options: object) -> subprocess.CompletedProcess[str]:
    """RECORD run to its end (it must succeed)."""
    child = record(folder, cassette, **options)  # type: ignore[arg-type]
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    return subprocess.CompletedProcess(child.args, 0, out, err)


def wait_for(child: subprocess.Popen[str], line: str) -> None:
    assert child.stdout is not None
    for got in child.stdout:
        if got.strip() == line:
            return
    raise AssertionError(f"the child ended before printing {line!r}")


def answers(cassette: Path, count: int) -> list[str | None]:
    """What a replay open serves for calls 0..count-1 (``None``: a miss)."""
    opened = Cassette(cassette, mode="replay")
    served: list[str | None] = []
    for n in range(count):
        request = {"kind": "call", "function": "ask", "args": {"n": n}}
        try:
            served.append(opened.begin(request).response["answer"])
        except Exception:
            served.append(None)
    return served


def finished_run(
    cassette: Path, *, tag: str = "old", count: int = 30, mode: str = "record"
) -> None:
    """Record ``count`` calls as RECORD would, in this process, as a run that then ends
    (what an earlier, finished run left): a later run's ``record`` drops all of it."""
    run = f"finished-{uuid.uuid4().hex}"
    previous = os.environ.get(runs.RUN_ENV)
    os.environ[runs.RUN_ENV] = run
    try:
        recording = Cassette(cassette, mode=mode)
        for n in range(count):
            request = {"kind": "call", "function": "ask", "args": {"n": n}}
            recording.begin(request).answer(lambda n=n: {"answer": f"{tag}-{n}", "pad": "x" * 400})
        recording.save()
    finally:
        if previous is None:
            os.environ.pop(runs.RUN_ENV, None)
        else:
            os.environ[runs.RUN_ENV] = previous
    store.finish_run(run)
