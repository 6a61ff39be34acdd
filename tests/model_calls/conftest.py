"""The model-call tests import their helpers from this folder (``mc_*`` names: pytest puts
every test folder on ``sys.path``, and a second ``conftest`` module would shadow another)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakes.scripts import from_context
from fakes.wire import FakeServer


@pytest.fixture
def provider() -> Iterator[FakeServer]:
    """The fake provider answering with the model-call tests' context model, up for the test."""
    with FakeServer(from_context) as server:
        yield server
