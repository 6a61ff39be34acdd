"""The light install: chaincassette, its CLI and its pytest plugin work without LangChain or
LlamaIndex, and importing an integration without its framework names the extra to install.

Each check runs in a fresh interpreter whose import system refuses the frameworks (a
meta-path finder raising ``ImportError``), as on a machine where they are not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("langchain_core", "langchain", "langgraph", "llama_index")

BLOCKER = f"""
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {FRAMEWORKS!r}:
            raise ImportError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
FRAMEWORKS = {FRAMEWORKS!r}
"""


def without_frameworks(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "program.py"
    script.write_text(BLOCKER + textwrap.dedent(code))
    env = {k: v for k, v in os.environ.items() if k != "CHAINCASSETTE_MODE"}
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def test_core_cli_and_plugin_load_without_either_framework(tmp_path: Path) -> None:
    result = without_frameworks(
        """
        import json
        import chaincassette
        import chaincassette.cli, chaincassette.cli.runner, chaincassette.cli.bootstrap
        import chaincassette.cli.prune, chaincassette.cli.verify, chaincassette.cli.listing
        import chaincassette.cli.show, chaincassette.cli.compare
        import chaincassette.integrations.hooks
        import chaincassette.integrations.pytest_plugin.plugin
        from chaincassette import recorded, use_cassette

        @recorded
        def ask(prompt):
            return {"text": prompt.upper()}

        with use_cassette("c.yaml", mode="once"):  # the integrations' hooks are entered too
            first = ask("hi")
        with use_cassette("c.yaml"):
            again = ask("hi")
        loaded = sorted({m.split(".")[0] for m in sys.modules} & set(FRAMEWORKS))
        print(json.dumps({"first": first, "again": again, "frameworks": loaded}))
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "first": {"text": "HI"},
        "again": {"text": "HI"},
        "frameworks": [],
    }


def test_pytest_with_the_plugin_runs_without_either_framework(tmp_path: Path) -> None:
    (tmp_path / "test_it.py").write_text(
        "from chaincassette import recorded\n\n"
        "@recorded\ndef ask(p):\n    return p[::-1]\n\n"
        "def test_it(cassette):\n    assert ask('abc') == 'cba'\n"
    )
    result = without_frameworks(
        """
        import pytest
        status = pytest.main(["-p", "no:cacheprovider", "-q", "--cassette-mode=once", "test_it.py"])
        assert "chaincassette.integrations.pytest_plugin.plugin" in sys.modules
        sys.exit(int(status))
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert (tmp_path / "cassettes" / "test_it" / "test_it.yaml").is_file()


@pytest.mark.parametrize(
    ("module", "distribution", "extra"),
    [
        ("chaincassette.integrations.langchain", "langchain-core", "langchain"),
        ("chaincassette.integrations.llama_index", "llama-index-core", "llama-index"),
    ],
)
def test_an_integration_without_its_framework_names_the_extra(
    tmp_path: Path, module: str, distribution: str, extra: str
) -> None:
    result = without_frameworks(
        f"""
        try:
            import {module}
        except ImportError as error:
            print(error)
        else:
            print("imported")
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert f"{module} needs {distribution}" in result.stdout
    assert f"pip install 'chaincassette[{extra}]'" in result.stdout


@pytest.mark.install
def test_the_langchain_extra_installs_no_llama_index(tmp_path: Path) -> None:
    """``pip install --dry-run --report`` resolves ``[langchain]`` from the package index
    (what a user's ``pip install chaincassette[langchain]`` would install), installing nothing.

    It asks the package index about every dependency (minutes on a busy machine), so it has
    its own marker: ``make install-check`` runs it, and CI does.
    """
    report = tmp_path / "report.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            f"{ROOT}[langchain]",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0 and "pip" in result.stderr and "index" in result.stderr.lower():
        pytest.skip(f"the package index cannot be reached: {result.stderr[-300:]}")
    assert result.returncode == 0, result.stderr
    names = sorted(i["metadata"]["name"].lower() for i in json.loads(report.read_text())["install"])
    assert "langchain-core" in names and "langchain" in names and "pyyaml" in names
    assert [n for n in names if n.startswith("llama")] == []
    assert not {"numpy", "nltk", "sqlalchemy", "pillow", "tiktoken"} & set(names), names
