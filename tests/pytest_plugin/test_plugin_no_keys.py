"""A pytest project replays with no provider key in the environment and the provider gone.

Its conftest.py builds ``ChatAnthropic`` and its test module ``ChatOpenAI`` and LlamaIndex's
``OpenAI`` at import time (all three refuse to start without a key); its tests make a chat
call, run a tool-calling agent and stream an answer. Recorded once against the fake
providers with keys set (``--cassette-mode=once``), then replayed twice by plain ``pytest``
(with ``CI`` set) in fresh processes: no ``*_API_KEY`` variable, every client pointed at a
port that counts connection attempts. The replays write what the recording wrote, open no
connection, and no cassette holds the placeholder; ``CHAINCASSETTE_PLACEHOLDER_KEYS=0``
brings back the clients' "Missing credentials".
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest
from fakes.nowhere import DeadPort
from fakes.scripts import weather_tour
from fakes.wire import FakeServer

from chaincassette.credentials import PLACEHOLDER

NEEDED = ("langchain", "langchain_openai", "langchain_anthropic", "llama_index.llms.openai")

CONFTEST = """
import os
import pytest
from langchain_anthropic import ChatAnthropic

CLAUDE = ChatAnthropic(model="claude-sonnet-4-5", base_url=os.environ["PROVIDER_URL"], max_retries=0)

@pytest.fixture
def claude():
    return CLAUDE
"""

TESTS = """
import json, os
from pathlib import Path
from langchain.agents import create_agent
from langchain_openai import ChatOpenAI
from llama_index.core.llms import ChatMessage
from llama_index.llms.openai import OpenAI

URL = os.environ["PROVIDER_URL"]
OUT = Path(os.environ["RESULTS"])
CHAT = ChatOpenAI(model="gpt-4o-mini", base_url=URL + "/v1", max_retries=0, temperature=0)
STREAMER = OpenAI(model="gpt-4o-mini", api_base=URL + "/v1", max_retries=0)


def keep(name, value):
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    OUT.write_text(json.dumps({**results, name: value}, sort_keys=True))


def get_weather(city: str) -> str:
    \"\"\"Today's weather in a city.\"\"\"
    return f"12C and sunny in {city}"


def get_time(city: str) -> str:
    \"\"\"The local time in a city.\"\"\"
    return f"09:30 in {city}"


def test_chat_call(cassette):
    keep("chat", CHAT.invoke("Say hello").content)


def test_tool_calling_agent(cassette, claude):
    agent = create_agent(claude, tools=[get_weather, get_time])
    result = agent.invoke({"messages": [("user", "Weather and time in Paris?")]})
    keep("agent", [(m.type, m.content if isinstance(m.content, str) else str(m.content),
                    [(c["name"], c["args"]) for c in getattr(m, "tool_calls", [])])
                   for m in result["messages"]])
    assert "Summary" in str(result["messages"][-1].content)


def test_streaming_call(cassette):
    chunks = STREAMER.stream_chat([ChatMessage(role="user", content="Stream three words")])
    keep("stream", [(c.delta, c.message.content) for c in chunks])
"""


def environment(tmp_path: Path, url: str, keys: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    for name in ("CHAINCASSETTE_MODE", "CHAINCASSETTE_PLACEHOLDER_KEYS", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    env |= {"PROVIDER_URL": url, "RESULTS": str(tmp_path / "results.json")}
    env["PYTEST_ADDOPTS"] = "-o asyncio_default_fixture_loop_scope=function"
    if keys:
        env |= {"OPENAI_API_KEY": "sk-test-" + "x" * 32, "ANTHROPIC_API_KEY": "sk-ant-test"}
    else:
        env["CI"] = "1"
    return env


@pytest.mark.skipif(
    any(importlib.util.find_spec(n.split(".")[0]) is None for n in NEEDED),
    reason="needs langchain, langchain-openai, langchain-anthropic, llama-index-llms-openai",
)
def test_a_project_replays_offline_with_no_key_in_fresh_processes(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    import subprocess

    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_project=TESTS)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly"]

    def pytest_run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *args],
            cwd=pytester.path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    results = tmp_path / "results.json"
    with FakeServer(weather_tour) as provider:
        recorded = pytest_run(
            environment(tmp_path, provider.base, keys=True), "--cassette-mode=once"
        )
        calls = provider.requests
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "3 passed" in recorded.stdout
    assert calls == 5  # one chat call, three agent turns, one stream
    first = json.loads(results.read_text())
    assert set(first) == {"chat", "agent", "stream"}
    replays = []
    with DeadPort() as dead:
        for _ in range(2):
            results.unlink()
            replayed = pytest_run(environment(tmp_path, dead.url, keys=False))
            assert replayed.returncode == 0, replayed.stdout + replayed.stderr
            assert "3 passed" in replayed.stdout and "mode replay (default)" in replayed.stdout
            replays.append(json.loads(results.read_text()))
        switched_off = environment(tmp_path, dead.url, keys=False)
        switched_off["CHAINCASSETTE_PLACEHOLDER_KEYS"] = "0"
        without = pytest_run(switched_off)
        accepted = dead.accepted
    assert without.returncode != 0  # the one setting that turns placeholders off
    assert "api_key" in without.stdout + without.stderr  # "Missing credentials", as before
    assert replays == [first, first]
    assert accepted == 0
    cassettes = sorted((pytester.path / "cassettes" / "test_project").glob("*.yaml"))
    assert [p.stem for p in cassettes] == [
        "test_chat_call",
        "test_streaming_call",
        "test_tool_calling_agent",
    ]
    assert not any(PLACEHOLDER in p.read_text() for p in cassettes)
