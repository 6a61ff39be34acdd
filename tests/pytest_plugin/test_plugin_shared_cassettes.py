"""Tests that share one cassette (``@pytest.mark.cassette("shared/agent")``), in real pytest runs.

Two LangGraph agent tests on the fake provider of the LangChain tests (random ids,
timestamps, usage) name the same cassette and ask different questions. ``once`` records the
cassette with every test of the run that creates it; the file holds one trace, the last
test's, so the other test's replay must not be reported as a divergence; and a miss in one
of them must hint a command that records the cassette with every test naming it (one test
alone in ``record`` mode would rewrite the file with its calls only).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shlex
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("langgraph") is None
    or importlib.util.find_spec("langchain_core") is None,
    reason="needs LangGraph",
)

FAKE_PROVIDER = Path(__file__).parents[1] / "langchain" / "fake_provider.py"

SHARED = '''
import pytest
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from fake_provider import FakeProviderChat


@tool
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"12C and sunny in {city}"


@tool
def get_time(tz: str) -> str:
    """The current time in a time zone."""
    return "09:00 " + tz


import os


def ask(question):
    agent = create_react_agent(FakeProviderChat(scenario="react"), [get_weather, get_time])
    return agent.invoke({"messages": [("user", question)]})["messages"][-1].content


@pytest.mark.filterwarnings("ignore:.*create_react_agent.*")
@pytest.mark.cassette("shared/agent")
def test_paris(cassette):
    assert ask("Weather and time in Paris?")


@pytest.mark.filterwarnings("ignore:.*create_react_agent.*")
@pytest.mark.cassette("shared/agent")
def test_lima(cassette):
    assert ask(os.environ.get("LIMA_QUESTION", "Weather and time in Lima?"))
'''


@pytest.fixture(autouse=True, scope="module")
def _frameworks_imported_once() -> None:
    """Inline pytest runs forget the modules they imported; import the heavy ones here once."""
    importlib.import_module("langgraph.prebuilt")
    importlib.import_module("chaincassette.integrations.langchain")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(fake_provider=FAKE_PROVIDER.read_text(), test_shared=SHARED)
    pytester.syspathinsert()
    return pytester


def replays_quietly(project: pytest.Pytester) -> None:
    """Plain ``pytest`` replays both tests, without a divergence warning, twice."""
    for _ in range(2):
        replay = project.runpytest("-p", "no:randomly")
        replay.assert_outcomes(passed=2)
        assert "TraceDivergenceWarning" not in replay.stdout.str()
        assert "diverged" not in replay.stdout.str()


def test_tests_sharing_a_cassette_replay_without_a_divergence_warning(
    project: pytest.Pytester,
) -> None:
    project.runpytest("-p", "no:randomly", "--cassette-mode=record").assert_outcomes(passed=2)
    (cassette,) = project.path.rglob("agent.yaml")
    assert cassette.read_text().count("Weather and time in") == 2  # both tests' calls
    replays_quietly(project)


def test_once_records_a_shared_cassette_with_every_test_of_the_run_that_creates_it(
    project: pytest.Pytester,
) -> None:
    project.runpytest("-p", "no:randomly", "--cassette-mode=once").assert_outcomes(passed=2)
    (cassette,) = project.path.rglob("agent.yaml")
    assert cassette.read_text().count("Weather and time in") == 2
    replays_quietly(project)
    with pytest.MonkeyPatch.context() as env:  # a later run: the file is there, once replays
        env.setenv("LIMA_QUESTION", "Weather and time in Lima tomorrow?")
        later = project.runpytest("-p", "no:randomly", "--cassette-mode=once")
    later.assert_outcomes(passed=1, failed=1)
    assert cassette.read_text().count("Weather and time in") == 2


def test_a_miss_in_a_shared_cassette_hints_recording_it_with_every_test_naming_it(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest("-p", "no:randomly", "--cassette-mode=once").assert_outcomes(passed=2)
    monkeypatch.setenv("LIMA_QUESTION", "Weather and time in Lima tomorrow?")
    changed = project.runpytest("-p", "no:randomly")
    changed.assert_outcomes(passed=1, failed=1)
    (hint,) = re.findall(
        r"(pytest test_shared\.py::\S+ .*--cassette-mode=\w+)", changed.stdout.str()
    )
    assert "test_shared.py::test_paris" in hint and "test_shared.py::test_lima" in hint
    project.runpytest("-p", "no:randomly", *shlex.split(hint)[1:]).assert_outcomes(passed=2)
    replays_quietly(project)
    assert os.environ["LIMA_QUESTION"].endswith("tomorrow?")  # replayed the changed program
