"""The identity a ``CassetteLLM`` call passes to the key memo is exact, or absent.

Exact: two calls with equal identities build the same canonical request, so the memo can
never hand one request the key of another. Absent (``None``): a part without a cheap
exact name (an image block, a provider object in a message's kwargs), and the request is
then built and hashed as it always was.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from li_fake_provider import FakeProvider, ToolCallObject
from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.llms import MockLLM

from chaincassette import Cassette, CassetteMiss
from chaincassette.integrations.llama_index import CassetteLLM
from chaincassette.integrations.llama_index import llm as llm_module
from chaincassette.integrations.llama_index.identity import (
    chat_identity,
    completion_identity,
    freeze,
)
from chaincassette.integrations.llama_index.request import (
    chat_request,
    completion_request,
    params_of,
    sampling_values,
)


def test_freeze_tells_apart_what_json_tells_apart() -> None:
    # equal in Python, different in JSON (true / 1 / 1.0, 0.0 / -0.0): different names
    assert len({freeze(True), freeze(1), freeze(1.0)}) == 3
    assert freeze(0.0) != freeze(-0.0)
    assert freeze("1") != freeze(1)
    assert freeze({"a": 1, "b": [2, "x"]}) == freeze({"a": 1, "b": [2, "x"]})
    # key order is kept (the normalized request, shared through the memo, keeps it too)
    assert freeze({"a": 1, "b": 2}) != freeze({"b": 2, "a": 1})
    assert freeze(None) != freeze("None")


@pytest.mark.parametrize("value", [{1, 2}, MessageRole.USER, object(), b"x"])
def test_values_without_a_cheap_name_make_no_identity(value: Any) -> None:
    assert completion_identity("m", (), "hi", False, {"x": value}, False) is None
    assert chat_identity("m", (("seed", value),), [], {}, False, None) is None


def as_json(request: dict[str, Any]) -> str:
    """The request as the cassette writes it: ``True == 1 == 1.0`` and ``0.0 == -0.0`` in
    Python, not in JSON (and not in the key); key order kept too."""
    return json.dumps(request)


def _messages_variants() -> list[list[ChatMessage]]:
    call = ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 1})
    return [
        [ChatMessage(role="user", content="hi")],
        [ChatMessage(role="user", content="hi ")],
        [ChatMessage(role="assistant", content="hi")],
        [ChatMessage(role="user", blocks=[TextBlock(text="h"), TextBlock(text="i")])],
        [ChatMessage(role="user", content="hi", additional_kwargs={"name": "ann"})],
        [ChatMessage(role="user", content="hi", additional_kwargs={"id": "volatile-1"})],
        [ChatMessage(role="user", content="hi", additional_kwargs={"id": "volatile-2"})],
        [ChatMessage(role="assistant", blocks=[TextBlock(text="ok"), call])],
        [
            ChatMessage(
                role="assistant",
                blocks=[ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs='{"a": 1}')],
            )
        ],
        [ChatMessage(role="tool", content="2", additional_kwargs={"tool_call_id": "c1"})],
        [ChatMessage(role="tool", content="2", additional_kwargs={"tool_call_id": 1})],
        [ChatMessage(role="user", content="hi"), ChatMessage(role="assistant", content="yo")],
    ]


def test_equal_identities_build_equal_chat_requests() -> None:
    """Every pair of variants: the same identity only where the same request comes out."""
    settings = [
        FakeProvider(temperature=0.0),
        FakeProvider(temperature=0.5),
        FakeProvider(temperature=0.5, max_tokens=3),
        FakeProvider(model="other", temperature=0.5),
    ]
    keyword_sets: list[dict[str, Any]] = [{}, {"seed": 1}, {"seed": 1.0}, {"seed": True}]
    cases = []
    for llm, messages, kwargs, stream in itertools.product(
        settings, _messages_variants(), keyword_sets, (False, True)
    ):
        model, values = llm.metadata.model_name, sampling_values(llm)
        identity = chat_identity(model, values, messages, kwargs, stream, None)
        assert identity is not None  # all of these have a cheap name
        request = chat_request(model, params_of(values), messages, kwargs, stream)
        cases.append((identity, as_json(request)))
    by_identity: dict[Any, Any] = {}
    for identity, request in cases:
        assert by_identity.setdefault(identity, request) == request
    # and the identity tells apart what only the volatile kwargs tell apart: nothing
    assert len(by_identity) < len(cases)


def test_equal_identities_build_equal_completion_requests() -> None:
    cases = []
    for prompt, formatted, kwargs, stream, temperature in itertools.product(
        ("hi", "hi "),
        (False, True),
        ({}, {"stop": ["x"]}, {"stop": ("x",)}),
        (False, True),
        (0.0, -0.0, 1, 1.0),
    ):
        llm = FakeProvider(temperature=temperature)
        model, values = llm.metadata.model_name, sampling_values(llm)
        identity = completion_identity(model, values, prompt, formatted, kwargs, stream)
        assert identity is not None
        request = completion_request(model, params_of(values), prompt, formatted, kwargs, stream)
        cases.append((identity, as_json(request)))
    by_identity: dict[Any, Any] = {}
    for identity, request in cases:
        assert by_identity.setdefault(identity, request) == request


def test_parts_without_a_cheap_name_make_no_identity() -> None:
    image = ChatMessage(
        role="user", blocks=[ImageBlock(image=b"\x89PNG", image_mimetype="image/png")]
    )
    provider = ChatMessage(
        role="assistant",
        content="",
        additional_kwargs={"tool_calls": [ToolCallObject(id="c", name="add", arguments="{}")]},
    )
    for messages in ([image], [provider]):
        assert chat_identity("m", (), messages, {}, False, None) is None


def _record(path: Path, llm: Any, *prompts: str) -> None:
    recorder = CassetteLLM(llm, cassette=path, mode="record")
    for prompt in prompts:
        recorder.chat([ChatMessage(role="user", content=prompt)])


def test_a_repeated_request_is_built_once_per_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    _record(path, MockLLM(max_tokens=4), "hello")
    built: list[str] = []
    original = llm_module.completion_request

    def counting(*args: Any) -> Any:
        built.append(args[2])
        return original(*args)

    monkeypatch.setattr(llm_module, "completion_request", counting)
    cassette = Cassette(path, mode="replay", allow_playback_repeats=True)
    llm = CassetteLLM(MockLLM(max_tokens=4), cassette=cassette)
    answers = {str(llm.chat([ChatMessage(role="user", content="hello")])) for _ in range(3)}
    assert len(answers) == 1
    assert len(built) == 1  # MockLLM is a CustomLLM: its chat is a completion underneath
    assert cassette.stats.replayed == 3


def test_a_changed_setting_or_message_is_a_new_request_not_a_memo_hit(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    _record(path, MockLLM(max_tokens=4), "hello")
    inner = MockLLM(max_tokens=4)
    llm = CassetteLLM(inner, cassette=Cassette(path, mode="replay", allow_playback_repeats=True))
    messages = [ChatMessage(role="user", content="hello")]
    llm.chat(messages)
    inner.max_tokens = 5  # the same objects, changed in place
    with pytest.raises(CassetteMiss):
        llm.chat(messages)
    inner.max_tokens = 4
    llm.chat(messages)
    messages[0].blocks[0] = TextBlock(text="hello!")
    with pytest.raises(CassetteMiss):
        llm.chat(messages)


def test_a_sampling_setting_added_to_the_class_after_a_call_is_read(tmp_path: Path) -> None:
    """``monkeypatch.setattr(MyLLM, "top_p", ...)`` after a first call changes the request."""

    class Provider(MockLLM):
        pass

    inner = Provider(max_tokens=4)
    assert "top_p" not in dict(sampling_values(inner))
    llm = CassetteLLM(inner, cassette=Cassette(tmp_path / "c.yaml", mode="new_episodes"))
    messages = [ChatMessage(role="user", content="hello")]
    llm.chat(messages)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Provider, "top_p", 0.9, raising=False)
        assert dict(sampling_values(inner))["top_p"] == 0.9
        llm.chat(messages)
    assert "top_p" not in dict(sampling_values(inner))  # and gone again once undone
    llm.chat(messages)
    recorded = llm.cassette.interactions
    assert [i.request["params"].get("top_p") for i in recorded] == [None, 0.9, None]
    assert recorded[0].key == recorded[2].key != recorded[1].key
