"""Fixtures for the CLI tests: a throwaway git repository with real cassettes."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import git, record_agent


def pytest_configure(config: pytest.Config) -> None:
    """Load ``pytester`` for these tests (``pytest_plugins`` is only allowed in the rootdir conftest)."""
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")


def _load_integrations_once() -> None:
    """Load the integrations' hooks here: ``pytester`` forgets modules an inner run imports,
    and frameworks with C extensions cannot be imported twice in one process."""
    import importlib.util

    from chaincassette.registry import registered_hooks

    registered_hooks()
    for framework in ("langchain_core.language_models", "llama_index.core"):
        if importlib.util.find_spec(framework.split(".")[0]) is not None:
            importlib.import_module(framework)
    _resolve_lazy_exports("langchain_core")


def _resolve_lazy_exports(prefix: str) -> None:
    """Import what the lazily-loading packages under ``prefix`` export (a module
    ``__getattr__`` that keeps what it imported). Left to an inner run, the package kept
    here holds classes of submodules ``pytester`` then forgets, and the next import of
    one makes a second class: ``isinstance`` failed across the two (LangGraph's ToolNode:
    'Tool get_weather returned unexpected type: ToolMessage')."""
    import contextlib
    import sys

    done: set[str] = set()
    while todo := [
        m for n, m in list(sys.modules.items()) if n.startswith(prefix) and n not in done
    ]:
        for module in todo:
            done.add(module.__name__)
            if "__getattr__" in vars(module):
                for name in getattr(module, "__all__", ()):
                    with contextlib.suppress(Exception):  # an optional dependency missing
                        getattr(module, name)


_load_integrations_once()


@pytest.fixture(autouse=True)
def _quiet_inner_runs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Give inner pytest runs the setting pytest-asyncio warns about when it is unset.

    Through ``PYTEST_ADDOPTS`` (set after ``pytester`` clears it) it applies whatever ini
    file a test writes, in process and in subprocesses; no warning is filtered.
    """
    if "pytester" not in request.fixturenames:
        return
    request.getfixturevalue("pytester")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-o asyncio_default_fixture_loop_scope=function")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty git repository as the working directory."""
    git(tmp_path, "init", "-q")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("CHAINCASSETTE_MODE", raising=False)
    return tmp_path


@pytest.fixture
def agent_cassette(repo: Path) -> Path:
    return record_agent(repo / "tests" / "cassettes" / "test_agent" / "test_weather.yaml")
