"""``llm_strings.llm_string`` against LangChain's own ``_get_llm_string``, call after call.

The boundary keeps the string per serialized model and set of argument objects, reused
while their ``pickle`` is unchanged. Its claim: whatever is done to the arguments between
calls (edited in place, replaced by values that compare equal, objects no pickle tells
apart), every call gives exactly what ``_get_llm_string`` gives then.
"""

from __future__ import annotations

import collections
from typing import Any
from unittest import mock

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
        step = data.draw(
            st.sampled_from(["same", "edit", "replace", "stop", "add", "odd", "serialized"])
        )
        tools = kwargs["tools"]
        if step == "edit" and type(tools) is list and tools:
            tools[data.draw(st.integers(0, len(tools) - 1))] = data.draw(values)
        elif step == "odd" and type(tools) is list:  # in place: no pickle, or no end to it
            tools.append(data.draw(st.sampled_from([tools, lambda: None, collections.Counter()])))
        elif step == "serialized":  # the model's kept serialized form, edited in place
            model._serialized["kwargs"]["temperature"] = data.draw(values)
        elif step == "replace":
            kwargs["tools"] = data.draw(values)
        elif step == "stop":
            stop = data.draw(st.one_of(st.none(), st.lists(st.text(max_size=2), max_size=2)))
        elif step == "add":
            kwargs[data.draw(st.sampled_from(["tool_choice", "parallel_tool_calls"]))] = data.draw(
                values
            )
    check(model, stop, kwargs)


# -- regressions found by review: every call, whatever the arguments have become --------------


def kept_model() -> FakeProviderChat:
    model = FakeProviderChat()
    assert model._serialized  # as LangChain's first call leaves it
    return model


def test_an_argument_that_no_longer_pickles_gives_langchains_string() -> None:
    """A kept argument list edited in place to hold a function: ``pickle`` refuses it, its
    repr is still written (``_get_llm_string`` gives a string, the memo used to raise)."""
    model = kept_model()
    tools: list[Any] = [{"a": 1}]
    check(model, None, {"tools": tools})
    check(model, None, {"tools": tools})
    tools.append(lambda x: x)
    check(model, None, {"tools": tools})
    tools.pop()
    check(model, None, {"tools": tools})


def test_an_argument_that_holds_itself_gives_langchains_string() -> None:
    """``repr`` writes ``[...]`` for a list inside itself; the plain-data check recursed
    until ``RecursionError``."""
    model = kept_model()
    tools: list[Any] = [{"a": 1}]
    check(model, None, {"tools": tools})
    tools.append(tools)
    check(model, None, {"tools": tools})
    check(model, None, {"tools": tools})
    tools.pop()
    check(model, None, {"tools": tools})


def test_a_model_whose_own_llm_string_was_set_on_the_instance_keeps_it() -> None:
    """``mock.patch.object(model, "_get_llm_string")`` shadows the class's method: the call
    is ``model._get_llm_string``, whichever object it is."""
    model = kept_model()
    kwargs = {"tools": TOOLS}
    check(model, None, kwargs)
    with mock.patch.object(model, "_get_llm_string", return_value="patched"):
        assert llm_strings.llm_string(model, None, kwargs) == "patched"
    check(model, None, kwargs)


def test_arguments_changed_while_langchain_writes_the_string_are_not_kept_as_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another thread edits the arguments right after ``_get_llm_string`` read them: the
    string is of the old arguments, so it must not be kept as the new ones' (it was
    served at every later call)."""
    model = kept_model()
    tools = [{"x": 1}]
    check(model, None, {"tools": tools})
    tools[0]["x"] = 2
    real = BaseChatModel._get_llm_string

    def racing(self: BaseChatModel, stop: Any = None, **kw: Any) -> str:
        text = real(self, stop=stop, **kw)
        tools[0]["x"] = 3  # as the other thread would, between the two reads
        return text

    monkeypatch.setattr(BaseChatModel, "_get_llm_string", racing)
    llm_strings.llm_string(model, None, {"tools": tools})
    monkeypatch.setattr(BaseChatModel, "_get_llm_string", real)
    check(model, None, {"tools": tools})
