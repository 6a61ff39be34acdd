"""Every example replays offline from its committed cassette: same output twice, no network.

Each example runs as a subprocess (twice, with different hash seeds) through
``offline.py``, which refuses every connection and counts the attempts. The cassettes
were recorded against the local Gemma server (``--record``); these tests never need it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
OFFLINE = Path(__file__).resolve().parent / "offline.py"
#: Lines that report wall-clock time: the only part of an example's output that may vary.
TIMING = re.compile(r"^time: .*$", re.MULTILINE)


def run_offline(script: Path, seed: str) -> tuple[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    env.pop("CHAINCASSETTE_MODE", None)
    proc = subprocess.run(
        [sys.executable, str(OFFLINE), str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,  # a hang guard: loaded CI machines are slow
        cwd=ROOT.parent,  # not the repo root: the examples must find their cassettes themselves
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "connection attempts: 0" in proc.stderr, proc.stderr[-4000:]
    return proc.stdout, proc.stderr


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # demo.py replays examples/supervisor/ (make demo): answer, calls, zero live, time.
        (
            "demo.py",
            [
                r"^route: supervisor -> (\w+_expert -> )+answer$",
                r"^answer: ",
                r"^model calls replayed: [1-9]\d*$",
                r"^live model calls: 0$",
            ],
        ),
        (
            "llamaindex_workflow/workflow.py",
            [
                r"^  handoff\(\{'to_agent': 'weather_agent'",
                r"^  get_weather\(",
                r"^answered by: weather_agent$",
                r"^model calls replayed: 3$",
                r"^live model calls: 0$",
            ],
        ),
        (
            "recorded_function/ask.py",
            [r"-> .* \(chatcmpl-", r"^calls replayed: 2$", r"^live calls: 0$"],
        ),
    ],
)
def test_example_replays_offline_identically(script: str, expected: list[str]) -> None:
    first, _ = run_offline(EXAMPLES / script, seed="1")
    second, _ = run_offline(EXAMPLES / script, seed="2")
    assert TIMING.sub("", first) == TIMING.sub("", second)
    for pattern in expected:
        assert re.search(pattern, first, re.MULTILINE), f"{pattern!r} not in:\n{first}"
    assert re.search(r"^time: \d+\.\d+ s", first, re.MULTILINE), first


V1_CASSETTES = Path(__file__).resolve().parent / "v1_cassettes"


@pytest.mark.parametrize(
    "script", ["demo.py", "llamaindex_workflow/workflow.py", "recorded_function/ask.py"]
)
def test_version_1_cassettes_still_replay_the_same(script: str, tmp_path: Path) -> None:
    """The examples' cassettes as first committed (format version 1, every request in full)
    replay to exactly the output of the upgraded (version 2) ones."""
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    for old in V1_CASSETTES.glob("*.yaml"):
        target = copy / old.stem / "cassette.yaml"
        assert target.read_text().startswith("version: 2\n"), target  # the examples are upgraded
        shutil.copyfile(old, target)
        assert target.read_text().startswith("version: 1\n")
    from_v1, _ = run_offline(copy / script, seed="3")
    from_v2, _ = run_offline(EXAMPLES / script, seed="3")
    assert TIMING.sub("", from_v1) == TIMING.sub("", from_v2)
