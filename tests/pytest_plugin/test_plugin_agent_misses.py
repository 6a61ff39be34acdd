"""Real pytest runs of a LangGraph agent: each kind of miss gets the hint that fixes it, and
is reported as one short failure (no framework traceback unless ``--tb=long``).

The agent is LangGraph's ``create_react_agent`` on the fake provider of the LangChain tests
(random ids, timestamps and usage, like a real one): it calls ``get_weather``, then
``get_time``, then answers. Environment variables change the program between runs the
way a developer would: the system prompt, the temperature, a tool that reads the clock,
a follow-up question.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("langgraph") is None
    or importlib.util.find_spec("langchain_core") is None,
    reason="needs LangGraph",
)

FAKE_PROVIDER = Path(__file__).parents[1] / "langchain" / "fake_provider.py"


@pytest.fixture(autouse=True, scope="module")
def _frameworks_imported_once() -> None:
    """Inline pytest runs forget the modules they imported; import the heavy ones here once."""
    importlib.import_module("langgraph.prebuilt")
    importlib.import_module("chaincassette.integrations.langchain")


AGENT = '''
import os, time
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
    return f"{time.time_ns()} ns" if os.environ.get("LIVE_CLOCK") else "09:00 " + tz


@pytest.mark.filterwarnings("ignore:.*create_react_agent.*")
MARKER
def test_agent(cassette):
    model = FakeProviderChat(scenario="react", temperature=float(os.environ.get("TEMPERATURE", "0")))
    prompt = os.environ.get("PROMPT", "You are a weather assistant.")
    agent = create_react_agent(model, [get_weather, get_time], prompt=prompt)
    result = agent.invoke({"messages": [("user", "Weather and time in Paris?")]})
    if os.environ.get("FOLLOW_UP"):
        result = agent.invoke({"messages": [*result["messages"], ("user", "And tomorrow?")]})
    assert result["messages"][-1].content
'''


@pytest.fixture
def agent(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project with the agent test, recorded once (``--cassette-mode=once``)."""
    for name in ("PROMPT", "TEMPERATURE", "LIVE_CLOCK", "FOLLOW_UP", "CI", "CHAINCASSETTE_MODE"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(fake_provider=FAKE_PROVIDER.read_text())
    pytester.syspathinsert()
    write_agent(pytester)
    pytester.runpytest("--cassette-mode=once").assert_outcomes(passed=1)
    pytester.runpytest().assert_outcomes(passed=1)  # replays
    return pytester


def write_agent(pytester: pytest.Pytester, marker: str = "") -> None:
    pytester.makepyfile(test_agent=AGENT.replace("MARKER", marker))


def run(pytester: pytest.Pytester, *args: str, **env: str) -> pytest.RunResult:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        return pytester.runpytest(*args)


def test_a_changed_prompt_is_one_short_failure_that_says_re_record_this_test(
    agent: pytest.Pytester,
) -> None:
    # counted without pytest-randomly, which this suite uses: its header line is not ours
    changed = run(agent, "-p", "no:randomly", PROMPT="You are a terse weather assistant.")
    changed.assert_outcomes(failed=1)
    out = changed.stdout.str()
    lines = out.rstrip("\n").splitlines()
    failure = lines[next(i for i, line in enumerate(lines) if "FAILURES" in line) :]
    print(f"whole output: {len(lines)} lines; from FAILURES on: {len(failure)} lines\n{out}")
    assert len(lines) <= 25
    assert "Traceback" not in out and "During task" not in out and "report_miss" not in out
    changed.stdout.fnmatch_lines(
        [
            "*_ test_agent _*",
            "CassetteMiss: no recording matches this request in *test_agent.yaml*",
            "*(system).content: You are a weather assistant. → You are a terse weather*",
            "*re-record this cassette*: pytest test_agent.py::test_agent --cassette-mode=record",
            "  test: test_agent.py::test_agent",
            "  cassette: cassettes/test_agent/test_agent.yaml (the full traceback: pytest --tb=long)",
        ]
    )
    assert out.count("no recording matches this request") == 1  # not repeated in the summary
    long = run(agent, "--tb=long", PROMPT="You are a terse weather assistant.")
    assert "report_miss" in long.stdout.str() or "Traceback" in long.stdout.str()

    # following the hint leaves nothing behind: strict mode passes right after it
    run(agent, "test_agent.py::test_agent", "--cassette-mode=record", PROMPT="Be terse.")
    run(agent, "--cassette-strict", PROMPT="Be terse.").assert_outcomes(passed=1)


def test_a_tool_result_that_changes_every_run_hints_replay_tools(agent: pytest.Pytester) -> None:
    run(agent, "--cassette-mode=record", LIVE_CLOCK="1").assert_outcomes(passed=1)
    clock = run(agent, LIVE_CLOCK="1")
    clock.assert_outcomes(failed=1)
    clock.stdout.fnmatch_lines(
        [
            "*(tool).content: * ns → * ns",
            "*only a tool result differs*: @pytest.mark.cassette(replay_tools=True)*",
        ]
    )
    write_agent(agent, "@pytest.mark.cassette(replay_tools=True)")
    unrecorded = run(agent, LIVE_CLOCK="1")
    unrecorded.assert_outcomes(failed=1)
    unrecorded.stdout.fnmatch_lines(
        ["*recorded without their results; re-record it once with replay_tools=True: pytest *"]
    )
    run(agent, "--cassette-mode=record", LIVE_CLOCK="1").assert_outcomes(passed=1)
    run(agent, LIVE_CLOCK="1").assert_outcomes(passed=1)
    run(agent, "--cassette-strict", LIVE_CLOCK="1").assert_outcomes(passed=1)


def test_a_changed_sampling_parameter_is_named(agent: pytest.Pytester) -> None:
    warmer = run(agent, TEMPERATURE="0.7")
    warmer.assert_outcomes(failed=1)
    warmer.stdout.fnmatch_lines(
        [
            "*params.temperature: added 0.7",
            "*only the sampling parameter params.temperature differs*--cassette-mode=record*"
            "ignore=?'params.temperature'?*",
        ]
    )


def test_a_new_call_hints_new_episodes(agent: pytest.Pytester) -> None:
    more = run(agent, FOLLOW_UP="1")
    more.assert_outcomes(failed=1)
    more.stdout.fnmatch_lines(
        [
            "*(user): added And tomorrow?",
            "*a call the recording does not have*: pytest test_agent.py::test_agent "
            "--cassette-mode=new_episodes",
        ]
    )
    run(agent, "--cassette-mode=new_episodes", FOLLOW_UP="1").assert_outcomes(passed=1)
    run(agent, "--cassette-strict", FOLLOW_UP="1").assert_outcomes(passed=1)


def test_strict_unused_and_prune_agree_after_the_failing_run(agent: pytest.Pytester) -> None:
    run(agent, "--cassette-mode=new_episodes", FOLLOW_UP="1").assert_outcomes(passed=1)
    strict = run(agent, "--cassette-strict")  # the follow-up is gone: its recording is unused
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["*1 of 4 interactions in *test_agent.yaml were never played*"])
    pruned = subprocess.run(
        [sys.executable, "-m", "chaincassette", "prune", "--dry-run"],
        cwd=agent.path,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "FOLLOW_UP"},
    )
    assert "would remove 1 unused interaction from" in pruned.stdout, pruned.stdout + pruned.stderr


def test_a_corrupt_cassette_is_one_failure(agent: pytest.Pytester) -> None:
    path = agent.path / "cassettes" / "test_agent" / "test_agent.yaml"
    path.write_text("version: 1\ninteractions: [oops\n")
    result = run(agent)
    result.assert_outcomes(failed=1)  # not "1 failed, 1 error"
    result.stdout.fnmatch_lines(["CassetteFormatError: cannot read cassette *test_agent.yaml*"])


def test_the_mode_header_shows_under_q_when_ci_refused_a_mode(agent: pytest.Pytester) -> None:
    result = run(agent, "-q", CI="1", CHAINCASSETTE_MODE="once", PROMPT="Changed.")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["chaincassette: mode replay (env); 'once' refused because CI is set*"]
    )
    quiet_pass = run(agent, "-q")
    assert "refused" not in quiet_pass.stdout.str()
