"""Shared fixtures: a clean LangChain global state and provider-call counting per test."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
warnings.filterwarnings("ignore", message=".*create_react_agent.*")

from fake_provider import PROVIDER_CALLS  # noqa: E402
from langchain_core.globals import set_llm_cache  # noqa: E402
from langgraph.warnings import LangGraphDeprecatedSinceV10  # noqa: E402


@pytest.fixture(autouse=True)
def clean_langchain_state() -> Iterator[list[str]]:
    """Each test starts with no global LLM cache and a zeroed provider-call counter."""
    set_llm_cache(None)
    PROVIDER_CALLS.clear()
    warnings.filterwarnings("ignore", category=LangGraphDeprecatedSinceV10)
    yield PROVIDER_CALLS
    set_llm_cache(None)
