"""The SDK layer's tests import their helpers from this folder (``fake_wire``, ``sdk_*``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_wire import FakeWire


@pytest.fixture
def fake() -> Iterator[FakeWire]:
    """The fake OpenAI and Anthropic wire server, up for the test."""
    with FakeWire() as server:
        yield server


@pytest.fixture(autouse=True)
def _no_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHAINCASSETTE_MODE", raising=False)
