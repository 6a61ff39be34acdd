"""The canonical form of each chat message, computed once per message object.

An agent hands its model the same message objects at every turn, plus one or two new
ones. Serializing the whole list (LangChain's ``dumps``, then ``requests.message_from_lc``)
at every turn is most of what a replayed agent costs, so each message's canonical dict
is kept (while the message lives: a weak reference) with its fields' ``pickle``, and
reused while the message's fields pickle the same. Pickle tells apart what ``==`` does not
(``1``, ``1.0`` and ``True``; ``0.0`` and ``-0.0``; ``"x"`` and ``UserString("x")``; a
list and a tuple), in C, and a dict whose keys changed order is merely computed again. A
message holding anything but plain data is computed afresh at every call. The canonical
dict handed out is shared and never changed; the engine resumes its keying from it
(``stable_messages``, ``chaincassette.chat_keys``).
"""

from __future__ import annotations

import json
import pickle
import threading
import weakref
from typing import Any

from langchain_core.load import dumps
from langchain_core.messages import BaseMessage

from .requests import message_from_lc

#: The key ``dumps`` wraps an escaped user dict in (``langchain_core.load._validation``).
_ESCAPED = "__lc_escaped__"


class _Entry:
    __slots__ = ("canonical", "kind", "ref", "state")

    def __init__(
        self, ref: weakref.ref[BaseMessage], kind: type, state: bytes, canonical: dict[str, Any]
    ) -> None:
        self.ref = ref
        self.kind = kind
        self.state = state
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
        and not message.__pydantic_extra__
        and _state(message) == entry.state
    ):
        return entry.canonical
    serialized = _serialized(message)
    if not (isinstance(serialized, dict) and "lc" in serialized):
        return None
    canonical = message_from_lc(serialized)
    # every field, read or not: comparing them all is cheaper than picking some (a message
    # with attributes its class does not declare is rare: it is not kept)
    state = _state(message) if _plain(message.__dict__) else None
    if state is not None and not message.__pydantic_extra__:
        _remember(message, state, canonical)
    elif entry is not None:  # holds something else now: no more pickling it at every call
        _forget(id(message), entry.ref)
    return canonical


def _state(message: BaseMessage) -> bytes | None:
    """The fields as ``pickle`` writes them: by exact type (a subclass, an enum or any
    other object is written with its class), floats bit for bit, dicts in order."""
    try:
        return pickle.dumps(message.__dict__, _PROTOCOL)
    except Exception:  # an object pickle cannot write (a lock, a generator…)
        return None


_PROTOCOL = pickle.HIGHEST_PROTOCOL


def _plain(value: Any) -> bool:
    """Plain data only: what the kept pickle can be compared on (an object's own state
    might change without its pickle showing it)."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list or kind is tuple:
        return all(_plain(v) for v in value)
    return kind is str or kind is int or kind is float or kind is bool or value is None


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


def _remember(message: BaseMessage, state: bytes, canonical: dict[str, Any]) -> None:
    key = id(message)

    def forget(ref: weakref.ref[BaseMessage]) -> None:
        _forget(key, ref)

    with _lock:
        _memo[key] = _Entry(weakref.ref(message, forget), type(message), state, canonical)


def _forget(key: int, ref: weakref.ref[BaseMessage]) -> None:
    with _lock:
        entry = _memo.get(key)
        if entry is not None and entry.ref is ref:
            del _memo[key]
