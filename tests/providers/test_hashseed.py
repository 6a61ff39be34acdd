"""Tool schemas are keyed as a set: a program whose tools come from a set replays under any
``PYTHONHASHSEED`` (each run a fresh process, the client pointed at a dead port)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fakes.nowhere import DeadPort
from fakes.scripts import weather_tour
from fakes.wire import FakeServer

from .conftest import _nice

PROGRAM = Path(__file__).resolve().with_name("hashseed_program.py")
SEEDS = [11, 12, 13, 14, 15, 16, 17, 18]


def _start(mode: str, cassette: Path, url: str, seed: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONWARNINGS": "ignore"}
    env.pop("CHAINCASSETTE_MODE", None)
    return subprocess.Popen(
        [sys.executable, str(PROGRAM), mode, str(cassette), url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_nice,
    )


def _result(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    seen: dict[str, Any] = json.loads(out)
    return seen


def test_tools_from_a_set_replay_under_eight_hash_seeds(tmp_path: Path, heavy_turn: Path) -> None:
    cassette = tmp_path / "set_tools.yaml"
    with FakeServer(weather_tour) as fake:
        recorded = _result(_start("record", cassette, fake.base, 10))
        assert fake.requests == 3
    with DeadPort() as dead:
        replays = []
        for pair in zip(SEEDS[::2], SEEDS[1::2], strict=True):  # two processes at a time
            replays += [_result(p) for p in [_start("replay", cassette, dead.url, s) for s in pair]]
        assert dead.accepted == 0
    for replay in replays:
        assert replay["messages"] == recorded["messages"]
    orders = {tuple(r["order"]) for r in [recorded, *replays]}
    assert len(orders) > 1  # the seeds really did reorder the tool schemas


QUICKSTART = Path(__file__).resolve().parent / "programs" / "supervisor_quickstart.py"
#: The order a set of the quickstart's two agent names iterates in, under a seed.
ORDER = "print(list({'research_expert', 'math_expert'}))"


def _cli(args: list[str], url: str, seed: int) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONHASHSEED": str(seed),
        "PYTHONWARNINGS": "ignore",
        "OPENAI_BASE_URL": f"{url}/v1",
        "OPENAI_API_KEY": "sk-test",
    }
    env.pop("CHAINCASSETTE_MODE", None)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chaincassette",
            "run",
            *args,
            "--",
            sys.executable,
            str(QUICKSTART),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_nice,
    )


def _ok(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, (out + err)[-3000:]
    return err


def _order(seed: int) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run([sys.executable, "-c", ORDER], capture_output=True, text=True, env=env)
    return done.stdout


def test_langgraph_supervisor_quickstart_replays_under_several_hash_seeds(
    tmp_path: Path, heavy_turn: Path
) -> None:
    cassette = tmp_path / "supervisor.yaml"
    seeds = [21, 22, 23, 24]
    with FakeServer(weather_tour) as fake:
        _ok(_cli(["--record", str(cassette)], fake.base, 20))
        assert fake.requests >= 3  # supervisor, research expert (tool call and answer), supervisor
    with DeadPort() as dead:
        for pair in zip(seeds[::2], seeds[1::2], strict=True):  # two processes at a time
            for process in [_cli(["--replay", str(cassette)], dead.url, s) for s in pair]:
                _ok(process)
        assert dead.accepted == 0
    # the seeds hand the supervisor its hand-off tools in both orders
    assert len({_order(s) for s in [20, *seeds]}) == 2
