"""Each message's kept canonical form against a fresh ``dumps`` of it (property-based).

``messages.canonical_message`` keeps, per LangChain message object, the canonical dict
``requests.message_from_lc(json.loads(dumps(message)))`` gives, and hands it out again while
the message holds equal fields of the same types; on a miss it skips ``dumps`` when
``to_json()`` is plain JSON. Its claim: whatever is done to a message between two calls
(edits in place, values of another type that compare equal, objects no JSON holds, a new
message at a dead one's address), every call gives exactly what the reference computed
afresh gives. These tests mutate real langchain-core messages and check every call.
"""

from __future__ import annotations

import collections
import enum
import json
import subprocess
import sys
import types
from typing import Any
from unittest import mock

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
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    ToolMessageChunk,
)
from pydantic import Field, PrivateAttr

from chaincassette.integrations.langchain import messages as memo
from chaincassette.integrations.langchain.messages import canonical_message, canonical_messages
from chaincassette.integrations.langchain.requests import message_from_lc


def reference(message: BaseMessage) -> dict[str, Any] | None:
    serialized = json.loads(dumps(message))
    if not (isinstance(serialized, dict) and "lc" in serialized):
        return None
    return message_from_lc(serialized)


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (``==`` says ``1 == 1.0 == True``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a.hex() == b.hex()
    return bool(a == b)


def unread_cleared(message: BaseMessage) -> BaseMessage:
    layout = memo._layout(type(message))
    if layout is None or layout.watched is None:
        return message  # every field may be read: no second chance
    return memo._without_unread(message)


REFUSED: Any = object()
"""What ``check`` returns for a message the reference refuses (the memo raises too)."""


def check(message: BaseMessage) -> dict[str, Any] | None:
    """Two calls (a miss, then what the memo keeps), each against the reference. Where
    ``dumps`` refuses a field the key never reads (an artifact no JSON holds, say), the
    message is keyed as ``dumps`` keys it with such fields at their defaults (for the
    classes where they are known not to be read: ``_Layout.watched``)."""
    try:
        expected = reference(message)
    except Exception as refused:
        try:
            expected = reference(unread_cleared(message))
        except Exception:
            with pytest.raises(type(refused)):
                canonical_message(message)
            with pytest.raises(type(refused)):
                canonical_messages([message])
            return REFUSED
    for _ in range(2):  # a miss, then the memo: by itself and in a list (the inlined check)
        got = canonical_message(message)
        assert same(got, expected), f"{type(message).__name__}:\n{got!r}\n{expected!r}"
        listed = canonical_messages([message])
        assert same(listed, None if expected is None else [expected]), f"in a list: {listed!r}"
    return got


# -- values, including the ones that compare equal and serialize otherwise --------------------


class Color(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    ONE = 1
    ZERO = 0


class Opaque:
    """Something no JSON holds: ``dumps`` writes its repr."""

    def __repr__(self) -> str:
        return "Opaque()"


class Twin(str):
    """A string subclass (LangChain's ``dumps`` writes its text)."""


def exotic(value: Any) -> st.SearchStrategy[Any]:
    """Values that compare equal to ``value`` and differ in a type somewhere inside: objects
    that are no plain data (each ``dumps`` as its repr), other types of the same JSON text,
    numbers of another type or sign, or the same container with one part so replaced."""
    options: list[Any] = [mock.ANY]
    if isinstance(value, str):
        options += [collections.UserString(value), Twin(value)]
    if isinstance(value, list):
        options += [collections.UserList(value), tuple(value)]
    if isinstance(value, dict):
        options += [
            collections.UserDict(value),
            types.MappingProxyType(dict(value)),
            collections.OrderedDict(value),
            dict(reversed(value.items())),  # the same items in another order
        ]
    if type(value) is int and value in (0, 1):
        options += [Level(value), bool(value), float(value)]
    if type(value) is bool:
        options += [int(value), float(value)]
    if type(value) is float:
        options += [-value, int(value) if value == value and abs(value) < 1e9 else value]
    if value == "red":
        options.append(Color.RED)
    strategies = [st.sampled_from(options)]
    if type(value) in (list, tuple) and value:
        kind = type(value)
        strategies.append(
            st.integers(0, len(value) - 1).flatmap(
                lambda i: exotic(value[i]).map(lambda v: kind([*value[:i], v, *value[i + 1 :]]))
            )
        )
    if type(value) is dict and value:
        strategies.append(
            st.sampled_from(list(value)).flatmap(
                lambda k: exotic(value[k]).map(lambda v: {**value, k: v})
            )
        )
    return st.one_of(strategies)


texts = st.one_of(st.sampled_from(["", "x", "red", "call_1", "lc", "lc_1"]), st.text(max_size=5))
leaves = st.one_of(
    texts,
    st.integers(-2, 2),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, float("nan"), float("inf")]),
    st.booleans(),
    st.none(),
    st.sampled_from([Color.RED, Level.ONE, Level.ZERO]),
)
keys = st.sampled_from(["a", "b", "lc", "type", "id", "text", "args"])
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=2).map(tuple),
        st.dictionaries(keys, inner, max_size=3),
        st.dictionaries(st.sampled_from([1, True, None, 1.5]), inner, min_size=1, max_size=2),
        st.builds(lambda v: {"__lc_escaped__": v}, inner),
        st.builds(lambda v: {"lc": 1, "type": "not_implemented", "repr": v}, texts),
        st.just(Opaque()),
        st.builds(HumanMessage, content=texts),  # LangChain serializes it as an object
    ),
    max_leaves=6,
)
blocks = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": texts}),
    st.fixed_dictionaries(
        {"type": st.just("tool_use"), "id": texts, "name": texts, "input": values}
    ),
    st.fixed_dictionaries({"type": st.just("image"), "url": texts}, optional={"id": texts}),
    texts,
)
contents = st.one_of(texts, st.lists(blocks, max_size=3))
calls = st.lists(
    st.fixed_dictionaries(
        {"name": texts, "args": st.dictionaries(keys, leaves, max_size=2), "id": texts}
    ),
    max_size=2,
)


class Note(HumanMessage):
    """A user's message subclass with a field of its own."""

    priority: int = 0


@st.composite
def new_messages(draw: st.DrawFn) -> BaseMessage:
    kind = draw(
        st.sampled_from(
            [
                "human",
                "ai",
                "chunk",
                "tool",
                "system",
                "chat",
                "function",
                "note",
                "tool_chunk",
                "remove",
                "constructed",
            ]
        )
    )
    content = draw(contents)
    common: dict[str, Any] = {"id": draw(st.one_of(st.none(), texts))}
    if draw(st.booleans()):
        common["name"] = draw(texts)
    if kind == "human":
        return HumanMessage(content=content, **common)
    if kind == "ai":
        return AIMessage(
            content=content,
            tool_calls=draw(calls),
            additional_kwargs=draw(st.dictionaries(keys, leaves, max_size=2)),
            response_metadata=draw(st.dictionaries(keys, leaves, max_size=2)),
            **common,
        )
    if kind == "chunk":
        chunks = [
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
            for i, c in enumerate(draw(calls))
        ]
        return AIMessageChunk(content=content, tool_call_chunks=chunks, **common)
    if kind == "tool":
        return ToolMessage(
            content=content,
            tool_call_id=draw(texts),
            artifact=draw(st.one_of(st.none(), leaves, st.just(Opaque()))),
            status=draw(st.sampled_from(["success", "error"])),
            **common,
        )
    if kind == "system":
        return SystemMessage(content=content, **common)
    if kind == "chat":
        return ChatMessage(content=content, role=draw(texts), **common)
    if kind == "function":
        return FunctionMessage(content=content, name=draw(texts), id=common["id"])
    if kind == "tool_chunk":
        return ToolMessageChunk(
            content=content,
            tool_call_id=draw(texts),
            artifact=draw(st.one_of(st.none(), leaves)),
            **common,
        )
    if kind == "remove":
        return RemoveMessage(id=draw(texts))
    if kind == "constructed":  # no validation, and no ``content``: it has no default
        return draw(st.sampled_from([HumanMessage, AIMessage])).model_construct(**common)
    return Note(content=content, priority=draw(st.integers(0, 2)), **common)


# -- mutations in place ---------------------------------------------------------------------------

FIELDS = [
    "content",
    "additional_kwargs",
    "response_metadata",
    "name",
    "id",
    "tool_calls",
    "invalid_tool_calls",
    "tool_call_chunks",
    "artifact",
    "status",
    "tool_call_id",
    "role",
    "priority",
]


def positions(value: Any, found: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key or index) inside a field's value, depth first."""
    if isinstance(value, dict) and type(value) is dict:
        for key, item in list(value.items()):
            found.append((value, key))
            positions(item, found)
    elif type(value) is list:
        for index, item in enumerate(value):
            found.append((value, index))
            positions(item, found)
    return found


def mutate(draw: st.DrawFn, message: BaseMessage) -> None:
    """One change a program might make (or should not, but may) between two calls."""
    fields = [f for f in FIELDS if f in message.__dict__]
    what = draw(
        st.sampled_from(["set", "set", "equal", "append", "delete", "field", "extra", "unset"])
    )
    if what == "extra":  # an attribute the model does not declare (``__pydantic_extra__``)
        setattr(message, draw(st.sampled_from(["foo", "bar"])), draw(values))
        return
    if what == "unset" and fields:  # a field gone from ``__dict__`` (as never constructed)
        del message.__dict__[draw(st.sampled_from(fields))]
        return
    field = draw(st.sampled_from(fields))
    inside = positions(message.__dict__[field], [])
    if what == "field" or not inside:
        current = message.__dict__[field]
        new = draw(exotic(current)) if draw(st.booleans()) else draw(values)
        setattr(message, field, new)
        return
    container, key = draw(st.sampled_from(inside))
    if what == "set":
        container[key] = draw(values)
    elif what == "equal":  # another object that compares equal: ``==`` alone cannot tell
        container[key] = draw(exotic(container[key]))
    elif what == "append" and isinstance(container, list):
        container.append(draw(st.one_of(blocks, values)))
    elif what == "delete":
        del container[key]
    else:
        container[key] = draw(values)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_every_call_gives_what_a_fresh_dumps_gives(data: st.DataObject) -> None:
    """Messages are created, sent, changed in place, sent again, dropped and replaced (a
    new message may land at a dead one's address), and every call is checked."""
    live: list[BaseMessage] = []
    for _ in range(data.draw(st.integers(1, 12))):
        step = data.draw(st.sampled_from(["new", "mutate", "mutate", "mutate", "drop", "again"]))
        if step == "new" or not live:
            live.append(data.draw(new_messages()))
        elif step == "mutate":
            mutate(data.draw, data.draw(st.sampled_from(live)))
        elif step == "drop":
            live.pop(data.draw(st.integers(0, len(live) - 1)))  # freed now: its address is free
            live.append(data.draw(new_messages()))
        expected = [check(message) for message in live]
        if any(item is REFUSED for item in expected):
            with pytest.raises(Exception):  # noqa: B017 (whichever the first refused raises)
                canonical_messages(live)
        else:  # what the boundary asks: the whole conversation at once
            assert same(canonical_messages(live), None if None in expected else expected)


# -- plain regressions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "before", "after"),
    [
        ("additional_kwargs", {"a": 1}, collections.UserDict({"a": 1})),
        ("additional_kwargs", {"a": 1}, types.MappingProxyType({"a": 1})),
        ("content", ["x"], collections.UserList(["x"])),
        ("content", "x", collections.UserString("x")),
        ("name", None, mock.ANY),
        ("name", "n", mock.ANY),
    ],
)
def test_an_object_that_only_compares_equal_is_not_mistaken_for_the_kept_value(
    field: str, before: Any, after: Any
) -> None:
    """``"x" == UserString("x")`` and ``{} == mappingproxy({})`` are true, but ``dumps``
    writes those objects' reprs: the memo used to hand out the old canonical form."""
    message = AIMessage(content="c")
    setattr(message, field, before)
    check(message)
    setattr(message, field, after)
    check(message)
    setattr(message, field, before)
    check(message)


def test_number_types_and_signs_count() -> None:
    message = AIMessage(content="", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c"}])
    for value in (1, 1.0, True, 1, 0.0, -0.0, Level.ONE, 1, float("nan"), 0):
        message.tool_calls[0]["args"]["x"] = value
        check(message)


def test_a_plain_unchanged_message_is_served_from_the_memo() -> None:
    """The property above would pass with no memo at all; this pins that it is used."""
    message = AIMessage(
        content=[{"type": "text", "text": "t"}],
        tool_calls=[{"name": "f", "args": {"x": [1, 2.5]}, "id": "c"}],
        additional_kwargs={"k": ("a", None)},
    )
    first = canonical_message(message)
    assert canonical_message(message) is first
    message.content[0]["text"] = "u"
    assert canonical_message(message) is not first


def test_an_empty_container_filled_in_place_or_a_field_moved_is_seen() -> None:
    """The snapshot pickles only the containers that held something: one that was empty
    must be seen filling up, and the same values under other field names or in another
    order must not pass for the kept fields."""
    message = ToolMessage(content="r", tool_call_id="c1")
    first = check(message)
    message.additional_kwargs["note"] = "now"  # the same (empty, unpickled) dict, filled
    assert check(message) != first
    assert canonical_message(message) == check(message)
    kept = check(message)
    fields = dict(message.__dict__)
    message.__dict__.clear()
    message.__dict__.update(reversed(fields.items()))  # same objects, other order
    assert check(message) == kept
    message.__dict__.clear()
    message.__dict__.update(fields)
    message.status, message.artifact = message.artifact, message.status  # swapped objects
    check(message)


def test_a_new_message_at_a_dead_ones_address_is_computed_afresh() -> None:
    """CPython frees a message as its last reference goes and the next one often takes its
    address: the entry must go with the message, and never serve the newcomer."""
    reused, before = 0, None
    for n in range(100):
        message = AIMessage(content=f"m{n}", tool_calls=[{"name": "f", "args": {}, "id": "c"}])
        address = id(message)
        reused += address == before
        check(message)
        del message
        assert address not in memo._memo  # its entry went with it
        before = address
    assert reused  # the scenario happened


DEADLOCK = """
import gc
from langchain_core.messages import HumanMessage
from chaincassette.integrations.langchain import messages
from chaincassette.integrations.langchain.messages import canonical_message, canonical_messages

old = HumanMessage(content="old")
canonical_message(old)
old.additional_kwargs["me"] = [old]  # a cycle: only the collector frees it
del old
with messages._lock:  # as when a collection starts at an allocation inside _remember
    gc.collect()  # frees the message; its weak reference's callback takes the lock
for n in range(3000):  # and the way a program meets it
    message = HumanMessage(content=f"turn {n}")
    canonical_message(message)
    message.additional_kwargs["me"] = [message]
print("done")
"""


def test_a_kept_message_freed_by_the_collector_does_not_deadlock_the_memo() -> None:
    """A kept message in a reference cycle is freed by the collector, which runs at any
    allocation, also while the memo's lock is held; its entry's callback then takes the
    lock in the same thread. With a plain ``Lock`` the program hung forever (hypothesis
    found it: ``_remember`` -> collection -> ``forget``)."""
    done = subprocess.run(
        [sys.executable, "-c", DEADLOCK], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"


def test_a_dict_dumps_escapes_again_is_not_taken_as_written() -> None:
    """``dumps`` wraps a user dict holding ``__lc_escaped__`` alone once more, and a
    ``ChatMessage``'s ``role`` is kept as it comes: the shortcut past ``dumps`` (taken for
    plain JSON without ``lc`` keys) used to keep one wrapping fewer."""
    message = ChatMessage(content="", role="critic")
    check(message)
    message.role = {"__lc_escaped__": None}  # type: ignore[assignment]
    check(message)
    message.additional_kwargs["x"] = {"__lc_escaped__": {"lc": 1}}
    check(message)


def test_values_swapped_between_keys_in_swapped_order_are_told_apart() -> None:
    """``{"a": 1, "b": True}`` and ``{"b": 1, "a": True}`` are equal dicts whose values
    have the same types in order: only the keys' order tells the copy they moved."""
    message = AIMessage(content="", additional_kwargs={"a": 1, "b": True})
    check(message)
    message.additional_kwargs = {"b": 1, "a": True}
    check(message)


def test_a_tuple_is_compared_item_by_item_with_types() -> None:
    message = AIMessage(content="", additional_kwargs={"t": (1, "a", None)})
    check(message)
    for replaced in ((True, "a", None), (1, collections.UserString("a"), None), (1, "a", mock.ANY)):
        message.additional_kwargs["t"] = replaced
        check(message)


def test_the_class_of_a_kept_message_counts() -> None:
    """A field only the subclass declares is serialized only while it is that class."""
    message = Note(content="x", priority=2)
    check(message)
    message.__class__ = HumanMessage
    check(message)
    message.__class__ = Note
    check(message)


# -- regressions found by review ------------------------------------------------------------------


def test_a_message_changed_while_it_is_serialized_is_not_kept_as_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another thread sets a field right after the message was read for its canonical form:
    that form is of the old fields, so it must not be kept as the new fields' (the memo
    served it at every later call)."""
    message = HumanMessage(content="old")
    real = memo.message_from_lc

    def racing(serialized: dict[str, Any]) -> dict[str, Any]:
        message.content = "new"  # as the other thread would, between the two reads
        return real(serialized)

    monkeypatch.setattr(memo, "message_from_lc", racing)
    canonical_message(message)
    monkeypatch.setattr(memo, "message_from_lc", real)
    assert check(message) == {"role": "user", "content": "new"}


def test_an_int_json_cannot_write_is_refused_as_dumps_refuses_it() -> None:
    """``json.dumps`` refuses an int of more digits than ``int`` writes as text (4300 by
    default); the shortcut past ``dumps`` handed it out as plain JSON."""
    message = AIMessage(content="", additional_kwargs={"n": 10**5000})
    with pytest.raises(ValueError, match="digits"):
        reference(message)
    check(message)
    message.additional_kwargs["n"] = 10**600  # within any limit ``int`` accepts
    check(message)


def test_a_constructed_message_missing_a_field_with_a_cycle_in_an_unread_one() -> None:
    """``model_construct`` without ``content``: the memo reads the whole ``__dict__``, where
    a response metadata holding itself made the plain-data check recurse without end,
    though ``dumps`` of the message with unread fields cleared gives its form."""
    metadata: dict[str, Any] = {}
    metadata["self"] = metadata
    message = AIMessage.model_construct(response_metadata=metadata)
    assert "content" not in message.__dict__  # required, so not filled in
    check(message)
    check(message)


class Labelled(HumanMessage):
    """A user's message whose own attributes read a private attribute (not in ``__dict__``)."""

    _label: str = PrivateAttr("first")

    @property
    def lc_attributes(self) -> dict[str, Any]:
        return {"name": self._label}


def test_a_private_attribute_a_users_attributes_read_is_watched() -> None:
    """The memo watched every field of a user's class, but its own ``lc_attributes`` may
    read private attributes too: the form with the old label was served."""
    message = Labelled(content="x")
    assert check(message) == {"role": "user", "content": "x", "name": "first"}
    message._label = "second"
    assert check(message) == {"role": "user", "content": "x", "name": "second"}


class Stamped(HumanMessage):
    """A user's message whose ID default is made from the validated fields."""

    id: Any = Field(default_factory=lambda data: f"id-{len(data)}")


def test_an_unread_field_whose_default_cannot_be_made_alone_is_left_as_it_is() -> None:
    """Before ``dumps`` (a block holding ``lc`` here), the memo set unread fields to their
    defaults; a default factory that takes the validated data cannot make one alone, and
    the message that ``dumps`` reads fine was refused."""
    message = Stamped(content=[{"type": "text", "text": "x", "meta": {"lc": 2}}])
    assert check(message) is not None
