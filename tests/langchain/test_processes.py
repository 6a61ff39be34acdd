"""Record each program once, replay it in three fresh processes, re-record it from scratch.

Programs (see ``lc_programs.py``): a ReAct agent with two tools, a LangGraph supervisor
with two sub-agents that hand off and call tools in parallel, structured output, a
prompt | model | parser chain, a completion LLM, every streaming form, 10 concurrent
``ainvoke`` calls, and ``set_llm_cache(CassetteCache(...))`` with no ``use_cassette``.
The processes run two at a time (the CI machine has two cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from chaincassette import storage

SCRIPT = Path(__file__).with_name("lc_programs.py")
PROGRAMS = (
    "react",
    "supervisor",
    "structured",
    "chain",
    "completion",
    "streaming",
    "gather",
    "global_cache",
)


def start(directory: Path, mode: str, seed: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONWARNINGS": "ignore"}
    env.pop("CHAINCASSETTE_MODE", None)
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(directory), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    first = tmp_path_factory.mktemp("recorded")
    again = tmp_path_factory.mktemp("rerecorded")
    recording = start(first, "record", 0)
    rerecording = start(again, "record", 99)
    recorded, rerecorded = finish(recording), finish(rerecording)
    replays = [start(first, "replay", seed) for seed in (1, 2)]
    results = [finish(p) for p in replays]
    results.append(finish(start(first, "replay", 3)))
    return {"dir": first, "recorded": recorded, "rerecorded": rerecorded, "replays": results}


def test_recording_calls_the_provider(runs: dict[str, Any]) -> None:
    for name in PROGRAMS:
        report = runs["recorded"][name]
        assert report["calls"] > 0, name
        assert report["stats"]["recorded"] == report["stats"]["interactions"] > 0, name


@pytest.mark.parametrize("program", PROGRAMS)
def test_replay_in_fresh_processes_is_identical(runs: dict[str, Any], program: str) -> None:
    recorded = runs["recorded"][program]
    for replay in runs["replays"]:
        report = replay[program]
        assert report["calls"] == 0
        assert report["result"] == recorded["result"]
        stats = report["stats"]
        assert stats["missed"] == stats["recorded"] == stats["unused"] == 0
        assert stats["replayed"] == stats["interactions"] == recorded["stats"]["interactions"]
        assert report["divergence"] is None


@pytest.mark.parametrize("program", PROGRAMS)
def test_rerecording_from_scratch_yields_the_same_keys(runs: dict[str, Any], program: str) -> None:
    assert runs["rerecorded"][program]["keys"] == runs["recorded"][program]["keys"]
    # the answers themselves are new (fresh random IDs and references), the keys are not
    if program not in ("structured",):
        assert runs["rerecorded"][program]["result"] != runs["recorded"][program]["result"]


def test_supervisor_interactions_are_labelled_with_agent_and_node(runs: dict[str, Any]) -> None:
    document = yaml.safe_load((runs["dir"] / "supervisor.yaml").read_text())
    labels = [(i["meta"].get("agent"), i["meta"].get("node")) for i in document["interactions"]]
    assert sorted(set(labels)) == [
        ("mathematician", "agent"),
        ("researcher", "agent"),
        ("supervisor", "agent"),
    ]
    full = storage.read(runs["dir"] / "supervisor.yaml", "yaml")  # every request in full
    assert full is not None
    calls = [i["request"] for i in full.interactions if i["meta"]["agent"] == "researcher"]
    parallel = [c for c in calls if c["messages"][-1]["role"] == "tool"]
    assert parallel and [m["role"] for m in parallel[-1]["messages"][-3:]] == [
        "assistant",
        "tool",
        "tool",
    ]


def test_trace_is_saved_with_model_keys_and_tools(runs: dict[str, Any]) -> None:
    document = yaml.safe_load((runs["dir"] / "supervisor.yaml").read_text())
    trace = document["trace"]
    keys = {i["key"][:16] for i in document["interactions"]}
    llm_nodes = [n for n in trace if n["type"] == "llm"]
    assert {n["key"] for n in llm_nodes} == keys
    tools = {
        (n["name"], json.dumps(n.get("inputs"), sort_keys=True))
        for n in trace
        if n["type"] == "tool"
    }
    assert ("add", '{"a": 2, "b": 3}') in tools
    assert {n.get("agent") for n in llm_nodes} == {"supervisor", "researcher", "mathematician"}


def test_streaming_replays_chunks_and_token_events(runs: dict[str, Any]) -> None:
    recorded = runs["recorded"]["streaming"]["result"]
    assert len(recorded["stream"]) > 3
    tokens, ends = recorded["stream_tokens"]
    assert len(tokens) >= len(recorded["stream"]) and ends == 1
    assert any(c["tool_call_chunks"] for c in recorded["stream"])
    assert "on_chat_model_start" in recorded["astream_events"]
    assert [kind for kind, _, _ in recorded["graph_messages"]].count("AIMessageChunk") > 3
    for replay in runs["replays"]:
        assert replay["streaming"]["result"] == recorded
