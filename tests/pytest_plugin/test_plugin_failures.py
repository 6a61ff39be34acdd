"""Real pytest runs: swallowed misses, strict mode, and what a failing test leaves on disk."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import yaml

SWALLOWING = '''
from provider import ask

def agent(prompt):
    """Like an agent framework or an SDK retry wrapper: errors become a fallback answer."""
    try:
        return ask(prompt)["text"]
    except Exception:
        return "sorry, something went wrong"

def test_agent(cassette):
    assert agent("hello") in ("HELLO", "sorry, something went wrong")
'''


def test_a_swallowed_miss_fails_the_test_once(
    provider: pytest.Pytester, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(test_agent=SWALLOWING)
    result = provider.runpytest()
    result.assert_outcomes(failed=1)  # not "1 passed, 1 error"
    assert "teardown" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*_ test_agent _*",
            "*CassetteMiss raised during the test and caught by the code under test (1 miss in all)*",
            "*cassette file *test_agent.yaml does not exist*",
        ]
    )
    assert live_calls() == []


def test_a_swallowed_miss_in_a_cassette_the_test_opened_itself_fails_it_too(
    provider: pytest.Pytester, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(
        test_agent=SWALLOWING.replace(
            "def test_agent(cassette):",
            "from chaincassette import use_cassette\n\n"
            "def test_agent(tmp_path):\n"
            "    with use_cassette(tmp_path / 'own.yaml'):\n"
            "        assert agent('hello') == 'sorry, something went wrong'\n"
            "\ndef unused():",
        )
    )
    result = provider.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_agent _*",
            "*CassetteMiss raised during the test and caught by the code under test*",
            "*own.yaml does not exist*",
        ]
    )
    assert live_calls() == []


def test_a_miss_that_failed_the_test_is_reported_once(provider: pytest.Pytester) -> None:
    provider.makepyfile(
        test_agent="""
        from provider import ask

        def test_agent(cassette):
            ask("hello")
        """
    )
    result = provider.runpytest()
    result.assert_outcomes(failed=1)
    assert "teardown" not in result.stdout.str()


def test_strict_fails_on_unused_interactions_and_on_writes(
    provider: pytest.Pytester, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(
        test_agent="""
        import os
        from provider import ask

        def test_agent(cassette):
            ask("one")
            if not os.environ.get("SHORTER"):
                ask("two")
        """
    )
    provider.runpytest("--cassette-mode=once").assert_outcomes(passed=1)
    provider.runpytest("--cassette-strict").assert_outcomes(passed=1)

    with pytest.MonkeyPatch.context() as env:
        env.setenv("SHORTER", "1")
        unused = provider.runpytest("--cassette-strict")
    unused.assert_outcomes(failed=1)
    unused.stdout.fnmatch_lines(
        ["*--cassette-strict: 1 of 2 interactions in cassettes/test_agent/test_agent.yaml*"]
    )

    cassette = provider.path / "cassettes" / "test_agent" / "test_agent.yaml"
    before = cassette.read_bytes()
    writes = provider.runpytest("--cassette-strict", "--cassette-mode=record")
    writes.assert_outcomes(failed=1)
    writes.stdout.fnmatch_lines(
        ["*--cassette-strict: this test would write cassettes/test_agent/test_agent.yaml (2 new*"]
    )
    writes.stdout.fnmatch_lines(["*not written because of --cassette-strict (1):*"])
    assert cassette.read_bytes() == before
    assert live_calls() == ["one", "two", "one", "two"]


def test_strict_from_ini(provider: pytest.Pytester) -> None:
    provider.makepyfile(test_agent=SWALLOWING)
    provider.makeini("[pytest]\ncassette_strict = true\n")
    result = provider.runpytest("--cassette-mode=once")
    result.assert_outcomes(failed=1)
    assert not (provider.path / "cassettes").exists()


def test_recordings_made_before_a_failure_are_kept_whole(provider: pytest.Pytester) -> None:
    provider.makepyfile(
        test_agent="""
        from provider import ask

        def test_agent(cassette):
            ask("one")
            ask("two")
            raise RuntimeError("the agent crashed after two calls")
        """
    )
    provider.runpytest("--cassette-mode=record").assert_outcomes(failed=1)
    folder = provider.path / "cassettes" / "test_agent"
    document = yaml.safe_load((folder / "test_agent.yaml").read_text())
    assert [i["request"]["args"]["prompt"] for i in document["interactions"]] == ["one", "two"]
    assert sorted(p.name for p in folder.iterdir() if not p.name.endswith(".cclock")) == [
        "test_agent.yaml"
    ]


def test_a_crash_while_saving_leaves_the_previous_file(provider: pytest.Pytester) -> None:
    provider.makepyfile(
        test_agent='''
        import os
        import pytest
        from provider import ask

        @pytest.fixture
        def crash_on_save():
            """Set up before (so torn down after) the cassette: the save runs while it is on."""
            original = os.replace
            def crash(src, dst):
                raise RuntimeError("the process died while renaming the new cassette into place")
            if os.environ.get("CRASH"):
                os.replace = crash
            yield
            os.replace = original

        def test_agent(crash_on_save, cassette):
            ask(os.environ.get("PROMPT", "one"))
        '''
    )
    provider.runpytest("--cassette-mode=record").assert_outcomes(passed=1)
    cassette = provider.path / "cassettes" / "test_agent" / "test_agent.yaml"
    before = cassette.read_bytes()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CRASH", "1")
        env.setenv("PROMPT", "two")
        result = provider.runpytest("--cassette-mode=record")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*the process died while renaming*"])
    assert cassette.read_bytes() == before
    assert not [p for p in cassette.parent.iterdir() if p.name.endswith(".tmp")]
