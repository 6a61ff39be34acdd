"""Every scenario recorded once, then replayed in three fresh processes (and once with llm=None).

Replays must give identical final outputs, identical streamed workflow events (``raw``
included), identical LLM instrumentation event counts, no trace divergence, and make zero
provider calls. ReActAgent mints its own uuid4 tool IDs at parse time (never sent to the
model), so UUIDs are masked before comparing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).with_name("li_scenarios.py")
SCENARIOS = [
    "function_agent_stream",
    "function_agent",
    "react_agent",
    "multi_agent",
    "output_cls_agent",
    "structured",
    "query_engine",
    "basics",
]
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

# LlamaIndex workflows call inspect.getmembers on pydantic agents (their warnings, not ours).
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _start(directory: Path, mode: str, seed: int, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "IS_TESTING": "1"}
    env.pop("CHAINCASSETTE_MODE", None)
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(directory), mode, *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=600)  # a hang guard: loaded CI machines are slow
    assert process.returncode == 0, err[-3000:]
    result: dict[str, Any] = json.loads(out)
    return result


def _comparable(result: dict[str, Any]) -> Any:
    kept = {k: result[k] for k in ("output", "events", "llm_events", "trace_nodes")}
    return json.loads(UUID.sub("<uuid>", json.dumps(kept, sort_keys=True)))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = tmp_path_factory.mktemp("li_cassettes")
    recorded = _finish(_start(directory, "record", 0))
    files = {p.name: p.read_bytes() for p in directory.glob("*.yaml")}
    replays = [_start(directory, "replay", seed) for seed in (1, 2, 3)]
    replays.append(_start(directory, "replay", 4, "--no-llm"))
    results = [_finish(p) for p in replays]
    return {
        "recorded": recorded,
        "replays": results[:3],
        "no_llm": results[3],
        "files_before": files,
        "files_after": {p.name: p.read_bytes() for p in directory.glob("*.yaml")},
    }


@pytest.mark.parametrize("name", SCENARIOS)
def test_replays_in_fresh_processes_are_identical(runs: dict[str, Any], name: str) -> None:
    recorded = runs["recorded"][name]
    assert recorded["provider_calls"] > 0 and recorded["stats"]["replayed"] == 0
    for replay in runs["replays"]:
        result = replay[name]
        assert result["provider_calls"] == 0
        assert result["stats"] == {"replayed": recorded["stats"]["recorded"], "recorded": 0}
        assert result["trace_divergence"] is None
        assert _comparable(result) == _comparable(recorded)


@pytest.mark.parametrize("name", SCENARIOS)
def test_llm_none_replays_from_the_cassette_alone(runs: dict[str, Any], name: str) -> None:
    result = runs["no_llm"][name]
    assert result["provider_calls"] == 0
    assert result["trace_divergence"] is None
    assert _comparable(result) == _comparable(runs["recorded"][name])


def test_llm_events_fire_once_per_call_when_recording(runs: dict[str, Any]) -> None:
    for name in ("function_agent", "function_agent_stream", "multi_agent", "react_agent"):
        recorded = runs["recorded"][name]
        assert recorded["llm_events"]["LLMChatStartEvent"] == recorded["provider_calls"]
        assert recorded["llm_events"]["LLMChatEndEvent"] == recorded["provider_calls"]


def test_replay_writes_nothing(runs: dict[str, Any]) -> None:
    assert runs["files_after"] == runs["files_before"]
    assert sorted(runs["files_before"]) == sorted(f"{n}.yaml" for n in SCENARIOS)


def test_the_trace_is_saved_with_keys_and_tool_io(runs: dict[str, Any], tmp_path: Path) -> None:
    import yaml

    document = yaml.safe_load(runs["files_before"]["multi_agent.yaml"])
    trace = document["trace"]
    kinds = [n["type"] for n in trace]
    assert kinds.count("llm") == 3 and "agent" in kinds and "chain" in kinds
    keys = {i["key"][:16] for i in document["interactions"]}
    assert {n["key"] for n in trace if n["type"] == "llm"} == keys
    tools = {n["name"]: n for n in trace if n["type"] == "tool"}
    assert tools["add"]["inputs"] == {"args": [], "kwargs": {"a": 2, "b": 3}}
    assert tools["add"]["outputs"] == "5"
    assert {n["agent"] for n in trace if n["type"] == "agent"} == {"router", "calc"}
