"""A field a model changes itself while it answers is its state, not what the model reads.

A chat model whose ``llm_string`` names no model is keyed by its own fields (ChatOllama,
key rules 2). LangChain's scripted fakes keep their place in the script in such a field
(``FakeListChatModel.i``): it moves on every live call, and never on replay, so it is not
keyed. A fake of the program's own is keyed by all its fields, whatever the process did
before: its counter gives a miss that names the field to ignore.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from langchain_core.language_models.chat_models import SimpleChatModel
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    FakeMessagesListChatModel,
)
from langchain_core.messages import AIMessage
from pydantic import Field

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


class CountingFake(SimpleChatModel):
    """A program's own scripted fake that counts its calls in a field of its own."""

    replies: list[str]
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "counting-fake"

    def _call(self, *args: object, **kwargs: object) -> str:
        reply = self.replies[self.calls]
        self.calls += 1
        return reply


def test_a_fake_of_ones_own_that_counts_its_calls_misses_naming_the_field(tmp_path: Path) -> None:
    """Keys do not depend on what the process did before: the counter is a field like any
    other, so the second call misses and the miss says which field to ignore."""
    path = tmp_path / "counting.yaml"
    with use_cassette(Cassette(path, mode="record")):
        model = CountingFake(replies=["one", "two"])
        model.invoke("a?")
        model.invoke("b?")
    with use_cassette(Cassette(path, mode="replay")):
        model = CountingFake(replies=["one", "two"])
        assert model.invoke("a?").content == "one"
        with pytest.raises(CassetteMiss, match=r"ignore=\['params.calls'\]"):
            model.invoke("b?")
    ignored = tmp_path / "ignored.yaml"
    for mode in ("record", "replay"):  # what a key leaves out, it leaves out when recorded too
        with use_cassette(Cassette(ignored, mode=mode, ignore=["params.calls"])):
            model = CountingFake(replies=["one", "two"])
            assert [model.invoke(q).content for q in ("a?", "b?")] == ["one", "two"]


class SessionFake(SimpleChatModel):
    """A program's own model that names each instance with a fresh id, as many clients do."""

    session_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    settings: dict[str, str] = Field(default_factory=dict)

    @property
    def _llm_type(self) -> str:
        return "session-fake"

    def _call(self, messages: object, *args: object, **kwargs: object) -> str:
        return f"{self.session_id[:4]}:{len(str(messages))}"


def test_a_field_whose_default_is_new_for_each_instance_is_not_keyed(tmp_path: Path) -> None:
    """A default factory that gives every instance its own value (an id) is not what the model
    reads: keyed, a model of its class would never replay in another process."""
    path = tmp_path / "session.yaml"
    with use_cassette(Cassette(path, mode="record")):
        recorded = SessionFake().invoke("a?").content
    for _ in range(2):
        with use_cassette(Cassette(path, mode="replay")):
            assert SessionFake().invoke("a?").content == recorded


def test_a_per_instance_field_the_program_sets_and_a_filled_default_are_keyed(
    tmp_path: Path,
) -> None:
    """What the program passes is keyed even where the default would be a fresh value, and a
    default factory that always gives the same value keys what the model holds."""
    path = tmp_path / "session.yaml"
    with use_cassette(Cassette(path, mode="record")):
        SessionFake(session_id="s1", settings={"tone": "dry"}).invoke("a?")
    with use_cassette(Cassette(path, mode="replay")):
        assert SessionFake(session_id="s1", settings={"tone": "dry"}).invoke("a?").content
        with pytest.raises(CassetteMiss, match="session_id"):
            SessionFake(session_id="s2", settings={"tone": "dry"}).invoke("a?")
        filled = SessionFake(session_id="s1")
        filled.settings["tone"] = "wet"  # a default filled in place, not through the constructor
        with pytest.raises(CassetteMiss, match="tone"):
            filled.invoke("a?")
