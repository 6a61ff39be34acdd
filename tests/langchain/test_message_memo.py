"""Chat calls keyed without LangChain's ``dumps`` of the whole conversation.

While a cassette serves a chat model, LangChain's cache step (which serializes every
message to ask a cache that would only step aside) is skipped, and each message's
canonical form is kept per message object (``integrations/langchain/messages.py``).
These tests hold both to the old path: the same canonical messages, the same keys
whichever layer computes them, and a message changed in place is read again.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from fake_provider import FakeProviderChat
from langchain_core.globals import set_llm_cache
from langchain_core.language_models import chat_models
from langchain_core.load import dumps
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from lc_programs import QUESTION, messages_summary, react_agent

from chaincassette import use_cassette
from chaincassette.integrations.langchain import CassetteCache
from chaincassette.integrations.langchain.boundary import _dumps_without_ids
from chaincassette.integrations.langchain.messages import canonical_message
from chaincassette.integrations.langchain.requests import (
    build_request,
    chat_request,
    message_from_lc,
)

LLM_STRING = '{"id": ["x", "Chat"], "kwargs": {"model": "m"}}---[("stop", None)]'


class Mood(str, Enum):
    CALM = "calm"


class Artifact:
    """A tool artifact that is no JSON: its message is read afresh at every call."""


def reference(message: BaseMessage) -> dict[str, Any]:
    return message_from_lc(json.loads(dumps(message)))


def every_kind_of_message() -> list[BaseMessage]:
    return [
        SystemMessage("You are terse."),
        HumanMessage("hi", name="ada", id="run-1"),
        HumanMessage(content=[{"type": "text", "text": "look", "id": "lc_abc"}, "plain"]),
        AIMessage(
            content="",
            tool_calls=[{"name": "lookup", "args": {"n": 1, "x": 1.5, "ok": True}, "id": "c1"}],
            invalid_tool_calls=[{"name": "bad", "args": "{", "id": "c2", "error": "json"}],
            additional_kwargs={"refusal": None, "nested": {"lc": 1, "type": "user data"}},
            response_metadata={"system_fingerprint": "fp_9"},
            usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
            id="chatcmpl-1",
        ),
        AIMessageChunk(content="part", id="run-2"),
        ToolMessage("7 km", tool_call_id="c1", status="error", artifact=Artifact()),
        ToolMessage([{"type": "text", "text": "ok"}], tool_call_id="c1", name="lookup"),
        ChatMessage(role="critic", content="too long"),
        FunctionMessage(name="f", content="{}"),
        HumanMessage("mood", additional_kwargs={"mood": Mood.CALM, "tuple": (1, 2)}),
        HumanMessage("extra field", custom_field={"a": [1, 2.0]}),
    ]


@pytest.mark.parametrize("message", every_kind_of_message(), ids=lambda m: type(m).__name__)
def test_a_message_reads_as_langchains_dumps_reads_the_first_and_every_later_time(
    message: BaseMessage,
) -> None:
    assert canonical_message(message) == reference(message)
    assert canonical_message(message) == reference(message)


def test_a_request_built_from_kept_messages_is_the_request_built_from_dumps() -> None:
    messages = every_kind_of_message()
    for stream in (False, True):
        kept = [canonical_message(m) for m in messages]
        built = build_request(_dumps_without_ids(messages), LLM_STRING, stream=stream)
        assert chat_request(kept, LLM_STRING, stream=stream) == built  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.tool_calls[0]["args"].__setitem__("n", 1.0),  # 1 -> 1.0
        lambda m: m.tool_calls[0]["args"].__setitem__("n", True),  # 1 -> True
        lambda m: m.tool_calls[0]["args"].__setitem__("x", -0.0),
        lambda m: m.tool_calls[0]["args"].__setitem__("x", float("nan")),
        lambda m: m.tool_calls.append({"name": "more", "args": {}, "id": "c9"}),
        lambda m: setattr(m, "content", "now with text"),
        lambda m: m.additional_kwargs.__setitem__("reasoning", "think"),
        lambda m: m.additional_kwargs.__setitem__("inner", {"lc": 2}),
        lambda m: setattr(m, "name", "agent_b"),
        lambda m: setattr(m, "id", "chatcmpl-2"),  # not read: still exact
    ],
)
def test_a_message_changed_in_place_is_read_again(change: Any) -> None:
    message = AIMessage(
        content="", tool_calls=[{"name": "lookup", "args": {"n": 1, "x": 0.0}, "id": "c1"}]
    )
    assert canonical_message(message) == reference(message)
    change(message)
    after = canonical_message(message)
    expected = reference(message)
    assert json.dumps(after, sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_a_message_with_a_field_that_is_no_json_is_read_afresh_each_time() -> None:
    artifact = Artifact()
    message = ToolMessage("7 km", tool_call_id="c1", artifact=artifact)
    first = canonical_message(message)
    message.content = "8 km"  # an edit a kept copy would have missed had it been kept
    assert canonical_message(message) == reference(message) != first


# -- end to end: the cache step is skipped, keys are those of the cache path ------------------


def dumps_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count LangChain's ``dumps`` of a conversation in its cache step."""
    calls: list[int] = []
    real = chat_models.dumps

    def counted(obj: Any, **kwargs: Any) -> str:
        calls.append(len(obj) if isinstance(obj, list) else 1)
        return real(obj, **kwargs)

    monkeypatch.setattr(chat_models, "dumps", counted)
    return calls


def run_agent() -> Any:
    return messages_summary(react_agent().invoke({"messages": [("user", QUESTION)]})["messages"])


def test_a_use_cassette_replay_never_serializes_the_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_langchain_state: list[str]
) -> None:
    path = tmp_path / "agent.yaml"
    with use_cassette(path, mode="all"):
        recorded = run_agent()
    assert clean_langchain_state  # the provider answered the recording
    clean_langchain_state.clear()
    calls = dumps_calls(monkeypatch)
    for _ in range(2):
        with use_cassette(path, mode="replay") as cassette:
            assert run_agent() == recorded
        assert cassette.stats.replayed == 3 and cassette.stats.missed == 0
    assert calls == [] and clean_langchain_state == []


def test_a_global_cassette_cache_replay_never_serializes_the_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_langchain_state: list[str]
) -> None:
    path = tmp_path / "agent.yaml"
    with CassetteCache(path, mode="all") as cache:
        set_llm_cache(cache)
        recorded = run_agent()
    set_llm_cache(None)
    clean_langchain_state.clear()
    calls = dumps_calls(monkeypatch)
    with CassetteCache(path, mode="replay") as cache:
        set_llm_cache(cache)
        assert run_agent() == recorded
        assert cache.cassette is not None and cache.cassette.stats.replayed == 3
    assert calls == [] and clean_langchain_state == []


def test_keys_are_the_same_whether_langchains_cache_step_ran_or_not(
    tmp_path: Path, clean_langchain_state: list[str]
) -> None:
    """Recorded where the cache step is skipped, replayed where it runs (the model's own
    cache: LangChain serializes the conversation and hands it over), and back."""
    question = [HumanMessage("What is the weather in Paris?")]
    skipped = tmp_path / "skipped.yaml"
    with use_cassette(skipped, mode="all"):
        answer = FakeProviderChat(scenario="chat").invoke(question).content
    clean_langchain_state.clear()
    with CassetteCache(skipped, mode="replay") as cache:
        model = FakeProviderChat(scenario="chat", cache=cache)
        assert model.invoke(question).content == answer
    ran = tmp_path / "ran.yaml"
    with CassetteCache(ran, mode="all") as cache:
        answer = FakeProviderChat(scenario="chat", cache=cache).invoke(question).content
    clean_langchain_state.clear()
    with use_cassette(ran, mode="replay"):
        assert FakeProviderChat(scenario="chat").invoke(question).content == answer
    assert clean_langchain_state == []


def test_a_model_that_asks_for_the_global_cache_still_finds_it(
    tmp_path: Path, clean_langchain_state: list[str]
) -> None:
    """``cache=True`` fails without a global cache, so the step is not skipped for it."""
    path = tmp_path / "c.yaml"
    with use_cassette(path, mode="all"):
        answer = FakeProviderChat(scenario="chat", cache=True).invoke("hello").content
    clean_langchain_state.clear()
    with use_cassette(path, mode="replay"):
        assert FakeProviderChat(scenario="chat", cache=True).invoke("hello").content == answer
    assert clean_langchain_state == []


def answer(n: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"n": n}, "id": "c1"}])


def test_a_new_message_with_the_fields_of_an_earlier_one_takes_its_form() -> None:
    """The next run of a program builds new message objects with the same fields: their
    form is kept by content, and exactly (1, 1.0 and True are three contents)."""
    first = canonical_message(answer(1))
    assert canonical_message(answer(1)) is first
    for other in (1.0, True, 2):
        form = canonical_message(answer(other))
        assert form is not first
        assert json.dumps(form, sort_keys=True) == json.dumps(
            reference(answer(other)), sort_keys=True
        )


def test_a_message_with_extra_attributes_never_takes_a_kept_form() -> None:
    """Forms are shared by content only where the class's watched fields are all there
    is: attributes the class does not declare go through LangChain's own ``to_json``."""
    plain = HumanMessage("same words")
    extra = HumanMessage("same words", custom_field={"a": 1})
    kept = canonical_message(plain)
    assert canonical_message(HumanMessage("same words")) is kept
    form = canonical_message(extra)
    assert form is not kept and form == reference(extra)


def test_a_form_computed_while_its_message_changed_is_not_kept_for_the_old_fields(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another thread changes the message between the read of its fields and the form:
    that form is not the old fields' one, so no later message with those fields gets it."""
    from chaincassette.integrations.langchain import messages

    changing = answer("before the change")
    original = messages.message_from_lc

    def changed_meanwhile(serialized: dict[str, Any]) -> dict[str, Any]:
        changing.tool_calls[0]["args"]["n"] = "after the change"
        return original(json.loads(dumps(changing)))

    monkeypatch.setattr(messages, "message_from_lc", changed_meanwhile)
    canonical_message(changing)
    monkeypatch.setattr(messages, "message_from_lc", original)
    fresh = answer("before the change")
    assert canonical_message(fresh) == reference(fresh)


def test_a_large_message_is_not_kept_by_content(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its pickle would hold its text a second time for the life of the process."""
    from chaincassette.integrations.langchain import messages

    monkeypatch.setattr(messages, "MAX_CONTENT_BYTES", 1_000)
    small, large = "a short question", "a long context " * 100
    assert canonical_message(HumanMessage(small)) is canonical_message(HumanMessage(small))
    first = canonical_message(HumanMessage(large))
    again = canonical_message(HumanMessage(large))
    assert again == first == reference(HumanMessage(large)) and again is not first
    held = sum(len(state) for _, state in messages._by_content)
    assert held == messages._by_content_bytes <= messages.MAX_BY_CONTENT_BYTES
