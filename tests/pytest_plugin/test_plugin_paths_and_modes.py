"""Real pytest runs: where cassettes go, which mode they run in, record then replay."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import yaml

TESTS = """
import pytest
from provider import ask

def test_plain(cassette):
    assert ask("plain")["text"] == "PLAIN"

class TestGroup:
    def test_method(self, cassette):
        assert ask("method")["text"] == "METHOD"

@pytest.mark.parametrize("prompt", ["a b", "c"])
def test_param(cassette, prompt):
    assert ask(prompt)["text"] == prompt.upper()

@pytest.mark.cassette("shared/named")
def test_named():
    assert ask("named")["text"] == "NAMED"
"""


def test_per_test_paths_record_once_then_replay_twice_identically(
    provider: pytest.Pytester, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(test_agent=TESTS)
    provider.runpytest("--cassette-mode=once").assert_outcomes(passed=5)
    folder = provider.path / "cassettes" / "test_agent"
    names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.yaml"))
    assert names[:2] == ["TestGroup.test_method.yaml", "shared/named.yaml"]
    assert names[2].startswith("test_param[a_b]-") and names[3:] == [
        "test_param[c].yaml",
        "test_plain.yaml",
    ]
    assert len(live_calls()) == 5
    first = provider.runpytest("-p", "no:randomly")
    second = provider.runpytest("-p", "no:randomly")
    first.assert_outcomes(passed=5)
    second.assert_outcomes(passed=5)
    assert len(live_calls()) == 5, "replay called the provider"
    summary = [line for line in first.outlines if "cassettes used" in line]
    assert summary == [line for line in second.outlines if "cassettes used" in line]
    assert "5 cassettes used by 5 tests: 5 replayed, 0 recorded, 0 missed, 0 unused" in summary[0]
    assert "35 tokens not spent" in summary[0]


def test_cassette_dir_option_and_ini(
    provider: pytest.Pytester, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(test_agent=TESTS.split("class TestGroup")[0])
    provider.runpytest("--cassette-mode=once", "--cassette-dir=recordings").assert_outcomes(
        passed=1
    )
    assert (provider.path / "recordings" / "test_agent" / "test_plain.yaml").is_file()
    provider.makeini("[pytest]\ncassette_dir = other\ncassette_mode = once\n")
    provider.runpytest().assert_outcomes(passed=1)
    assert (provider.path / "other" / "test_agent" / "test_plain.yaml").is_file()
    assert not (provider.path / "cassettes").exists()


def test_default_replay_fails_with_the_full_miss_message(
    provider: pytest.Pytester, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(test_agent=TESTS.split("class TestGroup")[0])
    result = provider.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*cassette file *test_plain.yaml does not exist*", "*--cassette-mode=once*"]
    )
    assert live_calls() == []
    assert not (provider.path / "cassettes").exists()


def test_fixture_yields_the_cassette_and_marker_mode_and_options(
    provider: pytest.Pytester, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(
        test_agent="""
        import pytest
        from provider import ask

        @pytest.mark.cassette(mode="new_episodes", format="json", allow_playback_repeats=True)
        def test_marked(cassette):
            ask("x"); ask("x")
            assert cassette.path.name == "test_marked.json"
            assert cassette.mode.value == "new_episodes"
            assert cassette.stats.recorded in (0, 1)
        """
    )
    provider.runpytest().assert_outcomes(passed=1)
    provider.runpytest().assert_outcomes(passed=1)
    assert live_calls() == ["x"]


def test_env_variable_is_respected(
    provider: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(test_agent=TESTS.split("class TestGroup")[0])
    monkeypatch.setenv("CHAINCASSETTE_MODE", "once")
    provider.runpytest().assert_outcomes(passed=1)
    assert live_calls() == ["plain"]


def test_ci_refuses_recording_unless_asked_on_the_command_line(
    provider: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(test_agent=TESTS.split("class TestGroup")[0])
    provider.makeini("[pytest]\ncassette_mode = once\n")
    monkeypatch.setenv("CI", "true")
    refused = provider.runpytest()
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(
        ["*'once' refused because CI is set*", "*mode 'once' from the ini setting was refused*"]
    )
    assert live_calls() == []
    provider.runpytest("--cassette-mode=once").assert_outcomes(passed=1)
    assert live_calls() == ["plain"]


def test_bad_mode_is_a_usage_error(
    provider: pytest.Pytester, live_calls: Callable[[], list[str]]
) -> None:
    result = provider.runpytest("--cassette-mode=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown record mode 'sometimes'*"])


def test_recorded_cassette_is_plain_reviewable_yaml(
    provider: pytest.Pytester, live_calls: Callable[[], list[str]]
) -> None:
    provider.makepyfile(test_agent=TESTS.split("class TestGroup")[0])
    provider.runpytest("--cassette-mode=record").assert_outcomes(passed=1)
    document = yaml.safe_load((provider.path / "cassettes/test_agent/test_plain.yaml").read_text())
    assert document["interactions"][0]["request"]["args"] == {"prompt": "plain", "temperature": 0.0}


def test_a_parametrize_id_holding_a_secret_names_no_file(
    provider: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest makes a test's id of its parameters: one that is a key, or a secret
    variable's value, is masked in the cassette's file name (which is committed, and
    printed), and two such tests still get two files."""
    monkeypatch.setenv("ACME_API_KEY", "acme-Tq8Tq8Tq8Tq8Tq8")
    provider.makepyfile(
        test_keys="""
import os
import pytest
from provider import ask

@pytest.mark.parametrize("key", [os.environ["ACME_API_KEY"], "ghp_" + "Wv4" * 12, "ghp_" + "Xy5" * 12])
def test_key(cassette, key):
    assert ask("hello")["text"] == "HELLO"
"""
    )
    result = provider.runpytest("--cassette-mode=once", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    names = [p.name for p in (provider.path / "cassettes" / "test_keys").rglob("*.yaml")]
    assert len(names) == 3
    for name in names:
        assert "Tq8Tq8" not in name and "Wv4Wv4" not in name and "Xy5Xy5" not in name, name
    printed = "\n".join(line for line in result.outlines if "cassette" in line)
    assert "Tq8Tq8" not in printed and "Wv4Wv4" not in printed
