"""The live-call guard: real pytest runs (``pytester``, in subprocesses) of suites that call a
chat model, an embedding model and a LlamaIndex LLM with and without a cassette.

In replay mode (the default) a call no cassette serves fails its test with
``LiveCallBlocked``; recording modes call live as they always did; a test marked
``cassette_allow_live`` (or a run with ``--cassette-allow-live``) may call live.
"""

from __future__ import annotations

import pytest
from fakes.nowhere import DeadPort
from fakes.scripts import forecast
from fakes.wire import FakeServer

pytest_plugins = ["pytester"]

SUITE = """
import random
import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata

class Provider(Embeddings):
    model = "provider-embed"
    def embed_documents(self, texts):
        return [[random.random()] for _ in texts]
    def embed_query(self, text):
        return self.embed_documents([text])[0]

class Completer(CustomLLM):
    @property
    def metadata(self):
        return LLMMetadata()
    def complete(self, prompt, formatted=False, **kw):
        return CompletionResponse(text="live " + prompt)
    def stream_complete(self, prompt, formatted=False, **kw):
        raise NotImplementedError

def chat():
    return GenericFakeChatModel(messages=iter([AIMessage(content="hi")])).invoke("hello")

def test_chat_without_cassette():
    chat()

def test_embedding_without_cassette():
    Provider().embed_query("q")

def test_llama_index_without_cassette():
    Completer().complete("q")

def test_with_cassette(cassette):
    chat()
    Provider().embed_query("q")
    Completer().complete("q")

@pytest.mark.cassette_allow_live
def test_marked_live():
    chat()

def test_without_models():
    assert 1 + 1 == 2
"""

BLOCKED = [
    "*LiveCallBlocked: live chat model call (GenericFakeChatModel) outside a cassette "
    "in test test_suite.py::test_chat_without_cassette*",
    "*LiveCallBlocked: live embedding call (Provider.embed_query) outside a cassette "
    "in test test_suite.py::test_embedding_without_cassette*",
    "*LiveCallBlocked: live LLM call (Completer.complete) outside a cassette "
    "in test test_suite.py::test_llama_index_without_cassette*",
]


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester


def run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def test_recording_runs_call_live_as_before_and_replay_blocks_by_default(
    suite: pytest.Pytester,
) -> None:
    run(suite, "--cassette-mode=once").assert_outcomes(passed=6)
    replayed = run(suite)  # in file order: the lines below are matched in order
    replayed.assert_outcomes(passed=3, failed=3)
    replayed.stdout.fnmatch_lines(BLOCKED)
    replayed.stdout.fnmatch_lines(
        [
            "*The test has no cassette: first give it one (add the `cassette` fixture to its "
            "arguments, or @pytest.mark.cassette), then record it once: pytest "
            "test_suite.py::test_chat_without_cassette --cassette-mode=once (without a "
            "cassette that run calls the model and keeps nothing). A test meant to call the "
            "model live says so: @pytest.mark.cassette_allow_live (or run pytest "
            "--cassette-allow-live)*"
        ]
    )


def test_the_command_line_and_the_ini_setting_decide_for_a_run(suite: pytest.Pytester) -> None:
    without = ("-k", "not with_cassette")  # no recording needed: only the guard decides
    run(suite, *without, "--cassette-allow-live").assert_outcomes(passed=5, deselected=1)
    ini = "[pytest]\nasyncio_default_fixture_loop_scope = function\ncassette_block_live = {}\n"
    suite.makeini(ini.format("false"))
    run(suite, *without).assert_outcomes(passed=5, deselected=1)
    suite.makeini(ini.format("true"))  # in every mode, recording ones too
    run(suite, *without, "--cassette-mode=once").assert_outcomes(passed=2, failed=3, deselected=1)
    run(suite, *without, "--cassette-mode=once", "--cassette-allow-live").assert_outcomes(
        passed=5, deselected=1
    )


def test_a_refused_call_the_code_caught_and_one_in_a_fixture_still_fail(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_hidden="""
        import pytest
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage

        def ask():
            return GenericFakeChatModel(messages=iter([AIMessage(content="hi")])).invoke("q")

        def test_caught():
            try:
                ask()
            except Exception:
                pass  # like an agent that turns every error into a fallback answer

        @pytest.fixture
        def answer():
            return ask()

        def test_in_a_fixture(answer):
            assert answer
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*LiveCallBlocked raised during the test and caught by the code under test*",
            "*live chat model call (GenericFakeChatModel) outside a cassette in test "
            "test_hidden.py::test_caught*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*LiveCallBlocked: live chat model call*in test test_hidden.py::test_in_a_fixture*"]
    )


REAL_CLIENT = """
import os
import pytest
from langchain_openai import ChatOpenAI

model = ChatOpenAI(model="gpt-4o-mini", base_url=os.environ["PROVIDER_URL"], max_retries=0)

def test_forgot_the_cassette():
    assert model.invoke("Weather in Oslo?").content

@pytest.mark.cassette_allow_live
def test_meant_to_call_live():
    assert model.invoke("Weather in Oslo?").content == "You asked: Weather in Oslo?"
"""


def test_a_real_client_without_a_cassette_opens_no_connection_unless_marked_live(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langchain_openai")
    pytester.makepyfile(test_agent=REAL_CLIENT)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the client starts on the placeholder
    monkeypatch.delenv("CI", raising=False)
    with DeadPort() as dead:
        monkeypatch.setenv("PROVIDER_URL", dead.url + "/v1")
        blocked = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "-p", "no:randomly", "-k", "forgot"
        )
        accepted = dead.accepted
    blocked.assert_outcomes(failed=1, deselected=1)
    blocked.stdout.fnmatch_lines(
        [
            "*LiveCallBlocked: live chat model call (ChatOpenAI) outside a cassette in test "
            "test_agent.py::test_forgot_the_cassette*pytest test_agent.py::test_forgot_the_cassette "
            "--cassette-mode=once*"
        ]
    )
    assert accepted == 0  # refused before the client opened a socket
    with FakeServer(forecast) as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-live-test-" + "x" * 24)
        allowed = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "-p", "no:randomly", "-k", "meant"
        )
        calls = provider.requests
    allowed.assert_outcomes(passed=1, deselected=1)
    assert calls == 1


def test_a_recording_run_names_the_tests_whose_live_calls_no_cassette_kept(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pytest <test> --cassette-mode=once`` on a test that has no cassette calls the model
    (the guard is off while recording) and keeps nothing: the summary says so, per test, and
    counts one call per model call (the SDK underneath the framework is not counted again)."""
    pytest.importorskip("langchain_openai")
    pytester.makepyfile(test_agent=REAL_CLIENT)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    monkeypatch.delenv("CI", raising=False)
    with FakeServer(forecast) as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-live-test-" + "x" * 24)
        recording = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "-p", "no:randomly", "--cassette-mode=once"
        )
        calls = provider.requests
    recording.assert_outcomes(passed=2)
    assert calls == 2
    recording.stdout.fnmatch_lines(
        [
            "*not recorded: 1 model call went live outside every cassette in 1 test; give each "
            "the `cassette` fixture (or @pytest.mark.cassette), then record it:",
            "  test_agent.py::test_forgot_the_cassette (1 call)",
        ]
    )
    assert "test_meant_to_call_live (" not in recording.stdout.str()  # it says it calls live
    assert not list(pytester.path.rglob("*.yaml"))


HINT_START = "The test has no cassette: first give it one"


def test_the_guard_says_what_to_do_once_and_the_summary_names_the_call(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure shows the hint; the short summary (which CI prints untruncated) names the
    refused call only: the hint, a paragraph, was printed in both. A fixture's refused call
    (a setup error) reads the same way."""
    suite.makepyfile(
        test_fixture="""
        import pytest
        from test_suite import chat

        @pytest.fixture
        def answer():
            return chat()

        def test_in_a_fixture(answer):
            assert answer
        """
    )
    monkeypatch.setenv("CI", "true")
    result = run(suite, "test_suite.py::test_chat_without_cassette", "test_fixture.py")
    result.assert_outcomes(failed=1, errors=1)
    out = result.stdout.str()
    assert out.count(HINT_START) == 2, out  # one per test
    result.stdout.fnmatch_lines(
        [
            "FAILED test_suite.py::test_chat_without_cassette - LiveCallBlocked: live chat "
            "model call (GenericFakeChatModel) outside a cassette in test "
            "test_suite.py::test_chat_without_cassette: the live-call guard is on",
            "ERROR test_fixture.py::test_in_a_fixture - LiveCallBlocked: live chat model call "
            "(GenericFakeChatModel) outside a cassette in test "
            "test_fixture.py::test_in_a_fixture: the live-call guard is on",
        ]
    )
