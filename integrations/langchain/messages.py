"""The canonical form of each chat message, computed once per message object.

An agent hands its model the same message objects at every turn, plus one or two new
ones. Serializing the whole list (LangChain's ``dumps``, then ``requests.message_from_lc``)
at every turn is most of what a replayed agent costs, so each message's canonical dict
is kept (while the message lives: a weak reference) with a ``pickle`` of the fields it
depends on (``_read``: for LangChain's classes not the IDs, metadata, usage and artifacts
the key drops), and reused while they pickle the same. Pickle tells apart what ``==`` does not
(``1``, ``1.0`` and ``True``; ``0.0`` and ``-0.0``; ``"x"`` and ``UserString("x")``; a
list and a tuple), in C, and a dict whose keys changed order is merely computed again. A
message holding anything but plain data is computed afresh at every call. The canonical
dict handed out is shared and never changed; the engine resumes its keying from it
(``stable_messages``, ``chaincassette.chat_keys``).

A LangChain class's form depends on its watched fields only, so forms are also kept by
class and pickle (``_by_content``): a new message object with the fields of one met before
(the same conversation replayed by the next test, a system prompt every test sends) takes
that form instead of computing it. A form is kept that way only when the fields pickle the
same after it was computed as before.
"""

from __future__ import annotations

import json
import os
import pickle
import threading
import weakref
from collections.abc import Callable, Iterable
from operator import itemgetter
from types import CodeType
from typing import Any

import langchain_core
from langchain_core.load import dumps
from langchain_core.load import serializable as _serializable
from langchain_core.load.serializable import Serializable
from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from .requests import DROPPED_MESSAGE_FIELDS, message_from_lc

#: ``to_json``'s comparison of a falsy value with its field's default (private: without
#: it every message takes ``to_json`` itself).
_try_neq_default: Callable[[Any, Any], bool] | None = getattr(
    _serializable, "_try_neq_default", None
)
#: Fields ``message_from_lc`` never reads (``type`` it does: it names the role).
_UNREAD = DROPPED_MESSAGE_FIELDS - {"type"}
#: The key ``dumps`` wraps an escaped user dict in (``langchain_core.load._validation``).
_ESCAPED = "__lc_escaped__"


class _Entry:
    __slots__ = ("canonical", "kind", "read", "ref", "state")

    def __init__(
        self,
        ref: weakref.ref[BaseMessage],
        kind: type[BaseMessage],
        state: bytes,
        canonical: dict[str, Any],
        read: Callable[[dict[str, Any]], Any] | None,
    ) -> None:
        self.ref = ref
        self.kind = kind
        self.state = state
        self.canonical = canonical
        #: the class's watched fields from the message's ``__dict__`` (``_Layout.watched``),
        #: when ``state`` was read with it: ``_kept`` checks with it directly
        self.read = read


_memo: dict[int, _Entry] = {}
#: Re-entrant: the collector may free a kept message (one in a reference cycle) at any
#: allocation, including one made while ``_remember`` holds the lock, and the weak
#: reference's callback (``forget``) then takes it again in the same thread.
_lock = threading.RLock()


def canonical_messages(messages: Iterable[Any]) -> list[dict[str, Any]] | None:
    """``canonical_message`` of each item, or ``None`` when an item is not a message or
    has no canonical form.

    An agent hands the model its whole conversation at every turn, so a replayed run
    checks each message again at every later turn (turns² checks): each is one call to
    ``_kept`` here, not the chain ``canonical_message`` once took per message.
    """
    out = []
    for message in messages:
        item = _kept(message)
        if item is None:
            item = _computed(message) if isinstance(message, BaseMessage) else None
            if item is None:
                return None
        out.append(item)
    return out


def canonical_message(message: BaseMessage) -> dict[str, Any] | None:
    """The message as ``requests.build_request`` reads it from LangChain's ``dumps``, or
    ``None`` when ``dumps`` does not give a serialized message (``build_request`` would
    then not read the list as chat)."""
    kept = _kept(message)
    return kept if kept is not None else _computed(message)


def _kept(message: Any) -> dict[str, Any] | None:
    """The kept canonical form, while ``message`` is the very object it was kept for, of
    the same class, with no pydantic extras and the same pickle of its watched fields
    (read with the class's reader kept in the entry, else as ``_read`` reads them)."""
    entry = _memo.get(id(message))
    if (
        entry is None
        or type(message) is not entry.kind
        or message.__pydantic_extra__
        or entry.ref() is not message
    ):
        return None
    try:
        watched = _read(message) if entry.read is None else entry.read(message.__dict__)
        state = pickle.dumps(watched, _PROTOCOL)
    except Exception:  # a field gone (``KeyError``), or one pickle cannot write
        return None
    return entry.canonical if state == entry.state else None


def _computed(message: BaseMessage) -> dict[str, Any] | None:
    """``canonical_message`` for a message ``_kept`` does not answer: computed, and kept
    when its watched fields are plain data."""
    entry = _memo.get(id(message))
    # the state is read before the form: were the message changed in between (another
    # thread), the kept state is the older one and the next call computes the form again
    watched, read = _read_with(message)
    state = _state(message, watched) if is_plain(watched) else None
    # the form of a LangChain class is that of its watched fields: another message that
    # held the same ones (in an earlier run of the same program, say) gave it already
    plain_class = read is not None and not message.__pydantic_extra__
    content = (type(message), state) if state is not None and plain_class else None
    canonical = _by_content.get(content) if content is not None else None
    if canonical is None:
        serialized = _serialized(message)
        if not (isinstance(serialized, dict) and "lc" in serialized):
            return None
        canonical = message_from_lc(serialized)
        if content is not None and _unchanged(message, read, state):
            _keep_content(content, canonical)
    # a message with attributes its class does not declare is rare: it is not kept
    if state is not None and not message.__pydantic_extra__:
        _remember(message, state, canonical, read)
    elif entry is not None:  # holds something else now: no more pickling it at every call
        _forget(id(message), entry.ref)
    return canonical


#: Canonical forms by class and pickled watched fields, for every message of the process
#: (bounded: cleared when full).
_by_content: dict[tuple[type, bytes], dict[str, Any]] = {}
MAX_BY_CONTENT = 4096
#: Bytes of pickles kept (the forms weigh about as much again); a larger message's form is
#: not kept by content (its pickle alone would hold its text a second time).
MAX_BY_CONTENT_BYTES = 8_000_000
MAX_CONTENT_BYTES = 64_000
_by_content_bytes = 0


def _unchanged(message: BaseMessage, read: Any, state: bytes | None) -> bool:
    """Whether the watched fields still pickle as ``state`` (read before the form was
    computed): only a form computed from them may be kept under their content."""
    try:
        return _state(message, read(message.__dict__)) == state
    except Exception:  # a field gone meanwhile
        return False


def forget_forms_by_content() -> None:
    """Drop the forms kept by content (the next new message of any content computes its own)."""
    global _by_content_bytes
    with _lock:
        _by_content.clear()
        _by_content_bytes = 0


def _keep_content(content: tuple[type, bytes], canonical: dict[str, Any]) -> None:
    global _by_content_bytes
    size = len(content[1])
    if size > MAX_CONTENT_BYTES:
        return
    with _lock:
        if content in _by_content:  # another thread computed it meanwhile: counted once
            return
        full = _by_content_bytes + size > MAX_BY_CONTENT_BYTES
        if full or len(_by_content) >= MAX_BY_CONTENT:
            _by_content.clear()
            _by_content_bytes = 0
        _by_content[content] = canonical
        _by_content_bytes += size


def _read(message: BaseMessage) -> Any:
    """The fields the canonical form depends on: for a LangChain message class, all but
    the ones ``message_from_lc`` drops (IDs, response metadata, usage, artifacts: an
    agent's answers carry most of their bytes there); for any other class every field,
    and its private attributes (its own ``lc_attributes`` or ``to_json`` may read them)."""
    return _read_with(message)[0]


def _read_with(message: BaseMessage) -> tuple[Any, Callable[[dict[str, Any]], Any] | None]:
    """``_read``, and the class's reader of ``__dict__`` when it was the one used."""
    layout = _layout(type(message))
    if layout is None or layout.watched is None:
        private = message.__pydantic_private__
        return ((message.__dict__, private) if private else message.__dict__), None
    try:
        return layout.watched(message.__dict__), layout.watched
    except KeyError:  # a field missing (``model_construct``): read the whole
        return message.__dict__, None


def _state(message: BaseMessage, watched: Any) -> bytes | None:
    """The watched fields as ``pickle`` writes them: by exact type (a subclass, an enum or
    any other object is written with its class), floats bit for bit, dicts in order."""
    try:
        return pickle.dumps(watched, _PROTOCOL)
    except Exception:  # an object pickle cannot write (a lock, a generator…)
        return None


_PROTOCOL = pickle.HIGHEST_PROTOCOL


def is_plain(value: Any) -> bool:
    """Plain data only: what the kept pickle can be compared on (an object's own state
    might change without its pickle showing it). A container holding itself is not (its
    repr and ``dumps`` have their own answers for it)."""
    try:
        return _is_plain(value)
    except RecursionError:
        return False


def _is_plain(value: Any) -> bool:
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _is_plain(v) for k, v in value.items())
    if kind is list or kind is tuple:
        return all(_is_plain(v) for v in value)
    return kind is str or kind is int or kind is float or kind is bool or value is None


def _serialized(message: BaseMessage) -> Any:
    """``json.loads(dumps(message))``, skipping the text round trip where it changes
    nothing: ``dumps`` is ``to_json()`` with user dicts holding an ``lc`` key escaped and
    other values made JSON, so plain JSON data without such dicts comes out as it went in.
    ``message_from_lc`` copies what it keeps, so the message's own lists are never kept.
    (``message_from_lc`` unwraps escaped dicts, but not everywhere: a ``ChatMessage``'s
    ``role`` is kept as it comes.)
    """
    layout = _layout(type(message))
    if layout is not None and not message.__pydantic_extra__:
        serialized: Any = layout.to_json(message)
    else:
        serialized = message.to_json()
    kwargs = serialized.get("kwargs")
    if (
        isinstance(kwargs, dict)
        and _kwargs_without_lc(kwargs, layout)
        and _json_without_lc(serialized.get("id"))
    ):
        return serialized
    if layout is not None and layout.watched is not None:
        message = _without_unread(message)
    return json.loads(dumps(message))


def _without_unread(message: BaseMessage) -> BaseMessage:
    """A copy with the fields ``message_from_lc`` drops at their defaults: ``dumps`` can
    refuse one (an artifact holding an object it cannot write), and what it writes of
    them is dropped anyway."""
    copy = message.model_copy()
    fields = type(message).model_fields
    for name in _UNREAD.intersection(copy.__dict__):
        try:
            copy.__dict__[name] = fields[name].get_default(call_default_factory=True)
        except Exception:  # a factory that takes the validated data: ``dumps`` reads all
            return message
    return copy


def _kwargs_without_lc(kwargs: dict[str, Any], layout: _Layout | None) -> bool:
    """``_json_without_lc(kwargs)``, leaving out the fields ``message_from_lc`` drops where
    the class is LangChain's own (``_Layout.watched``): what ``dumps`` does to them is
    dropped with them, so they do not decide the path either."""
    if layout is None or layout.watched is None:
        return _json_without_lc(kwargs)
    if "lc" in kwargs or (len(kwargs) == 1 and _ESCAPED in kwargs):
        return False
    return all(
        type(name) is str and (name in _UNREAD or _json_without_lc(value))
        for name, value in kwargs.items()
    )


class _Layout:
    """How ``Serializable.to_json`` reads one message class, worked out once per class.

    ``to_json`` walks the class's MRO at every call (deprecated attributes, secrets and
    ``lc_attributes`` of each class) and asks pydantic of every field whether it is
    required: about 40 µs a message, for answers that depend on the class only. Here
    they are read once; a message then costs a pass over its fields. Classes with their
    own ``to_json``, secrets or deprecated attributes keep LangChain's own
    (``test_message_layout`` compares the two on every message class).
    """

    __slots__ = ("attributes", "fields", "ident", "neq_default", "watched")

    def __init__(
        self,
        cls: type[BaseMessage],
        attributes: list[Callable[[Any], Any]],
        neq_default: Callable[[Any, Any], bool],
    ) -> None:
        #: per field: (required, default factory, excluded, pydantic's field)
        self.fields = {
            name: (field.is_required(), field.default_factory, bool(field.exclude), field)
            for name, field in cls.model_fields.items()
        }
        #: each ``lc_attributes`` getter ``to_json`` reaches, in the order it merges them
        self.attributes = attributes
        self.ident = cls.lc_id()
        #: the fields the canonical form reads, where only LangChain's own getters add
        #: attributes (a user's could read any field)
        names = [name for name in cls.model_fields if name not in _UNREAD]
        own = all(_in_langchain_core(getter) for getter in attributes)
        self.watched = itemgetter(*names) if own and len(names) > 1 else None
        self.neq_default = neq_default

    def to_json(self, message: BaseMessage) -> dict[str, Any]:
        """What ``message.to_json()`` returns (a message without pydantic extras)."""
        kwargs: dict[str, Any] = {}
        fields, neq_default = self.fields, self.neq_default
        for name, value in message.__dict__.items():
            known = fields.get(name)
            if known is None or name.startswith("_"):
                continue
            required, factory, excluded, field = known
            if not (required or _useful_falsy(value, factory, field, neq_default)) or excluded:
                continue
            kwargs[name] = value
        for attributes in self.attributes:
            kwargs.update(attributes(message))
        return {"lc": 1, "type": "constructor", "id": list(self.ident), "kwargs": kwargs}


def _useful_falsy(
    value: Any, factory: Any, field: Any, neq_default: Callable[[Any, Any], bool]
) -> bool:
    """``load.serializable._is_field_useful`` for a field that is not required."""
    try:
        if value:
            return True
    except Exception:  # a value with no truth value (a DataFrame) counts as falsy there
        pass
    if (factory is dict and isinstance(value, dict)) or (
        factory is list and isinstance(value, list)
    ):
        return False
    return bool(neq_default(value, field))


def _in_langchain_core(getter: Callable[[Any], Any]) -> bool:
    """Whether the getter's code is langchain-core's own (by its file: a module name is
    the user's to choose)."""
    code = getattr(getter, "__code__", None)
    return isinstance(code, CodeType) and code.co_filename.startswith(_LANGCHAIN_CORE)


_LANGCHAIN_CORE = os.path.join(os.path.dirname(os.path.abspath(langchain_core.__file__)), "")

_layouts: dict[type, _Layout | None] = {}


def _layout(cls: type[BaseMessage]) -> _Layout | None:
    try:
        return _layouts[cls]
    except KeyError:
        pass
    layout = _read_layout(cls)
    _layouts[cls] = layout
    return layout


def _read_layout(cls: type[BaseMessage]) -> _Layout | None:
    """The class as ``to_json`` sees it, or ``None`` where it does more than this replays."""
    neq_default = _try_neq_default
    if neq_default is None or cls.to_json is not Serializable.to_json:
        return None
    if cls.__iter__ is not BaseModel.__iter__ or cls.__getattribute__ is not _GETATTRIBUTE:
        return None  # ``to_json`` reads the fields with ``iter`` and ``getattr``
    try:
        if not cls.is_lc_serializable():
            return None
        mro = cls.__mro__
        stop = mro.index(Serializable)
    except (ValueError, TypeError):
        return None
    attributes: list[Callable[[Any], Any]] = []
    # ``to_json`` visits ``self`` and then ``super(c, self)`` for each class ``c`` before
    # ``Serializable``: each visit reads the first definition from that point of the MRO
    for start in range(stop + 1):
        if start and any(hasattr(mro[start - 1], name) for name in _DEPRECATED):
            return None  # ``to_json`` raises for these
        secrets = _definer(mro, start, "lc_secrets")
        owner = _definer(mro, start, "lc_attributes")
        if secrets is not Serializable or owner is None:
            return None
        if owner is not Serializable:
            getter = owner.__dict__["lc_attributes"]
            if not isinstance(getter, property) or getter.fget is None:
                return None
            attributes.append(getter.fget)
    return _Layout(cls, attributes, neq_default)


_DEPRECATED = ("lc_namespace", "lc_serializable")
_GETATTRIBUTE = BaseMessage.__getattribute__


def _definer(mro: tuple[type, ...], start: int, name: str) -> type | None:
    return next((c for c in mro[start:] if name in c.__dict__), None)


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
    if kind is int:  # ``json.dumps`` refuses an int of more digits than ``str`` writes
        return -_WRITTEN_INT < value < _WRITTEN_INT
    return kind is str or kind is float or kind is bool or value is None


#: Ints with fewer digits are written whatever ``sys.set_int_max_str_digits`` allows (640 at
#: least); larger ones take ``dumps``, which refuses them as the reference does.
_WRITTEN_INT = 10**639


def _remember(
    message: BaseMessage,
    state: bytes,
    canonical: dict[str, Any],
    read: Callable[[dict[str, Any]], Any] | None,
) -> None:
    key = id(message)

    def forget(ref: weakref.ref[BaseMessage]) -> None:
        _forget(key, ref)

    with _lock:
        _memo[key] = _Entry(weakref.ref(message, forget), type(message), state, canonical, read)


def _forget(key: int, ref: weakref.ref[BaseMessage]) -> None:
    with _lock:
        entry = _memo.get(key)
        if entry is not None and entry.ref is ref:
            del _memo[key]
