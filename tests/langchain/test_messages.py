"""A LangChain message's canonical form read from its fields is the one ``dumps`` gives.

``messages.canonical_message`` reads LangChain's own message classes field by field where
their values are plain JSON, and takes LangChain's ``dumps`` for everything else. Both must
give the form ``requests.message_from_lc`` makes of ``dumps``, exactly (as canonical JSON
with types, so ``1``/``1.0``/``True`` differ): every message class, every field the key
reads, and the values ``dumps`` escapes or converts.
"""

from __future__ import annotations

import json
import math
from collections import UserString
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.load import dumps
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    ToolMessageChunk,
)

from chaincassette.integrations.langchain.messages import canonical_message
from chaincassette.integrations.langchain.requests import message_from_lc


def through_dumps(message: BaseMessage) -> dict[str, Any]:
    return message_from_lc(json.loads(dumps(message)))


def typed(value: Any) -> str:
    """The value as text that tells apart what ``==`` does not (types, float bits, order)."""

    def walk(item: Any) -> Any:
        if isinstance(item, dict):
            return ["dict", [[walk(k), walk(v)] for k, v in item.items()]]
        if isinstance(item, list):
            return ["list", [walk(v) for v in item]]
        if isinstance(item, float):
            return ["float", item.hex() if math.isfinite(item) else repr(item)]
        return [type(item).__name__, item]

    return json.dumps(walk(value))


def check(message: BaseMessage) -> None:
    assert typed(canonical_message(message)) == typed(through_dumps(message)), message


CALL = {"name": "lookup", "args": {"n": 1, "x": 1.5, "flag": True}, "id": "call_Ab1"}

MESSAGES: list[BaseMessage] = [
    HumanMessage("hi"),
    HumanMessage("", name="alice", id="h1"),
    HumanMessage([{"type": "text", "text": "look", "id": "lc_123"}, {"type": "image", "url": "u"}]),
    HumanMessageChunk("part"),
    SystemMessage("Be terse.", additional_kwargs={"cache_control": {"type": "ephemeral"}}),
    AIMessage(
        "",
        tool_calls=[CALL],
        usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
    ),
    AIMessage(
        "answer",
        response_metadata={"created": 1733000000, "model_name": "gpt"},
        invalid_tool_calls=[{"name": "f", "args": "{bad", "id": "call_2", "error": "bad json"}],
        additional_kwargs={"refusal": None, "reasoning_content": "think"},
    ),
    AIMessageChunk(
        "delta", tool_call_chunks=[{"name": "f", "args": '{"a"', "id": "c", "index": 0}]
    ),
    AIMessageChunk("", chunk_position="last"),
    ToolMessage("72F", tool_call_id="call_Ab1"),
    ToolMessage("failed", tool_call_id="call_Ab1", status="error", artifact={"raw": object()}),
    ToolMessage([{"type": "text", "text": "ok"}], tool_call_id="", name="lookup"),
    ToolMessageChunk("x", tool_call_id="call_9"),
    ChatMessage("as a judge", role="critic"),
    FunctionMessage("42", name="calc"),
    RemoveMessage(id="old"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_message_class_reads_as_dumps_gives_it(message: BaseMessage) -> None:
    check(message)


@pytest.mark.parametrize(
    "value",
    [
        {"lc": 1, "kwargs": {}},  # a user dict dumps escapes
        {"__lc_escaped__": {"x": 1}},  # one it escapes again
        ("a", "tuple"),  # written as a list
        {1: "int key"},  # written with a string key
        {"nested": [{"lc": 2}]},
        UserString("not a str"),
        object(),  # not JSON: dumps writes what it can
        10**700,  # more digits than json writes by default
        float("nan"),
        True,
        0,
        0.0,
        -0.0,
    ],
    ids=lambda value: type(value).__name__,
)
def test_values_dumps_converts_take_its_path(value: Any) -> None:
    for message in (
        HumanMessage("q", additional_kwargs={"extra": value}),
        AIMessage("", tool_calls=[{**CALL, "args": {"v": value}}]),
        ToolMessage([{"type": "text", "text": "r", "meta": value}], tool_call_id="call_1"),
    ):
        check(message)


class OwnMessage(HumanMessage):
    """A program's own class: ``to_json`` may read it its own way."""

    @property
    def lc_attributes(self) -> dict[str, Any]:
        return {"tenant": "acme"}


def test_a_programs_own_class_and_extras_take_langchains_path() -> None:
    check(OwnMessage("hello"))
    extra = HumanMessage.model_validate({"content": "x", "surprise": 1})
    check(extra)


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.sampled_from([0.0, -0.0, 1.5]),
        st.text(max_size=5),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "lc", "type", "id", "text"]), inner, max_size=3),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    content=st.one_of(st.text(max_size=8), st.lists(json_values, max_size=3)),
    extra=st.dictionaries(st.sampled_from(["x", "lc", "tool_calls"]), json_values, max_size=2),
    args=st.dictionaries(st.sampled_from(["a", "b"]), json_values, max_size=2),
    name=st.one_of(st.none(), st.text(max_size=3)),
)
def test_generated_messages_read_as_dumps_gives_them(
    content: Any, extra: dict[str, Any], args: dict[str, Any], name: str | None
) -> None:
    try:
        ai = AIMessage(
            content=content,
            name=name,
            additional_kwargs=extra,
            tool_calls=[{"name": "f", "args": args, "id": "call_1"}],
        )
    except ValueError:  # content LangChain itself refuses
        return
    check(ai)
    check(HumanMessage(content=content, name=name, additional_kwargs=extra))
    check(ToolMessage(content=content, tool_call_id="call_1", additional_kwargs=extra))


def test_a_message_edited_in_place_is_read_as_it_is_now() -> None:
    message = AIMessage("", tool_calls=[CALL])
    before = canonical_message(message)
    message.tool_calls[0]["args"]["n"] = 2
    message.content = "changed"
    after = canonical_message(message)
    assert after != before and typed(after) == typed(through_dumps(message))
