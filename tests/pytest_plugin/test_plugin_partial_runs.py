"""A run that collects only part of a module never makes ``chaincassette prune`` call the
rest of the module's cassettes orphans."""

from __future__ import annotations

import pytest

from chaincassette.cli import main

PROVIDER = """
from chaincassette import recorded

@recorded(name="provider.ask")
def ask(prompt):
    return {"text": prompt.upper(), "usage": {"total_tokens": 3}}
"""
SUITE = """
import os
from provider import ask

def test_passes(cassette):
    ask("one")

def test_flaky(cassette):
    ask("two")
    assert not os.environ.get("BREAK")
"""


def test_last_failed_run_leaves_the_passing_tests_cassettes(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pytest --lf`` collects only the tests that failed last time (pytest drops the others
    while collecting the module): the module was not collected in full."""
    pytester.makepyfile(provider=PROVIDER, test_agent=SUITE)
    pytester.syspathinsert()
    pytester.runpytest("--cassette-mode=once").assert_outcomes(passed=2)
    monkeypatch.setenv("BREAK", "1")
    pytester.runpytest().assert_outcomes(passed=1, failed=1)
    monkeypatch.delenv("BREAK")
    pytester.runpytest("--lf").assert_outcomes(passed=1)
    capsys.readouterr()
    assert main(["prune"]) == 0
    out = capsys.readouterr().out
    assert "test_passes" not in out
    assert (pytester.path / "cassettes" / "test_agent" / "test_passes.yaml").exists()
