"""Runs ``programs/backoff_sdk.py`` in a fresh process against the fake wire server: what its
calls gave and how many times it slept (the back-off and timeout tests share it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fakes.wire import FakeServer

PROGRAMS = Path(__file__).parent / "programs"
COMMAND = [sys.executable, str(PROGRAMS / "launch.py"), str(PROGRAMS / "backoff_sdk.py")]


def run_backoff(
    server: FakeServer, cassette: Path, mode: str, **extra: str
) -> tuple[list[str], int]:
    """What the program printed (its calls' outcomes) and how many times it slept; it must
    have attempted no connection while sockets were blocked (``OFFLINE``)."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
        "OPENAI_BASE_URL": server.url,
        "ANTHROPIC_BASE_URL": server.base,
        "CASSETTE": str(cassette),
        "CHAINCASSETTE_MODE": mode,
        "SHORT_BACKOFF": "1",
        "PYTHONWARNINGS": "ignore",
        **extra,
    }
    done = subprocess.run(COMMAND, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    *said, sleeps, connections = done.stdout.splitlines()
    assert connections == "connections: 0"
    return said, int(sleeps.removeprefix("sleeps: "))
