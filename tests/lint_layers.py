"""Check the import layering and the absence of import cycles (``make lint`` runs this).

import-linter analyses a package by walking its directory, but ``chaincassette`` is two
directories mapped onto one package (``core/`` and ``integrations/``, setuptools
``package-dir``). So the tree is laid out as it installs, in a scratch folder, and
``lint-imports`` runs on that copy with the contracts of ``pyproject.toml``.

``python tests/lint_layers.py [--plant MODULE:IMPORT]`` exits non-zero on a broken
contract; ``--plant`` adds an import to the copy first (how the suite shows that a planted
cycle fails the check).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lay_out(target: Path) -> Path:
    package = target / "chaincassette"
    shutil.copytree(ROOT / "core", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        ROOT / "integrations",
        package / "integrations",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return package


def check(plant: list[str]) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as scratch:
        package = lay_out(Path(scratch))
        for spec in plant:
            module, _, statement = spec.partition(":")
            path = package.joinpath(*module.split(".")[1:]).with_suffix(".py")
            with path.open("a") as handle:
                handle.write(f"\n\ndef _planted() -> None:\n    {statement}  # noqa\n")
        lint = Path(sys.executable).with_name("lint-imports")
        env = {**os.environ, "PYTHONPATH": scratch}
        return subprocess.run(
            [str(lint), str(ROOT / "pyproject.toml")],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plant", action="append", default=[], metavar="MODULE:IMPORT")
    args = parser.parse_args()
    result = check(args.plant)
    print(result.stdout[result.stdout.find("Contracts") :] or result.stdout, end="")
    print(result.stderr, end="", file=sys.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
