"""The live tier: record real agents against a real LLM over HTTP, replay them with no server.

Run with ``make live`` (or ``pytest -m live tests/live``). One module-scoped fixture
starts Gemma 3 270M under ``llama_cpp.server`` (plus the null-content proxy, see
``null_content_proxy.py``), records every program of ``live_programs.py`` in a fresh
process at temperature 0.9, and stops the server. The tests then replay the cassettes
in another fresh process (another hash seed) whose base URL points at the now closed
port and whose sockets refuse to connect, and compare.

The model's answers are often empty or echo the prompt: the tests assert shapes and
record == replay, never content.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.live

HERE = Path(__file__).resolve().parent
PROGRAMS = ("langgraph_invoke", "langgraph_stream", "llamaindex_agent", "llamaindex_agent_stream")
#: Model calls per program: the forced tool call, then the answer.
CALLS_PER_PROGRAM = 2


def _run(mode: str, cassettes: Path, base_url: str, seed: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    env.pop("CHAINCASSETTE_MODE", None)
    proc = subprocess.run(
        [sys.executable, str(HERE / "live_programs.py"), mode, str(cassettes), base_url],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, f"{mode} failed:\n{proc.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    sys.path.insert(0, str(HERE))
    from gemma_server import running_server
    from null_content_proxy import proxied

    cassettes = tmp_path_factory.mktemp("live-cassettes")
    with running_server() as server_url, proxied(server_url) as base_url:
        recorded = _run("record", cassettes, base_url, seed="1")
    # The server and the proxy are gone: base_url now points at a closed port.
    replayed = _run("replay", cassettes, base_url, seed="2")
    return {"record": recorded, "replay": replayed, "cassettes": {"dir": str(cassettes)}}


@pytest.mark.parametrize("program", PROGRAMS)
def test_replay_is_identical_to_the_live_run(runs: dict[str, Any], program: str) -> None:
    recorded = runs["record"]["programs"][program]
    replayed = runs["replay"]["programs"][program]
    assert recorded["stats"] == {"recorded": CALLS_PER_PROGRAM, "replayed": 0, "missed": 0}
    assert replayed["stats"] == {"recorded": 0, "replayed": CALLS_PER_PROGRAM, "missed": 0}
    assert replayed["output"] == recorded["output"]


def test_replay_attempts_no_connection(runs: dict[str, Any]) -> None:
    assert runs["replay"]["connection_attempts"] == []


def test_cassettes_hold_the_servers_volatile_ids(runs: dict[str, Any]) -> None:
    """What was replayed really came from the server: its random ids are in the cassettes."""
    text = "".join(p.read_text() for p in Path(runs["cassettes"]["dir"]).glob("*.yaml"))
    assert "chatcmpl-" in text
    assert "call__0_" in text  # the server's tool-call id format


def test_langgraph_agent_shape(runs: dict[str, Any]) -> None:
    messages = runs["replay"]["programs"]["langgraph_invoke"]["output"]["messages"]
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"]
    (call,) = messages[1]["data"]["tool_calls"]
    assert call["name"] == "get_weather"
    assert call["id"].startswith("call_")
    assert messages[2]["data"]["tool_call_id"] == call["id"]

    chunks = runs["replay"]["programs"]["langgraph_stream"]["output"]["chunks"]
    nodes = [c["node"] for c in chunks]
    assert nodes[:2] == ["agent", "tools"]
    assert set(nodes[2:]) == {"answer"}
    # The answer really streamed: chunks, ending with LangChain's closing chunk.
    assert all(c["message"]["type"] == "AIMessageChunk" for c in chunks[2:])
    assert chunks[-1]["message"]["data"]["chunk_position"] == "last"


@pytest.mark.parametrize("program", ["llamaindex_agent", "llamaindex_agent_stream"])
def test_llamaindex_agent_shape(runs: dict[str, Any], program: str) -> None:
    output = runs["replay"]["programs"][program]["output"]
    (call,) = output["tool_calls"]
    assert call["name"] == "weather"
    assert call["id"].startswith("call_")
    results = [e for e in output["events"] if "tool_result" in e]
    assert len(results) == 1
    assert results[0]["tool_result"].startswith("It is sunny")
    streamed = [e for e in output["events"] if "stream" in e]
    if program.endswith("_stream"):
        assert streamed  # the answer turn streamed
    else:
        assert not streamed
