"""The canonical form of each chat message, computed once per message object.

An agent hands its model the same message objects at every turn, plus one or two new
ones. Serializing the whole list (LangChain's ``dumps``, then ``requests.message_from_lc``)
at every turn is most of what a replayed agent costs, so each message's canonical dict
is kept (while the message lives: a weak reference) with a copy of its fields, and
reused while the message still holds equal fields of the same types, all the way down
(``1``, ``1.0`` and ``True`` differ, and so do ``"x"`` and ``UserString("x")``, which
compare equal; a dict whose keys changed order is computed again). A message holding
anything but plain data is computed afresh at every call. The canonical dict handed
out is shared and never changed; the engine resumes its keying from it
(``stable_messages``, ``chaincassette.chat_keys``).
"""

from __future__ import annotations

import json
import threading
import weakref
from typing import Any

from langchain_core.load import dumps
from langchain_core.messages import BaseMessage

from .requests import message_from_lc

#: The key ``dumps`` wraps an escaped user dict in (``langchain_core.load._validation``).
_ESCAPED = "__lc_escaped__"


class _NotPlain(Exception):
    """A message field holds something whose changes a copy cannot see."""


class _Entry:
    __slots__ = ("canonical", "extra", "fields", "kind", "ref")

    def __init__(
        self,
        ref: weakref.ref[BaseMessage],
        kind: type,
        fields: Any,
        extra: Any,
        canonical: dict[str, Any],
    ) -> None:
        self.ref = ref
        self.kind = kind
        self.fields = fields
        self.extra = extra
        self.canonical = canonical


_memo: dict[int, _Entry] = {}
#: Re-entrant: the collector may free a kept message (one in a reference cycle) at any
#: allocation, including one made while ``_remember`` holds the lock, and the weak
#: reference's callback (``forget``) then takes it again in the same thread.
_lock = threading.RLock()


def canonical_message(message: BaseMessage) -> dict[str, Any] | None:
    """The message as ``requests.build_request`` reads it from LangChain's ``dumps``, or
    ``None`` when ``dumps`` does not give a serialized message (``build_request`` would
    then not read the list as chat)."""
    entry = _memo.get(id(message))
    if (
        entry is not None
        and entry.ref() is message
        and type(message) is entry.kind
        and entry.fields == message.__dict__  # the copy on the left: see ``_Number``
        and entry.extra == message.__pydantic_extra__
    ):
        return entry.canonical
    serialized = _serialized(message)
    if not (isinstance(serialized, dict) and "lc" in serialized):
        return None
    canonical = message_from_lc(serialized)
    try:  # every field, read or not: comparing them all is cheaper than picking some
        fields, extra = _copy(message.__dict__), _copy(message.__pydantic_extra__)
    except _NotPlain:
        return canonical
    _remember(message, fields, extra, canonical)
    return canonical


def _serialized(message: BaseMessage) -> Any:
    """``json.loads(dumps(message))``, skipping the text round trip where it changes
    nothing: ``dumps`` is ``to_json()`` with user dicts holding an ``lc`` key escaped and
    other values made JSON, so plain JSON data without such dicts comes out as it went in.
    ``message_from_lc`` copies what it keeps, so the message's own lists are never kept.
    (``message_from_lc`` unwraps escaped dicts, but not everywhere: a ``ChatMessage``'s
    ``role`` is kept as it comes.)
    """
    serialized = message.to_json()
    kwargs = serialized.get("kwargs")
    if (
        isinstance(kwargs, dict)
        and _json_without_lc(kwargs)
        and _json_without_lc(serialized.get("id"))
    ):
        return serialized
    return json.loads(dumps(message))


def _json_without_lc(value: Any) -> bool:
    """Plain JSON that ``dumps`` writes as it is: no dict it escapes (one holding ``lc``,
    or ``__lc_escaped__`` alone, which it wraps again)."""
    kind = type(value)
    if kind is dict:
        if len(value) == 1 and _ESCAPED in value:
            return False
        return "lc" not in value and all(
            type(k) is str and _json_without_lc(v) for k, v in value.items()
        )
    if kind is list:
        return all(_json_without_lc(v) for v in value)
    return kind is str or kind is int or kind is float or kind is bool or value is None


def _remember(message: BaseMessage, fields: Any, extra: Any, canonical: dict[str, Any]) -> None:
    key = id(message)

    def forget(ref: weakref.ref[BaseMessage]) -> None:
        with _lock:
            entry = _memo.get(key)
            if entry is not None and entry.ref is ref:
                del _memo[key]

    with _lock:
        _memo[key] = _Entry(weakref.ref(message, forget), type(message), fields, extra, canonical)


class _Number:
    """A number in a kept copy: equal only to a number of its own type and spelling, so
    that ``copy == fields`` (the copy on the left, whose items compare themselves first)
    is exact: ``==`` alone says ``1 == 1.0 == True`` and ``0.0 == -0.0``, which serialize
    differently."""

    __slots__ = ("kind", "spelling")

    def __init__(self, value: int | float) -> None:
        self.kind = type(value)
        self.spelling = value.hex() if isinstance(value, float) else value

    def __eq__(self, other: object) -> bool:
        if type(other) is not self.kind:
            return False
        spelling = other.hex() if isinstance(other, float) else other
        return bool(spelling == self.spelling)

    __hash__ = None  # type: ignore[assignment]


class _List(list[Any]):
    """A list in a kept copy: equal only to a ``list`` whose items have the same types.
    A plain ``[...] == other`` lets ``other`` answer when it is no list (``UserList``,
    an array), and its items may do the same (``UserString("x") == "x"``, ``mock.ANY``);
    those serialize otherwise. With the types checked (in C, by ``map``), the items' own
    ``==`` is exact for ``str``, ``int``, ``bool`` and ``None``; floats are ``_Number``."""

    __slots__ = ("types",)
    types: tuple[type, ...]

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is list
            and self.types == tuple(map(type, other))
            and list.__eq__(self, other)
        )

    __hash__ = None


class _Dict(dict[str, Any]):
    """A dict in a kept copy: equal only to a ``dict`` with the same keys in the same
    order holding values of the same types (see ``_List``; a ``mappingproxy`` or
    ``UserDict`` compares equal to a dict and serializes as its repr)."""

    __slots__ = ("names", "types")
    names: tuple[str, ...]
    types: tuple[type, ...]

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is dict
            and self.names == tuple(other)
            and self.types == tuple(map(type, other.values()))
            and dict.__eq__(self, other)
        )

    __hash__ = None


class _Tuple:
    """A tuple in a kept copy (see ``_List``)."""

    __slots__ = ("items", "types")

    def __init__(self, items: tuple[Any, ...], types: tuple[type, ...]) -> None:
        self.items = items
        self.types = types

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is tuple
            and self.types == tuple(map(type, other))
            and bool(self.items == other)
        )

    __hash__ = None  # type: ignore[assignment]


def _copy(value: Any) -> Any:
    """A copy to compare the fields with later; anything but plain data raises."""
    kind = type(value)
    if (kind is dict or kind is list or kind is tuple) and not value:
        return kind()  # holds nothing to check; its own type is checked by its container
    if kind is dict:
        if not all(type(k) is str for k in value):  # 1, 1.0 and True are one dict key
            raise _NotPlain
        copied = _Dict({k: _copy(v) for k, v in value.items()})
        copied.names = tuple(value)
        copied.types = tuple(map(type, value.values()))
        return copied
    if kind is list:
        items = _List([_copy(v) for v in value])
        items.types = tuple(map(type, value))
        return items
    if kind is tuple:
        return _Tuple(tuple(_copy(v) for v in value), tuple(map(type, value)))
    if kind is str or kind is int or kind is bool or value is None:
        return value  # of a type checked by its container: ``==`` is exact
    if kind is float:
        return _Number(value)
    raise _NotPlain
