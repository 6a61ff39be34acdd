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

from .requests import DROPPED_MESSAGE_FIELDS, message_from_kwargs, message_from_lc

#: Where LangChain's own message classes live: their fields are all ``to_json`` writes.
_LANGCHAIN_MESSAGES = "langchain_core.messages."
#: The key ``dumps`` wraps a user dict holding ``lc`` in (``langchain_core.load``).
_ESCAPED = "__lc_escaped__"
#: Ints ``json.dumps`` writes whatever ``sys.set_int_max_str_digits`` allows (640 at least).
_WRITTEN_INT = 10**639


def canonical_messages(messages: Iterable[BaseMessage]) -> list[dict[str, Any]]:
    return [canonical_message(message) for message in messages]


def canonical_message(message: BaseMessage) -> dict[str, Any]:
    cls = type(message)
    if cls.__module__.startswith(_LANGCHAIN_MESSAGES) and not message.__pydantic_extra__:
        fields = {name: getattr(message, name) for name in cls.model_fields}
        if all(name in DROPPED_MESSAGE_FIELDS or _written_as_is(v) for name, v in fields.items()):
            return message_from_kwargs(fields)
    return message_from_lc(json.loads(dumps(message)))


def _written_as_is(value: Any) -> bool:
    """Plain JSON data that ``dumps`` writes unchanged: no dict it escapes (one holding
    ``lc``, or ``__lc_escaped__`` alone), no value it converts."""
    kind = type(value)
    if kind is str or value is None or kind is bool or kind is float:
        return True
    if kind is dict:
        if "lc" in value or (len(value) == 1 and _ESCAPED in value):
            return False
        return all(type(k) is str and _written_as_is(v) for k, v in value.items())
    if kind is list:
        return all(_written_as_is(v) for v in value)
    return kind is int and -_WRITTEN_INT < value < _WRITTEN_INT
