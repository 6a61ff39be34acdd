"""README.md's Python snippets run as pasted, in order, in one Python session.

They talk to a fake OpenAI-compatible server (``tests/fakes``, its forecast model: random
ids, tool calls, usage, streaming), found through the standard ``OPENAI_BASE_URL`` /
``OPENAI_API_BASE`` variables, as a user's snippets would find the real API through
their key. The first run records; then the server is gone, and two fresh processes with no
``OPENAI_API_KEY`` replay every snippet identically from the cassettes the first run wrote.
The pytest example (the block fenced as ``python tests/test_agent.py``) is run as its README
section says: ``pytest --cassette-mode=once`` in an empty folder, then plain ``pytest``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
sys.path.insert(0, str(ROOT / "tests"))

from fakes.nowhere import closed_port_url  # noqa: E402
from fakes.scripts import forecast  # noqa: E402
from fakes.wire import FakeServer  # noqa: E402

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


def environment(base_url: str, key: bool) -> dict[str, str]:
    """This process's environment without provider keys and chaincassette settings; a key
    only when asked (recording), as a user's shell would have it."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    for name in ("CHAINCASSETTE_MODE", "CHAINCASSETTE_PLACEHOLDER_KEYS", "PYTEST_ADDOPTS", "CI"):
        env.pop(name, None)
    env |= {"OPENAI_BASE_URL": base_url, "OPENAI_API_BASE": base_url}
    if key:
        env["OPENAI_API_KEY"] = "sk-readme-" + "x" * 32
    return env


def run_snippets(
    blocks: list[str], cwd: Path, base_url: str, key: bool = True
) -> subprocess.CompletedProcess[str]:
    env = environment(base_url, key)
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
    text = README.read_text()
    blocks = python_blocks(text)
    assert len(blocks) >= 4
    assert "def test_weather_agent(cassette):" in fenced(text, "python tests/test_agent.py")
    tour = blocks[0]
    assert "from langchain.agents import create_agent" in tour and 'mode="once"' in tour


@pytest.mark.skipif(
    any(importlib.util.find_spec(name.split(".")[0]) is None for name in NEEDED),
    reason="needs langchain, langchain-openai, llama-index-llms-openai",
)
def test_every_python_snippet_runs_as_pasted_then_replays_offline(tmp_path: Path) -> None:
    blocks = python_blocks(README.read_text())
    with FakeServer(forecast) as provider:
        recorded = run_snippets(blocks, tmp_path, provider.url)
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
        calls = provider.requests
    assert calls > 0
    assert sorted(p.name for p in (tmp_path / "tests" / "cassettes").glob("*.yaml")) == [
        "agent.yaml",
        "ask.yaml",
        "li.yaml",
        "sdk.yaml",
        "stream.yaml",
    ]
    offline = closed_port_url()  # nothing listens: a call that escaped a cassette would fail
    replays = [run_snippets(blocks, tmp_path, offline, key=False) for _ in range(2)]
    for replay in replays:
        assert replay.returncode == 0, replay.stdout + replay.stderr
    assert replays[0].stdout == replays[1].stdout
    assert without_stats(replays[0].stdout) == without_stats(recorded.stdout)
    assert f"--- snippet {len(blocks)}" in recorded.stdout
    assert "You asked: What is Docker?" in recorded.stdout


def fenced(text: str, info: str) -> str:
    """The one block fenced as ```` ```{info} ````."""
    found = re.findall(rf"^```{re.escape(info)}\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    assert len(found) == 1, f"README.md should hold one ```{info} block"
    return str(found[0])


def pytest_commands(text: str) -> list[list[str]]:
    """The ``pytest`` lines of the bash block right after the pytest example, as argv."""
    section = text[text.index("```python tests/test_agent.py") :]
    block = re.search(r"^```bash\n(.*?)^```", section, flags=re.DOTALL | re.MULTILINE)
    assert block is not None
    lines = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("pytest")]


@pytest.mark.skipif(
    any(importlib.util.find_spec(name.split(".")[0]) is None for name in NEEDED),
    reason="needs langchain, langchain-openai",
)
def test_the_pytest_example_passes_recording_in_an_empty_folder_then_on_plain_pytest(
    tmp_path: Path,
) -> None:
    text = README.read_text()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_agent.py").write_text(fenced(text, "python tests/test_agent.py"))
    record, replay = pytest_commands(text)
    assert record == ["pytest", "--cassette-mode=once"] and replay == ["pytest"]

    def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", *argv, "-p", "no:cacheprovider", "-p", "no:randomly"]
        return subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )

    with FakeServer(forecast) as provider:
        recorded = run(record, environment(provider.url, key=True))
        calls = provider.requests
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "1 passed" in recorded.stdout and calls == 2
    cassette = tmp_path / "tests" / "cassettes" / "test_agent" / "test_weather_agent.yaml"
    assert cassette.is_file()
    for ci in ("", "1"):  # on a laptop and on CI: no key, the server gone
        env = environment(closed_port_url(), key=False) | ({"CI": ci} if ci else {})
        replayed = run(replay, env)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "1 passed" in replayed.stdout and "2 replayed, 0 recorded" in replayed.stdout
    module = tmp_path / "tests" / "test_agent.py"  # the README's miss: its question edited
    module.write_text(module.read_text().replace("Weather in Paris?", "Weather in Paris today?"))
    missed = run(replay, environment(closed_port_url(), key=False))
    assert missed.returncode == 1, missed.stdout + missed.stderr
    for line in miss_report(text):
        assert re.search(miss_line(line, tmp_path), missed.stdout, flags=re.MULTILINE), (
            f"README.md's miss report line {line!r} is not in:\n{missed.stdout}"
        )


def miss_report(text: str) -> list[str]:
    """The lines of the miss report the README shows under "Misses explain themselves"."""
    section = text[text.index("**Misses explain themselves**") :]
    block = re.search(r"^```\n(.*?)^```", section, flags=re.DOTALL | re.MULTILINE)
    assert block is not None
    return block.group(1).splitlines()


def miss_line(line: str, project: Path) -> str:
    """A README line as a pattern: its project folder is ``project``, each ``(…)`` elides."""
    pattern = re.escape(line).replace(re.escape("/home/you/weather"), re.escape(str(project)))
    return "^" + pattern.replace(re.escape("(…)"), r"\(.*?\)") + "$"


def test_the_tour_install_line_brings_everything_the_tour_imports() -> None:
    from importlib import metadata

    text = README.read_text()
    line = next(
        command
        for command in text.splitlines()
        if command.startswith("pip install 'chaincassette[all]' ") and "#" not in command
    )
    named = {re.sub(r"\[.*\]", "", w.strip("'")).lower() for w in line.split()[2:]}
    brought = named | {"langchain", "langchain-core", "llama-index-core", "pyyaml"}  # [all]
    distributions = metadata.packages_distributions()
    tour = "\n".join(python_blocks(text))
    for module in sorted(set(re.findall(r"^(?:from|import) ([a-z_]+)", tour, flags=re.MULTILINE))):
        if module in ("chaincassette", "asyncio"):
            continue
        provided_by = {d.lower() for d in distributions.get(module, [])}
        if module == "llama_index":  # a namespace: each module of it names its own distribution
            provided_by = {"llama-index-core", "llama-index-llms-openai"}
        assert provided_by & brought, f"the tour imports {module}, which the install line lacks"
