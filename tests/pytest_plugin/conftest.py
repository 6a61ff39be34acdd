"""Shared setup for the plugin tests: real pytest runs through ``pytester``."""

from __future__ import annotations

from collections.abc import Callable

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Load ``pytester`` for these tests (``pytest_plugins`` is only allowed in the rootdir conftest)."""
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")


#: A test module that calls a fake provider through ``@recorded``. The provider
#: behaves like a real one (random response ids, usage) and appends each live call
#: to ``calls.log`` so the outer test can assert that replay made none.
PROVIDER = """
import json, uuid
from pathlib import Path
from chaincassette import recorded

LOG = Path(__file__).parent / "calls.log"

@recorded(name="provider.ask")
def ask(prompt, temperature=0.0):
    with LOG.open("a") as log:
        log.write(prompt + "\\n")
    return {"id": "resp_" + uuid.uuid4().hex, "text": prompt.upper(),
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}
"""


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


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outer CI settings must not leak into the inner runs; each test sets what it needs."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("CHAINCASSETTE_MODE", raising=False)


@pytest.fixture
def provider(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester directory with ``provider.py`` importable by the inner tests."""
    pytester.makepyfile(provider=PROVIDER)
    pytester.syspathinsert()
    return pytester


@pytest.fixture
def live_calls(pytester: pytest.Pytester) -> Callable[[], list[str]]:
    """The prompts the fake provider answered live so far."""

    def read() -> list[str]:
        log = pytester.path / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    return read


def _preimport_plugin_dependencies() -> None:
    """Import what installed plugins import lazily during a run, once, in this process.

    ``pytester`` forgets modules first imported inside an inline run, so without this
    each inner run re-imports (and assertion-rewrites) hypothesis and langsmith: seconds
    per run instead of milliseconds. The integrations' activation hooks load frameworks
    with C extensions, which cannot be imported twice in one process at all.
    """
    import importlib

    from chaincassette.registry import registered_hooks

    registered_hooks()

    for name in ("hypothesis", "langsmith.testing._internal", "pytest_recording.plugin", "vcr"):
        try:
            importlib.import_module(name)
        except ImportError:
            continue


_preimport_plugin_dependencies()
