"""What the pytest plugin costs a session that uses no cassette, in instructions (callgrind).

pytest loads every installed plugin by entry point, so a project that never asks for a
cassette still imports ``chaincassette.integrations.pytest_plugin.plugin``. Counted, each
in a fresh interpreter under ``valgrind --tool=callgrind`` (instructions do not depend on
the machine's load; bytecode cached by a warm run first):

- ``python -c pass``: the interpreter alone (subtracted from the others);
- ``import pytest``;
- ``import pytest`` and the plugin module;
- a whole pytest session of one plain test, with the plugin disabled
  (``-p no:chaincassette``) and enabled (the default: options, ini settings, hooks, the
  live-call guard around the test).

Target (issue 28): importing the plugin adds at most 15 % to the instructions of
``import pytest``.

Run: .venv/bin/python benchmarks/bench_plugin_import.py
Needs valgrind; about half a minute.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import table

PLUGIN = "chaincassette.integrations.pytest_plugin.plugin"
TEST = "def test_plain():\n    assert 1 + 1 == 2\n"
SESSION = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINCASSETTE_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as on a developer's machine
    env.pop("PYTEST_ADDOPTS", None)
    return env


def instructions(command: list[str], folder: Path, name: str) -> int:
    """Instructions of the whole process ``command`` (run once before, to warm bytecode)."""
    env = environment()
    subprocess.run(command, cwd=folder, env=env, check=True, capture_output=True)
    out = folder / f"callgrind-{name}.out"
    valgrind = ["valgrind", "--tool=callgrind", "--cache-sim=no", f"--callgrind-out-file={out}"]
    subprocess.run([*valgrind, *command], cwd=folder, env=env, check=True, capture_output=True)
    found = re.search(r"^summary: (\d+)$", out.read_text(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"no instruction count in {out}")
    return int(found.group(1))


def main() -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "test_plain.py").write_text(TEST)
        python = [sys.executable, "-c"]
        count = {
            "bare": instructions([*python, "pass"], folder, "bare"),
            "pytest": instructions([*python, "import pytest"], folder, "pytest"),
            "plugin": instructions([*python, f"import pytest, {PLUGIN}"], folder, "plugin"),
            "session off": instructions(
                [*SESSION, "-p", "no:chaincassette", "test_plain.py"], folder, "off"
            ),
            "session on": instructions([*SESSION, "test_plain.py"], folder, "on"),
        }
    base = count["pytest"] - count["bare"]
    added = count["plugin"] - count["pytest"]
    session = count["session on"] - count["session off"]
    rows = [
        ["`import pytest`", f"{base / 1e6:.1f} M", "1.00x", ""],
        ["plugin import, added", f"{added / 1e6:.1f} M", f"+{added / base:.1%}", "≤ +15 %"],
        [
            "verdict",
            "",
            "",
            "met" if added / base <= 0.15 else "missed",
        ],
        [
            "one-test session, plugin on − off",
            f"{session / 1e6:.1f} M",
            f"+{session / base:.1%}",
            "",
        ],
    ]
    print("## The pytest plugin's cost to a session that uses no cassette (instructions)\n")
    print(table(["what", "instructions", "÷ `import pytest`", "target"], rows))
    print(
        f"\n`python -c pass` ({count['bare'] / 1e6:.1f} M) subtracted; sessions: "
        f"{count['session off'] / 1e6:.1f} M with `-p no:chaincassette`, "
        f"{count['session on'] / 1e6:.1f} M with the plugin."
    )


if __name__ == "__main__":
    main()
