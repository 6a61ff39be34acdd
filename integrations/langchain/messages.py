"""The canonical form of each chat message, computed once per message object.

An agent hands its model the same message objects at every turn, plus one or two new
ones. Serializing the whole list (LangChain's ``dumps``, then ``requests.message_from_lc``)
at every turn is most of what a replayed agent costs, so each message's canonical dict
is kept (while the message lives: a weak reference) with a copy of its fields, and
reused while the message still holds equal fields of the same types (``1``, ``1.0`` and
``True`` differ; key order does not matter, the engine sorts keys). A message holding
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
_lock = threading.Lock()


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
    kind = type(value)
    if kind is dict:
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


def _copy(value: Any) -> Any:
    """A copy to compare the fields with later; anything but plain data raises."""
    kind = type(value)
    if kind is dict:
        if not all(type(k) is str for k in value):  # 1, 1.0 and True are one dict key
            raise _NotPlain
        return {k: _copy(v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) for v in value]
    if kind is tuple:
        return tuple(_copy(v) for v in value)
    if kind is str or value is None:
        return value
    if kind is int or kind is float or kind is bool:
        return _Number(value)
    raise _NotPlain
