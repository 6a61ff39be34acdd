"""A field a model changes itself while it answers is its state, not what the model reads.

A chat model whose ``llm_string`` names no model is keyed by its own fields (ChatOllama,
key rules 2). LangChain's scripted fakes keep their place in the script in such a field
(``FakeListChatModel.i``): it moves on every live call, and never on replay, so it must
not be keyed, or every call after the first misses on replay.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    FakeMessagesListChatModel,
)
from langchain_core.messages import AIMessage

from chaincassette import Cassette, CassetteMiss, use_cassette


def _fake_list() -> FakeListChatModel:
    return FakeListChatModel(responses=["one", "two", "three"])


def _fake_messages() -> FakeMessagesListChatModel:
    return FakeMessagesListChatModel(responses=[AIMessage("one"), AIMessage("two")] * 2)


@pytest.mark.parametrize("make", [_fake_list, _fake_messages])
def test_a_scripted_fake_replays_every_call(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "fake.yaml"
    questions = ["a?", "b?", "c?"]
    with use_cassette(Cassette(path, mode="record")):
        model = make()
        recorded = [model.invoke(q).content for q in questions]
    for _ in range(2):  # a fresh model and cassette each time: the script starts over
        with use_cassette(Cassette(path, mode="replay")):
            model = make()
            assert [model.invoke(q).content for q in questions] == recorded
            assert model.i == 0  # replay never ran the model


def test_what_the_program_sets_on_the_model_is_still_keyed(tmp_path: Path) -> None:
    """Only what the model changed inside its own live call is state."""
    path = tmp_path / "fake.yaml"
    with use_cassette(Cassette(path, mode="record")):
        _fake_list().invoke("a?")
    with use_cassette(Cassette(path, mode="replay")):
        other = FakeListChatModel(responses=["one", "two", "three"], sleep=0.5)
        with pytest.raises(CassetteMiss, match="sleep"):
            other.invoke("a?")
