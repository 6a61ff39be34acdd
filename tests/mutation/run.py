"""Mutation testing of the request key: ``make mutate`` (never part of ``make test`` or CI).

mutmut (3.x) mutates the modules that decide what a request key is and how a cassette
answers: ``core/normalize.py``, ``core/cassette.py`` and both request builders. It imports
the code under test by the module name it derives from the file path, while this repo maps
``chaincassette`` to ``core/`` (setuptools ``package-dir``). So this script stages a copy
laid out under the import name (``build/mutation/chaincassette/...``) and runs mutmut
there; the working tree is never mutated.

Only fast in-process tests run against the mutants (``TESTS``): tests that start fresh
interpreters import the installed, unmutated package and could not kill anything.

Run: make mutate        (or: .venv/bin/python tests/mutation/run.py [--max-children N])
Then: cd build/mutation && ../../.venv/bin/python -m mutmut results   (or ``mutmut show NAME``)
Results of the first run, and why each survivor survives: tests/mutation/RESULTS.md
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
STAGE = ROOT / "build" / "mutation"

TARGETS = (
    "chaincassette/normalize.py",
    "chaincassette/cassette.py",
    "chaincassette/integrations/langchain/requests.py",
    "chaincassette/integrations/llama_index/request.py",
)
TESTS = (
    "tests/core",
    "tests/langchain/test_requests.py",
    "tests/llama_index/test_li_request.py",
)
#: Tests that run the code in a child interpreter (the installed package, not the mutant).
IN_CHILD_PROCESSES = (
    "dropped_before_exit",
    "running_as_a_script",
    "four_processes",
    "fresh_processes",
    "imports_no_framework",
    "sigkill",
)
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "cassettes", ".hypothesis")


def pytest_section() -> str:
    """The repo's ``[tool.pytest.ini_options]`` table, verbatim."""
    text = (ROOT / "pyproject.toml").read_text()
    found = re.search(r"^\[tool\.pytest\.ini_options\]\n.*?(?=^\[)", text, re.M | re.S)
    if not found:
        raise SystemExit("pyproject.toml has no [tool.pytest.ini_options] table")
    return found.group(0)


def stage() -> None:
    if STAGE.exists():
        shutil.rmtree(STAGE)
    shutil.copytree(ROOT / "core", STAGE / "chaincassette", ignore=IGNORE)
    shutil.copytree(ROOT / "integrations", STAGE / "chaincassette" / "integrations", ignore=IGNORE)
    shutil.copytree(ROOT / "tests", STAGE / "tests", ignore=IGNORE)
    deselect = " and ".join(f"not {name}" for name in IN_CHILD_PROCESSES)
    mutmut = [
        "[tool.mutmut]",
        'source_paths = ["chaincassette"]',
        f"only_mutate = {list(TARGETS)!r}".replace("'", '"'),
        'pytest_add_cli_args = ["-p", "no:randomly", "-p", "no:cacheprovider", "-q"]',
        f"pytest_add_cli_args_test_selection = {[*TESTS, '-k', deselect]!r}".replace("'", '"'),
        "",
    ]
    (STAGE / "pyproject.toml").write_text(pytest_section() + "\n" + "\n".join(mutmut))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--no-stage", action="store_true", help="keep build/mutation (resume)")
    args = parser.parse_args()
    if not args.no_stage:
        stage()
    mutmut = [sys.executable, "-m", "mutmut"]
    run = subprocess.run([*mutmut, "run", "--max-children", str(args.max_children)], cwd=STAGE)
    subprocess.run([*mutmut, "results", "--all", "true"], cwd=STAGE)
    raise SystemExit(run.returncode)


if __name__ == "__main__":
    main()
