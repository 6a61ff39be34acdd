"""``llm_strings.llm_string`` against LangChain's own ``_get_llm_string``, call after call.

The boundary keeps the string per serialized model and set of argument objects, reused
while their ``pickle`` is unchanged. Its claim: whatever is done to the arguments between
calls (edited in place, replaced by values that compare equal, objects no pickle tells
apart), every call gives exactly what ``_get_llm_string`` gives then.
"""

from __future__ import annotations

import collections
from typing import Any

import pytest
from fake_provider import FakeProviderChat
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.language_models.chat_models import BaseChatModel

from chaincassette.integrations.langchain import llm_strings

TOOLS = [
    {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "convert", "parameters": {"x": 1.0}}},
]


def check(model: BaseChatModel, stop: Any, kwargs: dict[str, Any]) -> str:
    expected = model._get_llm_string(stop=stop, **kwargs)
    got = llm_strings.llm_string(model, stop, kwargs)
    assert got == expected
    return got


def test_a_repeated_call_is_served_without_asking_langchain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = FakeProviderChat()
    kwargs = {"tools": TOOLS, "tool_choice": "auto"}
    first = check(model, None, kwargs)
    asked: list[Any] = []
    real = BaseChatModel._get_llm_string

    def counted(self: BaseChatModel, stop: Any = None, **kw: Any) -> str:
        asked.append(kw)
        return real(self, stop=stop, **kw)

    monkeypatch.setattr(BaseChatModel, "_get_llm_string", counted)
    assert llm_strings.llm_string(model, None, dict(kwargs)) == first  # a new dict, same values
    assert asked == []
    assert llm_strings.llm_string(model, ["END"], kwargs) != first  # another stop: asked
    assert len(asked) == 1


def test_edits_in_place_and_equal_values_of_other_types_are_seen() -> None:
    model = FakeProviderChat()
    tools = [dict(TOOLS[0]), {"type": "function", "function": {"name": "f", "parameters": {}}}]
    kwargs: dict[str, Any] = {"tools": tools}
    check(model, None, kwargs)
    tools[1]["function"]["parameters"]["x"] = 1
    check(model, None, kwargs)
    tools[1]["function"]["parameters"]["x"] = 1.0  # == 1, another repr
    check(model, None, kwargs)
    tools[1]["function"]["parameters"]["x"] = True
    check(model, None, kwargs)
    kwargs["tools"] = tuple(tools)  # another object, another repr
    check(model, None, kwargs)
    kwargs["tools"] = collections.UserList(tools)  # not plain data: LangChain's own each time
    check(model, None, kwargs)
    kwargs["tools"][0]["type"] = "changed"
    check(model, None, kwargs)


def test_a_class_with_its_own_llm_string_keeps_it() -> None:
    class Own(FakeProviderChat):
        def _get_llm_string(self, stop: Any = None, **kwargs: Any) -> str:
            return f"own:{len(kwargs)}"

    model = Own()
    assert llm_strings.llm_string(model, None, {"tools": TOOLS}) == "own:1"
    assert llm_strings.llm_string(model, None, {"tools": TOOLS, "x": 1}) == "own:2"


leaves = st.one_of(
    st.text(max_size=3),
    st.integers(-2, 2),
    st.sampled_from([0.0, -0.0, 1.0, float("nan")]),
    st.booleans(),
    st.none(),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=2).map(tuple),
        st.dictionaries(st.sampled_from(["a", "b", "type"]), inner, max_size=3),
    ),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_every_call_gives_what_langchain_gives(data: st.DataObject) -> None:
    model = FakeProviderChat(temperature=data.draw(st.sampled_from([0.0, 0.5])))
    kwargs: dict[str, Any] = {"tools": data.draw(st.lists(values, max_size=2))}
    stop = data.draw(st.one_of(st.none(), st.lists(st.text(max_size=2), max_size=2)))
    for _ in range(data.draw(st.integers(1, 6))):
        check(model, stop, kwargs)
        step = data.draw(st.sampled_from(["same", "edit", "replace", "stop", "add"]))
        tools = kwargs["tools"]
        if step == "edit" and type(tools) is list and tools:
            tools[data.draw(st.integers(0, len(tools) - 1))] = data.draw(values)
        elif step == "replace":
            kwargs["tools"] = data.draw(values)
        elif step == "stop":
            stop = data.draw(st.one_of(st.none(), st.lists(st.text(max_size=2), max_size=2)))
        elif step == "add":
            kwargs[data.draw(st.sampled_from(["tool_choice", "parallel_tool_calls"]))] = data.draw(
                values
            )
    check(model, stop, kwargs)
