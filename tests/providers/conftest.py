"""Shared by the provider tests: a session-wide turn for tests that start many processes."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest


def _nice() -> None:
    """Run a provider program at a lower priority: the timing-sensitive tests of the other
    xdist worker keep their share of the two cores."""
    os.nice(10)


def session_dir(factory: pytest.TempPathFactory) -> Path:
    """A folder for the whole test session: under xdist each worker's basetemp is inside it."""
    base = factory.getbasetemp()
    session = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    shared = session / "providers"
    shared.mkdir(exist_ok=True)
    return shared


@pytest.fixture
def heavy_turn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Held while a test runs its subprocesses, so that two such tests (each already two
    processes at a time) never overload the two cores together with the other workers."""
    shared = session_dir(tmp_path_factory)
    with open(shared / "heavy.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield shared
