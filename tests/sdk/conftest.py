"""The SDK layer's tests import their helpers from this folder (``sdk_*``) and the fake wire
server from ``tests/fakes``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakes.scripts import echo
from fakes.wire import FakeServer


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    """The fake wire server answering with the SDK tests' echo model, up for the test."""
    with FakeServer(echo) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHAINCASSETTE_MODE", raising=False)
