"""``cassette_config``: shared cassette options in pytest-recording's ``vcr_config`` habit.

Real pytest runs (``pytester``, in subprocesses) of a suite whose conftest.py turns on
``replay_tools`` for its module; a marker and a class-scoped ``cassette_config`` override
it. A tool logs every time it really runs, so the log shows which tests replayed it.
"""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")

CONFTEST = """
import pytest

@pytest.fixture(scope="module")
def cassette_config():
    return {"replay_tools": True}
"""

TESTS = """
from pathlib import Path
import pytest
from langchain_core.tools import tool

LOG = Path(__file__).parent / "ran.log"

@tool
def get_weather(city: str) -> str:
    \"\"\"Today's weather in a city.\"\"\"
    with LOG.open("a") as log:
        log.write(city + "\\n")
    return f"12C and sunny in {city}"

def test_shared(cassette):
    assert get_weather.invoke({"city": "Paris"}) == "12C and sunny in Paris"

@pytest.mark.cassette(replay_tools=False)
def test_marker_wins(cassette):
    assert get_weather.invoke({"city": "Lima"}) == "12C and sunny in Lima"

class TestOwnConfig:
    @pytest.fixture(scope="class")
    def cassette_config(self):
        return {"replay_tools": False}

    def test_in_class(self, cassette):
        assert get_weather.invoke({"city": "Rome"}) == "12C and sunny in Rome"
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def test_a_conftest_cassette_config_sets_replay_tools_and_a_marker_overrides_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("CHAINCASSETTE_MODE", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_tools=TESTS)
    log = pytester.path / "ran.log"
    run(pytester, "--cassette-mode=once").assert_outcomes(passed=3)
    assert sorted(log.read_text().split()) == ["Lima", "Paris", "Rome"]  # recording runs them
    folder = pytester.path / "cassettes" / "test_tools"
    assert "kind: tool" in (folder / "test_shared.yaml").read_text()
    assert not (folder / "test_marker_wins.yaml").exists()  # no tool recorded: nothing to store
    log.unlink()
    for _ in range(2):
        run(pytester).assert_outcomes(passed=3)
    # replayed from the cassette where the config says so; run again where it was overridden
    assert log.read_text().split() == ["Lima", "Rome", "Lima", "Rome"]


def test_cassette_config_mode_and_options_apply_below_the_marker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("CHAINCASSETTE_MODE", raising=False)
    pytester.makepyfile(
        test_modes="""
        import pytest

        @pytest.fixture(scope="module")
        def cassette_config():
            return {"mode": "once", "format": "json"}

        def test_config_mode(cassette):
            assert cassette.mode.value == "once" and cassette.path.suffix == ".json"

        @pytest.mark.cassette(mode="replay", format="yaml")
        def test_marker_mode(cassette):
            assert cassette.mode.value == "replay" and cassette.path.suffix == ".yaml"
        """
    )
    run(pytester).assert_outcomes(passed=2)
    assert run(pytester, "--cassette-mode=record", "-k", "config_mode").ret == 1  # cli wins


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ('["replay_tools"]', "the cassette_config fixture must return a dict of cassette options"),
        (
            '{"replay_tool": True}',
            "the cassette_config fixture returned unknown option 'replay_tool'",
        ),
        ('{"name": "shared"}', "cassette_config cannot set 'name'"),
        ('{"mode": "sometimes"}', "the cassette_config fixture's 'mode': unknown record mode"),
    ],
)
def test_a_bad_cassette_config_is_a_usage_error_naming_it(
    pytester: pytest.Pytester, returned: str, message: str
) -> None:
    pytester.makepyfile(
        test_bad=f"""
        import pytest

        @pytest.fixture
        def cassette_config():
            return {returned}

        def test_it(cassette):
            pass
        """
    )
    result = run(pytester)
    assert result.ret != 0
    assert message in result.stdout.str() + result.stderr.str()
    assert "test_bad.py::test_it" in result.stdout.str() + result.stderr.str()


def test_prune_keeps_a_cassette_whose_format_came_from_cassette_config(
    pytester: pytest.Pytester,
) -> None:
    """The format is not known before the tests run: prune must not take it for an orphan."""
    from chaincassette.cli import main

    pytester.makepyfile(
        test_json="""
        import pytest

        @pytest.fixture(scope="module")
        def cassette_config():
            return {"format": "json"}

        def test_kept(cassette):
            pass

        def test_other(cassette):  # a cassette in use: the run writes its usage record
            pass
        """
    )
    kept = pytester.path / "cassettes" / "test_json" / "test_kept.json"
    kept.parent.mkdir(parents=True)
    kept.write_text('{"version": 2, "interactions": []}\n')
    orphan = kept.with_name("test_gone.json")
    orphan.write_text(kept.read_text())
    run(pytester, "-k", "other").assert_outcomes(passed=1, deselected=1)
    assert main(["prune", str(pytester.path)]) == 0
    assert kept.exists() and not orphan.exists()
