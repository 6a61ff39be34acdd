"""Real pytest runs: the run's mode controls reach cassettes a test opens itself.

``--cassette-mode``, the CI rule and ``--cassette-strict`` are installed as the
process-wide ``chaincassette.modes`` policy, so ``use_cassette(...)`` blocks,
``CassetteCache`` and ``CassetteLLM`` obey them as the ``cassette`` fixture does.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable

import pytest

from chaincassette.modes import current_policy

# imported at collection, before any inline run: pytester forgets the modules an inline run
# imported (the earlier tests' runs load numpy through the adapters), and numpy, under
# llama_index.core, cannot be imported twice in one process
for _framework, _integration in (("llama_index", "llama_index"), ("langchain_core", "langchain")):
    if importlib.util.find_spec(_framework) is not None:
        importlib.import_module(f"chaincassette.integrations.{_integration}")

EXPLICIT = """
import pytest
from chaincassette import use_cassette
from provider import ask

def test_no_mode():
    with use_cassette("recordings/no_mode.yaml"):
        assert ask("no mode")["text"] == "NO MODE"

def test_once():
    with use_cassette("recordings/once.yaml", mode="once"):
        assert ask("once")["text"] == "ONCE"
"""


def test_command_line_mode_reaches_use_cassette_blocks(
    provider: pytest.Pytester, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(test_explicit=EXPLICIT)
    replayed = provider.runpytest("-k", "no_mode")
    replayed.assert_outcomes(failed=1, deselected=1)
    replayed.stdout.fnmatch_lines(
        [
            "*no_mode.yaml does not exist*",
            "*to record it: pytest test_explicit.py::test_no_mode --cassette-mode=once",
        ]
    )
    assert live_calls() == []
    provider.runpytest("--cassette-mode=new_episodes").assert_outcomes(passed=2)
    assert sorted(live_calls()) == ["no mode", "once"]
    assert (provider.path / "recordings" / "no_mode.yaml").is_file()
    # replay on the command line beats the block's own mode="once" (file deleted: it misses)
    (provider.path / "recordings" / "once.yaml").unlink()
    forced = provider.runpytest("--cassette-mode=replay", "-k", "test_once")
    forced.assert_outcomes(failed=1, deselected=1)
    assert sorted(live_calls()) == ["no mode", "once"]


def test_ci_refuses_recording_in_blocks_the_test_opens(
    provider: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(test_explicit=EXPLICIT)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("CHAINCASSETTE_MODE", "record")
    refused = provider.runpytest("--cassette-strict")
    refused.assert_outcomes(failed=2)
    refused.stdout.fnmatch_lines(
        [
            "*once.yaml does not exist*",
            "*to record it: pytest test_explicit.py::test_once --cassette-mode=once",
        ]
    )
    assert live_calls() == []
    assert not (provider.path / "recordings").exists()
    provider.runpytest("--cassette-mode=once").assert_outcomes(passed=2)
    assert sorted(live_calls()) == ["no mode", "once"]


@pytest.mark.skipif(
    importlib.util.find_spec("langchain_core") is None
    or importlib.util.find_spec("llama_index") is None,
    reason="needs the LangChain and LlamaIndex integrations",
)
def test_ci_refusal_and_override_reach_cassette_cache_and_cassette_llm(
    provider: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider.makepyfile(
        test_frameworks="""
        import os
        from chaincassette.integrations.langchain import CassetteCache
        from chaincassette.integrations.llama_index import CassetteLLM
        from llama_index.core.llms import MockLLM  # wrapped only, never called

        def test_modes():
            expected = os.environ["EXPECTED"]
            cache = CassetteCache("lc.yaml", mode="record")
            assert cache.cassette.mode.value == expected
            cache.close()  # an unclosed cache keeps its wrappers installed for later tests
            assert CassetteLLM(MockLLM(), cassette="li.yaml", mode="record").cassette.mode.value == expected
        """
    )
    # Import what the inner test imports in this process first: pytester forgets the modules
    # first imported inside an inline run, and numpy (under llama_index) refuses a second import.
    for name in ("chaincassette.integrations.langchain", "chaincassette.integrations.llama_index"):
        importlib.import_module(name)
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("EXPECTED", "replay")
    provider.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("EXPECTED", "new_episodes")
    provider.runpytest("--cassette-mode=new_episodes").assert_outcomes(passed=1)


STRICT = """
from chaincassette import use_cassette
from provider import ask

def test_block_raises():
    with use_cassette("recordings/raised.yaml"):
        ask("raised")

def test_error_swallowed():
    try:
        with use_cassette("recordings/swallowed.yaml"):
            ask("swallowed")
    except Exception:
        pass  # like a framework that turns every error into a fallback answer

def test_fixture(cassette):
    ask("fixture")
"""


def test_strict_fails_tests_whose_own_cassettes_would_be_written(
    provider: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(test_strict=STRICT)
    # a fresh process: nothing may be written at interpreter exit either
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = provider.runpytest_subprocess(
        "-p",
        "chaincassette.integrations.pytest_plugin.plugin",
        "--cassette-strict",
        "--cassette-mode=once",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(failed=3)  # each problem once, in the test's own call
    assert "ERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*_ test_error_swallowed _*",
            "*--cassette-strict: this test would write recordings/swallowed.yaml (1 new "
            "interaction) through a cassette it opened itself*",
            "*_ test_fixture _*",
            "*--cassette-strict: this test would write cassettes/test_strict/test_fixture.yaml*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*_ test_block_raises _*",
            "*CassetteWriteError: cannot write cassette recordings/raised.yaml: writing cassettes "
            "is refused: --cassette-strict*",
        ]
    )
    result.stdout.fnmatch_lines(["*not written because of --cassette-strict (3):*"])
    assert sorted(live_calls()) == ["fixture", "raised", "swallowed"]
    assert not (provider.path / "recordings").exists()
    assert not (provider.path / "cassettes").exists()


def test_xdist_workers_get_the_same_policy(
    provider: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(test_explicit=EXPLICIT)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("CI", "true")
    plugins = ["-p", "xdist", "-p", "chaincassette.integrations.pytest_plugin.plugin", "-n", "2"]
    refused = provider.runpytest_subprocess(*plugins)
    refused.assert_outcomes(failed=2)
    refused.stdout.fnmatch_lines(
        ["*to record it: pytest test_explicit.py::test_* --cassette-mode=once"]
    )
    assert live_calls() == []
    provider.runpytest_subprocess(*plugins, "--cassette-mode=new_episodes").assert_outcomes(
        passed=2
    )
    assert sorted(live_calls()) == ["no mode", "once"]


def test_the_previous_policy_is_restored_after_the_run(provider: pytest.Pytester) -> None:
    before = current_policy()
    provider.makepyfile(test_explicit=EXPLICIT)
    provider.runpytest("--cassette-mode=once", "--cassette-strict")
    assert current_policy() is before


def test_scope_fixture_leaves_other_cassettes_alone(
    provider: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, live_calls: Callable[[], list[str]]
) -> None:
    """For suites that test cassette tooling itself: only the fixture follows the run's rules."""
    provider.makepyfile(test_explicit=EXPLICIT)
    provider.makeini("[pytest]\ncassette_scope = fixture\n")
    monkeypatch.setenv("CI", "true")
    result = provider.runpytest("--cassette-mode=replay")
    result.assert_outcomes(passed=1, failed=1)  # mode="once" records, the default replays
    assert live_calls() == ["once"]
    provider.makeini("[pytest]\ncassette_scope = everything\n")
    bad = provider.runpytest()
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*cassette_scope*'all' or 'fixture'*"])
