"""``messages._Layout`` against LangChain's own ``Serializable.to_json``.

The message memo reads a new message's fields with a layout worked out once per class
instead of calling ``to_json`` (which walks the class's MRO at every call). Its claim:
for every message class it accepts, it returns exactly what ``to_json`` returns, keys in
the same order; every class where ``to_json`` does more (its own ``to_json``, secrets,
deprecated attributes) is left to ``to_json``.
"""

from __future__ import annotations

import sys
import types
from typing import Any, ClassVar

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
from test_message_memo_properties import check as memo_check
from test_message_memo_properties import mutate, new_messages, same

from chaincassette.integrations.langchain import messages as memo


def check(message: BaseMessage) -> None:
    layout = memo._layout(type(message))
    assert layout is not None, type(message).__name__
    try:
        expected = message.to_json()
    except Exception as refused:  # a field ``lc_attributes`` reads is gone, say
        with pytest.raises(type(refused)):
            layout.to_json(message)
        return
    assert same(layout.to_json(message), expected), (layout.to_json(message), expected)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_layout_reads_every_message_as_to_json_does(data: st.DataObject) -> None:
    message = data.draw(new_messages())
    check(message)
    for _ in range(data.draw(st.integers(0, 3))):  # edited in place: still the same reading
        mutate(data.draw, message)
        check(message)


@pytest.mark.parametrize(
    "message",
    [
        AIMessage(content="", id=None, name=""),  # a falsy value other than the default
        AIMessageChunk(content="x", chunk_position="last"),
        HumanMessageChunk(content="hi"),
        ToolMessageChunk(content="r", tool_call_id="c", status="error"),
        ToolMessage(content="r", tool_call_id="c", artifact=0),
        ChatMessage(content="", role=""),
        FunctionMessage(content="", name="f"),
        RemoveMessage(id="m1"),
        SystemMessage(content=[]),
    ],
    ids=lambda m: type(m).__name__,
)
def test_every_langchain_message_class_has_a_layout_that_reads_as_to_json(
    message: BaseMessage,
) -> None:
    check(message)


class Secretive(HumanMessage):
    """A message with a secret: ``to_json`` replaces it, which the layout does not do."""

    token: str = ""

    @property
    def lc_secrets(self) -> dict[str, str]:
        return {"token": "TOKEN"}


class OwnJson(HumanMessage):
    def to_json(self) -> Any:
        return {"lc": 1, "type": "constructor", "id": ["mine"], "kwargs": {}}


class Deprecated(HumanMessage):
    lc_namespace: ClassVar[list[str]] = ["old"]


class Tagged(AIMessage):
    """A subclass with attributes of its own: merged before its parent's, as ``to_json`` does."""

    @property
    def lc_attributes(self) -> dict[str, Any]:
        return {"tool_calls": ["from the subclass"], "extra": 1}


def test_classes_whose_to_json_does_more_keep_to_json() -> None:
    for cls in (Secretive, OwnJson, Deprecated):
        assert memo._layout(cls) is None, cls.__name__
    with pytest.raises(ValueError, match="deprecated"):
        memo._serialized(Deprecated(content="x"))  # as LangChain refuses it
    secretive = Secretive(content="hi", token="s3cret")
    assert "s3cret" not in str(memo._serialized(secretive))
    assert memo._serialized(OwnJson(content="x"))["id"] == ["mine"]


def test_attributes_of_a_subclass_and_its_parents_merge_in_to_json_order() -> None:
    message = Tagged(content="", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])
    check(message)
    assert message.to_json()["kwargs"]["tool_calls"][0]["name"] == "f"  # the parent's won


def test_fields_the_key_never_reads_neither_refuse_nor_recompute_a_message() -> None:
    """IDs, response metadata, usage and artifacts are dropped from the canonical form: a
    change there keeps the kept form, and an artifact ``dumps`` cannot write (here a dict
    it would escape, holding an object JSON cannot hold) does not stop keying."""
    answer = AIMessage(
        content="",
        tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}],
        response_metadata={"model_name": "m", "token_usage": {"total_tokens": 3}},
    )
    first = memo.canonical_message(answer)
    answer.response_metadata["token_usage"]["total_tokens"] = 4  # in place, not read
    answer.id = "run-2"
    assert memo.canonical_message(answer) is first
    answer.tool_calls[0]["args"]["x"] = 2  # read: computed again
    assert memo.canonical_message(answer) == {
        **first,
        "tool_calls": [{"name": "f", "args": {"x": 2}, "id": "c1"}],
    }
    result = ToolMessage(content="r", tool_call_id="c1", artifact={"__lc_escaped__": object()})
    with pytest.raises(TypeError):
        dumps(result)  # LangChain's own serializer refuses it
    assert memo.canonical_message(result) == {"role": "tool", "content": "r", "tool_call_id": "c1"}


def test_a_class_whose_own_attributes_may_read_any_field_watches_every_field() -> None:
    layout = memo._layout(Tagged)
    assert layout is not None and layout.watched is None
    assert memo._layout(AIMessage).watched is not None  # type: ignore[union-attr]


# -- regressions found by review ------------------------------------------------------------------

ELSEWHERE = '''
from langchain_core.messages import HumanMessage


class IdNote(HumanMessage):
    """Attributes read from the ID, a field the canonical form otherwise drops."""

    @property
    def lc_attributes(self):
        return {"name": self.id}
'''


def test_attributes_defined_outside_langchain_core_are_not_trusted_by_module_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A user's getter in a module named ``langchain_core.…`` passed for LangChain's own:
    the memo then watched no ID, and served the form of the old one."""
    module = types.ModuleType("langchain_core.user_messages")
    exec(compile(ELSEWHERE, "user_messages.py", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    message = module.IdNote(content="x", id="a")
    assert memo._layout(type(message)).watched is None  # type: ignore[union-attr]
    assert memo_check(message) == {"role": "user", "content": "x", "name": "a"}
    message.id = "b"
    assert memo_check(message) == {"role": "user", "content": "x", "name": "b"}


class OwnIter(HumanMessage):
    """``to_json`` reads the fields ``iter`` gives (here ``type`` is left out)."""

    def __iter__(self) -> Any:
        yield from ((k, v) for k, v in super().__iter__() if k != "type")


class OwnGetattribute(HumanMessage):
    """``to_json`` reads each field's value with ``getattr``."""

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        return value.upper() if name == "content" and isinstance(value, str) else value


def test_classes_that_read_their_fields_their_own_way_keep_to_json() -> None:
    for cls in (OwnIter, OwnGetattribute):
        assert memo._layout(cls) is None, cls.__name__
        memo_check(cls(content="x"))
