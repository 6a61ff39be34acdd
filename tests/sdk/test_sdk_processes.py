"""Done when: unmodified programs that call the SDKs themselves (a LangGraph agent whose tool
calls ``openai``, a LlamaIndex workflow whose steps call ``anthropic``, a program calling both
SDKs every way) are recorded against the fake wire server, then replayed in 3 fresh
processes under ``chaincassette run --replay`` and 3 under ``use_cassette``, each printing
exactly what the recording run printed, with every socket blocked in the program and no
connection reaching the server; a re-record writes identical keys.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.scripts import echo
from fakes.wire import FakeServer
from sdk_clients import ANTHROPIC_KEY, OPENAI_KEY

from chaincassette import Cassette

PROGRAMS = Path(__file__).parent / "programs"
LAUNCH = str(PROGRAMS / "launch.py")
CLI = [sys.executable, "-m", "chaincassette"]
CASES = {
    "langgraph": (
        "graph_tool_sdk.py",
        "Summarise Docker for me",
        ("langgraph", "langchain_openai"),
    ),
    "llamaindex": ("workflow_step_sdk.py", "My essay on caching", ("llama_index.core",)),
    "matrix": ("sdk_matrix.py", "", ()),
}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer(echo) as fake:
        yield fake


def environment(server: FakeServer, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("CHAINCASSETTE_MODE", "CASSETTE", "OFFLINE")
    }
    env |= {"OPENAI_BASE_URL": server.url, "ANTHROPIC_BASE_URL": server.base}
    env |= {"PYTHONWARNINGS": "ignore"}
    return env | extra


def run(args: list[str], env: dict[str, str], seed: int) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        args, env=env | {"PYTHONHASHSEED": str(seed)}, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.mark.parametrize("case", list(CASES))
def test_recorded_then_replayed_in_fresh_processes_offline(
    case: str, server: FakeServer, tmp_path: Path
) -> None:
    program, argument, needs = CASES[case]
    for module in needs:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"needs {module}")
    command = [sys.executable, LAUNCH, str(PROGRAMS / program), *([argument] if argument else [])]
    keys = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    cassette = tmp_path / case
    recorded = run(
        [*CLI, "run", "--record", str(cassette), "--", *command], environment(server, **keys), 0
    )
    sent = server.requests
    assert sent > 0 and "connections: 0" in recorded.stdout
    assert (
        f"recorded {len(Cassette(str(cassette) + '.yaml').interactions)} interaction"
        in recorded.stderr
    )

    before = server.connections
    offline = environment(server, OFFLINE="1")  # no keys: `run --replay` gives placeholders
    replays = [
        run([*CLI, "run", "--replay", f"{cassette}.yaml", "--", *command], offline, seed)
        for seed in (1, 2, 3)
    ]
    in_block = environment(
        server,
        OFFLINE="1",
        CASSETTE=f"{cassette}.yaml",
        CHAINCASSETTE_MODE="replay",
        OPENAI_API_KEY="sk-replay-needs-no-key",
        ANTHROPIC_API_KEY="sk-ant-replay-needs-no-key",
    )
    replays += [run(command, in_block, seed) for seed in (4, 5, 6)]
    assert [r.stdout for r in replays] == [recorded.stdout] * 6
    assert server.connections == before and server.requests == sent

    again = tmp_path / f"{case}-again"
    run([*CLI, "run", "--record", str(again), "--", *command], environment(server, **keys), 7)
    first = Cassette(f"{cassette}.yaml", mode="replay").interactions
    second = Cassette(f"{again}.yaml", mode="replay").interactions
    # the same keys (concurrent calls may finish, and so be written, in another order)
    assert sorted(i.key for i in second) == sorted(i.key for i in first)
    assert [i.response for i in second] != [i.response for i in first]  # fresh ids, same keys
