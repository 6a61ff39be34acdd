"""Helpers of the model-call tests: programs and the CLI in fresh processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINCASSETTE")}
    env.pop("CI", None)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    env.pop("OPENAI_API_KEY", None)
    return env


def run_program(scenario: str, cassette: Path | str, mode: str, url: str) -> dict[str, Any]:
    """``programs.py SCENARIO`` in a fresh interpreter; its JSON result."""
    done = subprocess.run(
        [sys.executable, str(HERE / "programs.py"), scenario, str(cassette), mode, url],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m chaincassette ARGS`` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "chaincassette", *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
        check=False,
    )
