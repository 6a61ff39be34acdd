"""``--cassette-block-live``: real pytest runs (``pytester``, in subprocesses) of a suite that
calls a chat model, an embedding model and a LlamaIndex LLM with and without a cassette."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import random
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

def test_without_models():
    assert 1 + 1 == 2
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester


def test_off_by_default_live_calls_pass(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "--cassette-mode=once")
    result.assert_outcomes(passed=5)


def test_on_a_call_outside_a_cassette_fails_the_test_naming_it(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess(  # in file order: the lines below are matched in order
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--cassette-mode=once",
        "--cassette-block-live",
    )
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*LiveCallBlocked: live chat model call (GenericFakeChatModel) outside a cassette "
            "in test test_suite.py::test_chat_without_cassette*",
            "*LiveCallBlocked: live embedding call (Provider.embed_query) outside a cassette "
            "in test test_suite.py::test_embedding_without_cassette*",
            "*LiveCallBlocked: live LLM call (Completer.complete) outside a cassette "
            "in test test_suite.py::test_llama_index_without_cassette*",
        ]
    )
    result.stdout.fnmatch_lines(["*pytest --cassette-mode=once test_suite.py::test_*"])


def test_the_ini_setting_turns_it_on_and_the_command_line_off(suite: pytest.Pytester) -> None:
    suite.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\ncassette_block_live = true\n"
    )
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "--cassette-mode=once")
    result.assert_outcomes(passed=2, failed=3)
    allowed = suite.runpytest_subprocess(
        "-p", "no:cacheprovider", "--cassette-mode=once", "--cassette-allow-live"
    )
    allowed.assert_outcomes(passed=5)
