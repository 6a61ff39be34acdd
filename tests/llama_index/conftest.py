"""Shared setup for the LlamaIndex tests: no network, no default OpenAI LLM, clean Settings."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("IS_TESTING", "1")


@pytest.fixture(autouse=True)
def clean_settings() -> Iterator[None]:
    """Save and restore ``Settings._llm`` (reading ``Settings.llm`` would build a default)."""
    from llama_index.core import Settings

    saved = Settings._llm
    try:
        yield
    finally:
        Settings._llm = saved


@pytest.fixture(autouse=True)
def reset_provider_calls() -> Iterator[None]:
    from li_fake_provider import FakeProvider

    FakeProvider.calls.clear()
    yield
