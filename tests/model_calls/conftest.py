"""The model-call tests import their helpers from this folder (``mc_*`` names: pytest puts
every test folder on ``sys.path``, and a second ``conftest`` module would shadow another)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from mc_fake_provider import FakeProvider


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    """The fake OpenAI-compatible provider, up for the test."""
    with FakeProvider() as server:
        yield server
