"""The pytest plugin and raw SDK calls (real pytest runs in subprocesses, ``pytester``): the
``cassette`` fixture records and replays them, and ``--cassette-block-live`` fails a test
whose SDK call no cassette serves, with the guard's message and no connection made."""

from __future__ import annotations

import pytest
from fake_wire import FakeWire
from sdk_clients import ANTHROPIC_KEY, OPENAI_KEY

pytest_plugins = ["pytester"]

SUITE = """
import os
import anthropic
import openai

ASK = [{"role": "user", "content": "What is Docker?"}]

def ask_openai():
    client = openai.OpenAI(base_url=os.environ["FAKE_URL"])
    return client.chat.completions.create(model="gpt-4o-mini", messages=ASK)

def ask_anthropic():
    client = anthropic.Anthropic(base_url=os.environ["FAKE_BASE"])
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=ASK)

def test_openai_without_cassette():
    ask_openai()

def test_anthropic_without_cassette():
    ask_anthropic()

def test_with_cassette(cassette):
    assert ask_openai().choices[0].message.content == "Echo: What is Docker?"
    assert ask_anthropic().content[0].text == "Echo: What is Docker?"
    assert cassette.stats.interactions == 2
"""


@pytest.fixture
def suite(
    pytester: pytest.Pytester, fake: FakeWire, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    monkeypatch.setenv("FAKE_URL", fake.url)
    monkeypatch.setenv("FAKE_BASE", fake.base)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    return pytester


def test_the_guard_fails_raw_sdk_calls_outside_a_cassette(
    suite: pytest.Pytester, fake: FakeWire
) -> None:
    result = suite.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--cassette-mode=once",
        "--cassette-block-live",
        "-k",
        "without",
    )
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*LiveCallBlocked: live openai SDK call (POST /v1/chat/completions) outside a "
            "cassette in test test_suite.py::test_openai_without_cassette*",
            "*LiveCallBlocked: live anthropic SDK call (POST /v1/messages) outside a cassette "
            "in test test_suite.py::test_anthropic_without_cassette*",
        ]
    )
    assert "APIConnectionError" not in result.stdout.str()
    assert fake.connections == 0 and fake.requests == 0


def test_the_fixture_records_then_replays_raw_sdk_calls(
    suite: pytest.Pytester, fake: FakeWire
) -> None:
    options = ("-p", "no:cacheprovider", "-p", "no:randomly", "-k", "with_cassette")
    suite.runpytest_subprocess(*options, "--cassette-mode=once").assert_outcomes(passed=1)
    assert fake.requests == 2
    replayed = suite.runpytest_subprocess(*options, "--cassette-block-live", "--cassette-strict")
    replayed.assert_outcomes(passed=1)
    assert fake.requests == 2
    cassettes = list(suite.path.glob("cassettes/**/*.yaml"))
    assert len(cassettes) == 1 and OPENAI_KEY not in cassettes[0].read_text()
