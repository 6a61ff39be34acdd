"""The canonical form of a LangChain chat message, read from its public fields.

The form is what ``requests.message_from_lc`` makes of LangChain's own serialization
(``dumps``): role, content, name, tool calls, the call a result answers. For LangChain's
message classes holding plain JSON data, ``dumps`` writes each field as it is (a field it
leaves out is one at its empty default, which the form leaves out too), so the form is
read from the fields directly. Anything else (a class of the program's own, pydantic
extras, values ``dumps`` must convert or escape) goes through ``dumps`` itself: LangChain
decides, and ``tests/langchain/test_messages.py`` holds the two paths to the same forms.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from langchain_core.load import dumps
from langchain_core.messages import BaseMessage

from .requests import message_from_kwargs, message_from_lc

#: Where LangChain's own message classes live: their fields are all ``to_json`` writes.
_LANGCHAIN_MESSAGES = "langchain_core.messages."
#: The key ``dumps`` wraps a user dict holding ``lc`` in (``langchain_core.load``).
_ESCAPED = "__lc_escaped__"
#: Ints ``json.dumps`` writes whatever ``sys.set_int_max_str_digits`` allows (640 at least).
_WRITTEN_INT = 10**639
_WRITTEN_INT_MIN = -_WRITTEN_INT


def canonical_messages(messages: Iterable[BaseMessage]) -> list[dict[str, Any]]:
    return [canonical_message(message) for message in messages]


def canonical_message(message: BaseMessage) -> dict[str, Any]:
    cls = type(message)
    if cls.__module__.startswith(_LANGCHAIN_MESSAGES) and not message.__pydantic_extra__:
        fields = message.__dict__  # a pydantic model's fields, as ``to_json`` reads them
        try:
            if not _escapes(fields):
                return message_from_kwargs(fields, plain=_as_is)
        except _Converted:
            pass
    return message_from_lc(json.loads(dumps(message)))


def _escapes(fields: dict[str, Any]) -> bool:
    """Whether a dict ``message_from_kwargs`` reads key by key (a content block, a tool
    call), not through ``plain``, is one ``dumps`` would escape (it holds ``lc``)."""
    for name in ("content", "tool_calls", "invalid_tool_calls"):
        value = fields.get(name)
        if type(value) is list:
            for item in value:
                if type(item) is dict and _escaped(item):
                    return True
    return False


def _escaped(value: Any) -> bool:
    return type(value) is dict and ("lc" in value or (len(value) == 1 and _ESCAPED in value))


class _Converted(Exception):
    """A value ``dumps`` would not write as it is: LangChain's own path decides."""


def _as_is(value: Any) -> Any:
    """A copy of plain JSON data that ``dumps`` writes unchanged (no dict it escapes, one
    holding ``lc`` or ``__lc_escaped__`` alone, no value it converts); else ``_Converted``."""
    kind = type(value)
    if kind is str or kind is bool or kind is float or value is None:
        return value
    if kind is int:
        if _WRITTEN_INT_MIN < value < _WRITTEN_INT:
            return value
        raise _Converted
    if kind is dict:
        if _escaped(value):
            raise _Converted
        copy = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _Converted
            copy[key] = item if type(item) is str else _as_is(item)
        return copy
    if kind is list:
        return [item if type(item) is str else _as_is(item) for item in value]
    raise _Converted
