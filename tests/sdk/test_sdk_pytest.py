"""The pytest plugin and raw SDK calls (real pytest runs in subprocesses, ``pytester``): the
``cassette`` fixture records and replays them, and ``--cassette-block-live`` fails a test
whose SDK call no cassette serves, with the guard's message and no connection made."""

from __future__ import annotations

import pytest
from fakes.wire import FakeServer
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
    pytester: pytest.Pytester, fake: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    monkeypatch.setenv("FAKE_URL", fake.url)
    monkeypatch.setenv("FAKE_BASE", fake.base)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    return pytester


def test_the_guard_fails_raw_sdk_calls_outside_a_cassette(
    suite: pytest.Pytester, fake: FakeServer
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
    suite: pytest.Pytester, fake: FakeServer
) -> None:
    options = ("-p", "no:cacheprovider", "-p", "no:randomly", "-k", "with_cassette")
    suite.runpytest_subprocess(*options, "--cassette-mode=once").assert_outcomes(passed=1)
    assert fake.requests == 2
    replayed = suite.runpytest_subprocess(*options, "--cassette-block-live", "--cassette-strict")
    replayed.assert_outcomes(passed=1)
    assert fake.requests == 2
    cassettes = list(suite.path.glob("cassettes/**/*.yaml"))
    assert len(cassettes) == 1 and OPENAI_KEY not in cassettes[0].read_text()


#: A test that runs a pytest session in its own process first (``pytester.runpytest``, as a
#: plugin's tests do), then streams through ChatOpenAI and LlamaIndex's OpenAI in a block.
AFTER_AN_INNER_SESSION = """
import os
from langchain_openai import ChatOpenAI
from llama_index.core.llms import ChatMessage
from llama_index.llms.openai import OpenAI
from chaincassette import Cassette, use_cassette

def test_streams_after_an_in_process_session(pytester, tmp_path):
    pytester.makepyfile(test_inner="def test_inner(cassette):\\n    pass\\n")
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)
    url = os.environ["FAKE_URL"]
    with use_cassette(tmp_path / "after.yaml", mode="record"):
        assert list(ChatOpenAI(model="gpt-4o-mini", base_url=url, max_retries=0).stream("Hi"))
        llm = OpenAI(model="gpt-4o-mini", api_base=url, max_retries=0)
        assert list(llm.stream_chat([ChatMessage(role="user", content="Hi")]))
    cassette = Cassette(tmp_path / "after.yaml", mode="replay")
    assert [i.meta.get("framework") for i in cassette.interactions] == ["langchain", "llama_index"]
"""


def test_a_block_after_an_in_process_session_records_each_stream_once(
    suite: pytest.Pytester, fake: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The inner session imports the integrations and ``pytester`` forgets those modules
    after it; the block's streams are still recorded once each, by the framework's layer
    (the SDK underneath stays out), not a second time as ``openai.chat.completions``.

    A process of its own, where nothing imported the integrations before the inner session
    (in this one, earlier tests have); without the live-call guard, as this suite runs
    (``cassette_block_live = false``): a guarded test installs them before its fixtures."""
    suite.makepyfile(test_suite=AFTER_AN_INNER_SESSION)
    monkeypatch.delenv("CI", raising=False)  # the block records, as on a developer's machine
    options = ("-p", "pytester", "-p", "no:randomly", "--cassette-allow-live")
    result = suite.runpytest_subprocess(*options)
    result.assert_outcomes(passed=1)
    assert fake.requests == 2
