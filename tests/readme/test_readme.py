"""README.md's Python snippets run as pasted, in order, in one Python session.

They talk to a fake OpenAI-compatible server (``tests/cli/fake_openai_server.py``: random
ids, tool calls, usage, streaming), found through the standard ``OPENAI_BASE_URL`` /
``OPENAI_API_BASE`` variables, as a user's snippets would find the real API through
their key. The first run records; then the server is gone and two fresh processes replay
every snippet identically from the cassettes the first run wrote.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
sys.path.insert(0, str(ROOT / "tests" / "cli"))

from fake_openai_server import FakeOpenAI, closed_port_url  # noqa: E402

NEEDED = ("langchain", "langchain_openai", "llama_index.llms.openai", "openai")

RUNNER = """
import json, sys, warnings
warnings.simplefilter("ignore")
blocks = json.loads(sys.argv[1])
namespace = {"__name__": "__main__"}
for number, block in enumerate(blocks, 1):
    print(f"--- snippet {number}", flush=True)
    exec(compile(block, f"README.md snippet {number}", "exec"), namespace)
    print(flush=True)
"""


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def run_snippets(blocks: list[str], cwd: Path, base_url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("CHAINCASSETTE_MODE", None)
    env |= {
        "OPENAI_API_KEY": "sk-readme-" + "x" * 32,
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_BASE": base_url,
    }
    return subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(blocks)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def without_stats(output: str) -> list[str]:
    """Record and replay differ only in the stats a snippet prints (recorded vs replayed)."""
    return [re.sub(r"CassetteStats\(.*?\)", "<stats>", line) for line in output.splitlines()]


def test_the_readme_has_the_snippets_it_promises() -> None:
    blocks = python_blocks(README.read_text())
    assert len(blocks) >= 5
    tour = blocks[0]
    assert "from langchain.agents import create_agent" in tour and 'mode="once"' in tour


@pytest.mark.skipif(
    any(importlib.util.find_spec(name.split(".")[0]) is None for name in NEEDED),
    reason="needs langchain, langchain-openai, llama-index-llms-openai",
)
def test_every_python_snippet_runs_as_pasted_then_replays_offline(tmp_path: Path) -> None:
    blocks = python_blocks(README.read_text())
    with FakeOpenAI() as provider:
        recorded = run_snippets(blocks, tmp_path, provider.url)
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
        calls = provider.calls
    assert calls > 0
    assert sorted(p.name for p in (tmp_path / "tests" / "cassettes").glob("*.yaml")) == [
        "agent.yaml",
        "ask.yaml",
        "li.yaml",
        "sdk.yaml",
        "stream.yaml",
    ]
    offline = closed_port_url()  # nothing listens: a call that escaped a cassette would fail
    replays = [run_snippets(blocks, tmp_path, offline) for _ in range(2)]
    for replay in replays:
        assert replay.returncode == 0, replay.stdout + replay.stderr
    assert replays[0].stdout == replays[1].stdout
    assert without_stats(replays[0].stdout) == without_stats(recorded.stdout)
    assert f"--- snippet {len(blocks)}" in recorded.stdout
    assert "You asked: What is Docker?" in recorded.stdout
