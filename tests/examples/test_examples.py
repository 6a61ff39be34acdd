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

from chaincassette.keyrules import KEY_RULES_VERSION

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
                r"^route: supervisor -> weather_expert -> currency_expert -> answer$",
                r"^  The weather in Paris is sunny, 21 C\.$",
                r"^  200 US dollars are 184\.00 euros\.$",
                # the right answer to the question, in the model's words (recorded, not edited)
                r"^answer: '.*sunny, 21 C.*184\.00 euros.*'$",
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
#: Programs changed since their v1 cassette was recorded, kept as they were then
#: (``supervisor.py``: the demo before it was re-recorded with a one-way currency tool).
V1_PROGRAMS = {"supervisor": V1_CASSETTES / "supervisor.py"}


def upgrade(tree: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "chaincassette", "upgrade", str(tree)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "script", ["demo.py", "llamaindex_workflow/workflow.py", "recorded_function/ask.py"]
)
def test_version_1_cassettes_still_replay_the_same(script: str, tmp_path: Path) -> None:
    """The examples' cassettes as first committed (format version 1, every request in full)
    replay, with the programs they were recorded with, to exactly the output of the same
    cassettes upgraded to version 2."""
    v1, v2 = tmp_path / "v1" / "examples", tmp_path / "v2" / "examples"
    shutil.copytree(EXAMPLES, v1, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    for old in V1_CASSETTES.glob("*.yaml"):
        target = v1 / old.stem / "cassette.yaml"
        assert target.read_text().startswith("version: 2\n"), target  # the examples are upgraded
        shutil.copyfile(old, target)
        assert target.read_text().startswith("version: 1\n")
        if old.stem in V1_PROGRAMS:
            shutil.copyfile(V1_PROGRAMS[old.stem], v1 / old.stem / f"{old.stem}.py")
    shutil.copytree(v1, v2)
    upgrade(v2)
    for old in V1_CASSETTES.glob("*.yaml"):
        upgraded = (v2 / old.stem / "cassette.yaml").read_text()
        assert upgraded.startswith(f"version: 2\nkey_rules: {KEY_RULES_VERSION}\n")
    from_v1, _ = run_offline(v1 / script, seed="3")
    from_v2, _ = run_offline(v2 / script, seed="3")
    assert TIMING.sub("", from_v1) == TIMING.sub("", from_v2)
    assert "model calls replayed: 0" not in from_v1


HISTORY = Path(__file__).resolve().parent / "history"
#: Every cassette the git history of examples/ holds (``git log --all -- '*.yaml'``), named
#: ``<commit>-<example>.yaml``, with the program it was recorded with when that is not
#: today's: the supervisor was re-recorded with another currency tool at 60821a9. Those of
#: 79d96a0 and f26cd67 are format 1 files written before chaincassette ended its files with
#: '...'; those of 07a198b are ``v1_cassettes/`` (the test above); the rest are the
#: committed examples. All of them were keyed by key rules 1 (before rules had versions).
HISTORY_PROGRAMS = {
    "79d96a0-supervisor": V1_CASSETTES / "supervisor.py",
    "f26cd67-supervisor": V1_CASSETTES / "supervisor.py",
    "c78c9a7-supervisor": V1_CASSETTES / "supervisor.py",
}
SCRIPTS = {
    "supervisor": "demo.py",
    "llamaindex_workflow": "llamaindex_workflow/workflow.py",
    "recorded_function": "recorded_function/ask.py",
}
REPLAYED = re.compile(r"^(?:model )?calls replayed: [1-9]\d*$", re.MULTILINE)
NOTHING_LIVE = re.compile(r"^live (?:model )?calls: 0$", re.MULTILINE)


@pytest.mark.parametrize("fixture", sorted(HISTORY.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_cassette_of_the_examples_history_replays(fixture: Path, tmp_path: Path) -> None:
    """Each cassette the repository ever committed for an example replays offline, as it was
    committed (older format, older key rules, no end line) and after ``chaincassette
    upgrade`` (current format and key rules), to the same output, with the program it was
    recorded with."""
    example = fixture.stem.split("-", 1)[1]
    as_committed, upgraded = tmp_path / "old" / "examples", tmp_path / "new" / "examples"
    shutil.copytree(EXAMPLES, as_committed, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    shutil.copyfile(fixture, as_committed / example / "cassette.yaml")
    if fixture.stem in HISTORY_PROGRAMS:
        shutil.copyfile(HISTORY_PROGRAMS[fixture.stem], as_committed / example / f"{example}.py")
    shutil.copytree(as_committed, upgraded)
    upgrade(upgraded / example / "cassette.yaml")
    text = (upgraded / example / "cassette.yaml").read_text()
    assert text.startswith(f"version: 2\nkey_rules: {KEY_RULES_VERSION}\n")
    assert text.endswith("\n...\n")
    assert "key_rules: 1" not in text  # nothing in the examples needed the older rules
    old, _ = run_offline(as_committed / SCRIPTS[example], seed="4")
    new, _ = run_offline(upgraded / SCRIPTS[example], seed="5")
    assert TIMING.sub("", old) == TIMING.sub("", new)
    assert REPLAYED.search(old) and NOTHING_LIVE.search(old), old


def test_verify_passes_the_examples_history_and_blames_no_hand_edit() -> None:
    """Issue 27: ``verify`` called cassettes of older key rules edited by hand."""
    done = subprocess.run(
        [sys.executable, "-m", "chaincassette", "verify", str(HISTORY)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout
    assert "by hand" not in done.stdout and "edited" not in done.stdout
    fixtures = len(list(HISTORY.glob("*.yaml")))
    assert done.stdout.count("keyed by older key rules") == fixtures
