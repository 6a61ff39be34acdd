"""Runs of part of a suite, and tests sharing one cassette: a run that collects only part of
a module never makes ``chaincassette prune`` call the rest of its cassettes orphans, and tests
sharing a cassette replay what they got when recorded, strict runs included."""

from __future__ import annotations

import json

import pytest

from chaincassette import Cassette
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


RANDOM_PROVIDER = """
import uuid
from chaincassette import recorded

@recorded(name="provider.ask")
def ask(prompt):
    return {"text": prompt.upper() + " " + uuid.uuid4().hex[:6]}
"""
SHARED = """
import json, pytest
from pathlib import Path
from provider import ask

@pytest.mark.cassette("shared")
@pytest.mark.parametrize("n", [1, 2])
def test_x(cassette, n):
    first = ask("same question")["text"]
    with (Path(__file__).parent / "seen.jsonl").open("a") as seen:
        seen.write(json.dumps([n, first]) + "\\n")
    ask(f"then {n}")
"""


def seen(pytester: pytest.Pytester) -> list[dict[int, str]]:
    """What each run's tests got for the question they share, one dict per run."""
    lines = (pytester.path / "seen.jsonl").read_text().splitlines()
    pairs = [tuple(json.loads(line)) for line in lines]
    return [dict(pairs[i : i + 2]) for i in range(0, len(pairs), 2)]


@pytest.mark.parametrize("mode", ["record", "once"])
def test_tests_sharing_a_cassette_replay_what_they_got_when_recorded(
    pytester: pytest.Pytester, mode: str
) -> None:
    """Two tests of one run ask the same first question into one cassette: each replays
    what it got in the run that recorded it (in ``record`` mode the second test got a live
    answer of its own, and its replay then handed it the first test's)."""
    pytester.makepyfile(provider=RANDOM_PROVIDER, test_shared=SHARED)
    pytester.syspathinsert()
    pytester.runpytest("-p", "no:randomly", f"--cassette-mode={mode}").assert_outcomes(passed=2)
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)
    pytester.runpytest("-p", "randomly").assert_outcomes(passed=2)
    recorded, *replayed = seen(pytester)
    assert replayed == [recorded, recorded]


def test_strict_replay_of_a_shared_cassette_passes(pytester: pytest.Pytester) -> None:
    """``--cassette-strict`` fails a test for interactions it never played; in a cassette
    several tests share, the other tests' interactions are never played by this one."""
    pytester.makepyfile(provider=RANDOM_PROVIDER, test_shared=SHARED)
    pytester.syspathinsert()
    pytester.runpytest("-p", "no:randomly", "--cassette-mode=once").assert_outcomes(passed=2)
    pytester.runpytest("-p", "no:randomly", "--cassette-strict").assert_outcomes(passed=2)


SHARED_CHANGED = """
import os, pytest
from provider import ask

@pytest.mark.cassette("shared")
@pytest.mark.parametrize("n", [1, 2])
def test_x(cassette, n):
    ask("same question")
    if n == 1 or not os.environ.get("DROP"):
        ask(f"then {n}")
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["", "xdist"])
def test_strict_fails_the_session_for_what_no_test_of_a_shared_cassette_played(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    """The shared cassette is judged as a whole at the session's end (by the xdist
    controller, from its workers' data): an interaction none of its tests played fails the
    session, once every one of them ran; a ``-k`` subset judges nothing."""
    pytester.makepyfile(provider=RANDOM_PROVIDER, test_shared=SHARED_CHANGED)
    pytester.syspathinsert()
    run = pytester.runpytest_subprocess if workers else pytester.runpytest
    run("-p", "no:randomly", "--cassette-mode=once").assert_outcomes(passed=2)
    monkeypatch.setenv("DROP", "1")  # test_x[2] no longer asks "then 2"
    strict = run("-p", "no:randomly", "--cassette-strict", *workers)
    strict.assert_outcomes(passed=2)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(
        [
            "--cassette-strict: 1 of 3 interactions in cassettes/test_shared/shared.yaml were "
            "never played by any of the 2 tests naming it (indexes 2)*re-record the cassette: "
            "pytest test_shared.py::test_x --cassette-mode=record"
        ]
    )
    subset = run("-p", "no:randomly", "--cassette-strict", "-k", "not 2", *workers)
    assert subset.parseoutcomes()["passed"] == 1  # (xdist's controller counts no deselected)
    lenient = run("-p", "no:randomly", *workers)
    lenient.assert_outcomes(passed=2)
    for result in (subset, lenient):
        assert result.ret == pytest.ExitCode.OK
        assert "never played" not in result.stdout.str()


OWN_CASSETTE = """
from pathlib import Path
from chaincassette import use_cassette
from provider import ask

def test_own():
    with use_cassette(Path(__file__).parent / "cassettes" / "test_agent" / "custom.yaml"):
        ask("one")

def test_fixture(cassette):
    ask("two")
"""


OWN_WRAPPER = """
from pathlib import Path
from langchain_core.globals import set_llm_cache
from langchain_core.language_models.fake import FakeListLLM
from chaincassette.integrations.langchain import CassetteCache
from provider import ask

def test_own():
    with CassetteCache(Path(__file__).parent / "cassettes" / "test_agent" / "custom.yaml") as cache:
        set_llm_cache(cache)
        try:
            assert FakeListLLM(responses=["hi"]).invoke("hello") == "hi"
        finally:
            set_llm_cache(None)

def test_fixture(cassette):
    ask("two")
"""


MODULE_WRAPPER = """
from pathlib import Path
from langchain_core.language_models.fake import FakeListLLM
from chaincassette.integrations.langchain import CassetteCache
from provider import ask

CACHE = CassetteCache(Path(__file__).parent / "cassettes" / "test_agent" / "custom.yaml")

def test_own():
    assert FakeListLLM(responses=["hi"], cache=CACHE).invoke("hello") == "hi"
    CACHE.cassette.save()

def test_fixture(cassette):
    ask("two")
"""

SESSION_WRAPPER = """
import pytest
from pathlib import Path
from langchain_core.language_models.fake import FakeListLLM
from chaincassette.integrations.langchain import CassetteCache
from provider import ask

@pytest.fixture(scope="session")
def cache():
    with CassetteCache(Path(__file__).parent / "cassettes" / "test_agent" / "custom.yaml") as made:
        yield made

def test_own(cache):
    assert FakeListLLM(responses=["hi"], cache=cache).invoke("hello") == "hi"

def test_fixture(cassette):
    ask("two")
"""


@pytest.mark.parametrize(
    "program",
    [OWN_CASSETTE, OWN_WRAPPER, MODULE_WRAPPER, SESSION_WRAPPER],
    ids=["block", "wrapper", "module-wrapper", "session-wrapper"],
)
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["", "xdist"])
def test_prune_keeps_a_cassette_a_test_opens_itself(
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    program: str,
    workers: list[str],
) -> None:
    """A cassette a test opens itself beside the fixture's, with ``use_cassette`` or given to
    a wrapper (``CassetteCache`` here), is used by that test, and one a wrapper made at the
    module's import (no test running) or in a session fixture by the module's tests: no run that replays it may get
    it called an orphan (prune --dry-run said "would remove ... (no test uses it)")."""
    pytester.makepyfile(provider=PROVIDER, test_agent=program)
    pytester.syspathinsert()
    pytester.runpytest("--cassette-mode=once").assert_outcomes(passed=2)
    custom = pytester.path / "cassettes" / "test_agent" / "custom.yaml"
    assert custom.exists()
    run = pytester.runpytest_subprocess if workers else pytester.runpytest
    run(*workers).assert_outcomes(passed=2)
    capsys.readouterr()
    assert main(["prune", "--dry-run"]) == 0
    assert "custom.yaml" not in capsys.readouterr().out
    (custom.parent / "stale.yaml").write_text(custom.read_text())  # prune still works there
    assert main(["prune"]) == 0
    assert "removed cassettes/test_agent/stale.yaml" in capsys.readouterr().out
    assert custom.exists()


#: ``test_one`` reaches into ``test_other``'s cassette folder: one cassette, two modules.
REACHING = {
    "test_one": """
        import pytest
        from provider import ask

        @pytest.mark.cassette("../test_other/shared")
        def test_one(cassette):
            ask("one")
        """,
    "test_other": """
        import os, pytest
        from provider import ask

        @pytest.mark.cassette("shared")
        def test_other(cassette):
            if not os.environ.get("DROP"):
                ask("other")
        """,
}


def test_strict_judges_a_cassette_of_two_modules_only_when_both_ran(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A marker name reaching into another module's cassette folder: a run of one module
    played only its own interactions, and strict mode called the other's never played
    (the test alone, or the session). A cassette is judged only once every test naming it,
    in any module, ran: the reaching one knows it shares; the other module is told by the
    usage record of the last run that ran both (and keeps telling, run after run)."""
    pytester.makepyfile(provider=RANDOM_PROVIDER, **REACHING)
    pytester.syspathinsert()
    strict = ["-p", "no:randomly", "--cassette-strict"]
    pytester.runpytest("-p", "no:randomly", "--cassette-mode=once").assert_outcomes(passed=2)
    cassette = Cassette(pytester.path / "cassettes" / "test_other" / "shared.yaml")
    assert len(cassette.interactions) == 2
    for args in ([], ["test_one.py"], ["test_other.py"], ["test_other.py"], ["test_one.py"]):
        result = pytester.runpytest(*strict, *args)
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        assert "never played" not in result.stdout.str()
    monkeypatch.setenv("DROP", "1")  # no test asks "other" any more: a run of both says so
    assert pytester.runpytest(*strict, "test_other.py").ret == pytest.ExitCode.OK
    both = pytester.runpytest(*strict)
    assert both.ret == pytest.ExitCode.TESTS_FAILED
    both.stdout.fnmatch_lines(
        ["*--cassette-strict: 1 of 2 interactions in cassettes/test_other/shared.yaml*"]
    )
