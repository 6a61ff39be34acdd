"""``fault`` on a cassette recorded through the LangChain integration: what it writes verifies
and replays the error, without a trace divergence."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda

from chaincassette import storage, use_cassette
from chaincassette.cli import main
from chaincassette.trace import TraceDivergenceWarning


def ask_twice() -> list[str]:
    """Two chain runs, each ending in a model call: the recording has a trace of both."""
    model = GenericFakeChatModel(messages=iter([AIMessage("hi"), AIMessage("there")]))
    chain = RunnableLambda(lambda question: question) | model
    return [str(chain.invoke(question).content) for question in ("hello", "again")]


def type_name(error: BaseException) -> str:
    """``module.Class`` of the recorded error, rebuilt or a look-alike of it."""
    return getattr(error, "type_name", "") or f"{type(error).__module__}.{type(error).__name__}"


@pytest.mark.parametrize("insert", [False, True], ids=["replaced", "inserted"])
def test_a_faulted_cassette_verifies_and_replays_the_error_without_a_trace_divergence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], insert: bool
) -> None:
    path = tmp_path / "cassettes" / "agent.yaml"
    with use_cassette(path, mode="record"):
        assert ask_twice() == ["hi", "there"]
    recorded = storage.read(path, "yaml")
    assert recorded is not None and recorded.trace  # the recording run's path, to go stale
    fault = ["fault", str(path), "-n", "1", "--error", "rate_limit"]
    assert main(fault + (["--insert"] if insert else [])) == 0
    capsys.readouterr()

    assert main(["verify", str(path)]) == 0
    assert "1 cassette checked: 0 problems, 0 warnings" in capsys.readouterr().out
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with use_cassette(path, mode="replay"), pytest.raises(Exception) as raised:
            ask_twice()
    assert type_name(raised.value) == "openai.RateLimitError"
    assert "Error code: 429" in str(raised.value)
    diverged = [str(w.message) for w in caught if issubclass(w.category, TraceDivergenceWarning)]
    assert diverged == []
