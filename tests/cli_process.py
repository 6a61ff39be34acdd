"""``python -m chaincassette ARGS`` in a fresh interpreter, in ``cwd``: what a user's shell
runs, for the tests of what the CLI prints and rewrites."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def chaincassette(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chaincassette", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
