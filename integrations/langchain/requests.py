"""The canonical request of a LangChain model call, built from what LangChain hands a cache.

LangChain gives a ``BaseCache`` two strings: ``prompt`` (``dumps`` of the messages, or the
raw text for a completion LLM) and ``llm_string`` (the model's serialized constructor plus
a Python ``repr`` of the call's keyword arguments). Both carry per-run noise: provider
tool-call IDs, timestamps, usage (with the ``total_cost: 0`` LangChain adds on every cache
hit), content-block IDs, memory addresses. This module reads both strings as plain data
(``json.loads`` and ``ast.literal_eval``, never object revival) and keeps only what changes
the model's answer; the engine's normalizers then alias tool-call IDs and hash it.

The provider-boundary wrappers read the messages' fields (``messages``) and the same
``llm_string`` from the model, so a call gets the same key whichever layer sees it.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from typing import Any

from chaincassette.keyrules import is_client_setting
from chaincassette.memo import Memo

#: Call keyword arguments promoted to top-level request fields.
TOP_LEVEL_FIELDS = ("tools", "tool_choice", "response_format", "stop")
#: Serialized model kwargs that name the model.
MODEL_NAME_FIELDS = ("model", "model_name", "model_id", "deployment_name", "azure_deployment")

_ROLE = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "function",
}
_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+")
#: Message fields that are noise for the key (the engine drops some of these too); ``type``
#: is read only to name the role.
DROPPED_MESSAGE_FIELDS = frozenset(
    {"id", "response_metadata", "usage_metadata", "artifact", "type", "example", "lc_attributes"}
)


_CHAT_PREFIX = '[{"lc"'


def _chat_list(prompt: str) -> list[dict[str, Any]] | None:
    """LangChain's serialized message list, or ``None`` for completion text."""
    if not prompt.startswith(_CHAT_PREFIX):
        return None
    try:
        value = json.loads(prompt)
    except ValueError:
        return None
    if isinstance(value, list) and all(isinstance(v, dict) and "lc" in v for v in value):
        return value
    return None


def is_chat_prompt(prompt: str) -> bool:
    """Whether ``prompt`` is LangChain's serialized message list (else completion text):
    ``dumps`` of a message list always starts so, and a completion's text hardly ever."""
    return prompt.startswith(_CHAT_PREFIX)


#: What ``ModelFields`` remembers: one entry per model configuration, in practice.
MAX_MODEL_CONFIGURATIONS = 64


class ModelFields:
    """The request fields ``llm_string`` gives (model, parameters, tools…), parsed once per
    string: a model sends the same one on every call, and the parse (``ast.literal_eval``
    of every tool schema) would cost more than the rest of a replay. One per cassette."""

    def __init__(self) -> None:
        self._parsed: Memo[tuple[str, str], dict[str, Any]] = Memo(MAX_MODEL_CONFIGURATIONS)

    def __call__(self, llm_string: str, kind: str) -> dict[str, Any]:
        """The fields, for a request the cassette keys: the engine reads a request and never
        changes it (``tests/core/test_request_keys.py``), so their values are shared."""
        name = (llm_string, kind)
        fields = self._parsed.get(name)
        if fields is None:
            fields = model_fields(llm_string, kind)
            self._parsed.put(name, fields)
        return dict(fields)


def build_request(
    prompt: str, llm_string: str, fields: ModelFields | None = None, *, stream: bool = False
) -> dict[str, Any]:
    """The canonical request for one model call (chat when ``prompt`` is a message list)."""
    messages = _chat_list(prompt)
    if messages is not None:
        canonical = [message_from_lc(m) for m in messages]
        return chat_request(canonical, llm_string, fields, stream=stream)
    parsed = fields(llm_string, "completion") if fields else model_fields(llm_string, "completion")
    return {**parsed, "prompt": prompt}


def chat_request(
    messages: list[dict[str, Any]], llm_string: str, fields: ModelFields | None, *, stream: bool
) -> dict[str, Any]:
    """The canonical request of a chat call whose messages are already canonical
    (``fields``: the cassette's parses of ``llm_string``, if it keeps them)."""
    parsed = fields(llm_string, "chat") if fields is not None else model_fields(llm_string, "chat")
    return {**parsed, "messages": messages, "stream": stream}


def model_fields(llm_string: str, kind: str) -> dict[str, Any]:
    """The request's fields that ``llm_string`` gives."""
    model, params, source = parse_llm_string(llm_string)
    request: dict[str, Any] = {"kind": kind, "model": model}
    for field in TOP_LEVEL_FIELDS:
        if field in params:
            value = params.pop(field)
            if value is not None:
                request[field] = value
    request["params"] = params
    if source:
        request["model_class"] = source
    return request


def parse_llm_string(llm_string: str) -> tuple[str, dict[str, Any], str | None]:
    """(model name, parameters, model class path) from LangChain's ``llm_string``."""
    serialized: dict[str, Any] = {}
    call_part = llm_string
    if "---" in llm_string and llm_string.startswith("{"):
        head, _, call_part = llm_string.partition("---")
        try:
            serialized = json.loads(head)
        except ValueError:
            serialized, call_part = {}, llm_string
    fields: dict[str, Any] = {}
    source = None
    if serialized:
        kwargs = serialized.get("kwargs")
        fields.update(kwargs if isinstance(kwargs, dict) else {})
        ident = serialized.get("id")
        if isinstance(ident, list):
            source = ".".join(str(p) for p in ident)
    fields.update(_parse_repr_items(call_part))
    model = ""
    for name in MODEL_NAME_FIELDS:
        if isinstance(fields.get(name), str) and fields[name]:
            model = fields.pop(name)
            break
    if not model:
        model = str(fields.get("_type") or source or "unknown")
    params = {
        k: plain_value(v)
        for k, v in sorted(fields.items())
        if not is_client_setting(k) and not _is_secret_ref(v)
    }
    return model, params, source


def _parse_repr_items(text: str) -> dict[str, Any]:
    """``[('stop', None), ('tools', [...])]`` → dict; unreadable reprs are kept as text."""
    text = text.strip()
    if not text:
        return {}
    try:
        items = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {"unparsed_params": _ADDRESS.sub("", text)}
    if isinstance(items, list) and all(isinstance(i, tuple) and len(i) == 2 for i in items):
        return {str(k): v for k, v in items}
    return {"unparsed_params": _ADDRESS.sub("", text)}


def _is_secret_ref(value: Any) -> bool:
    return isinstance(value, dict) and value.get("lc") == 1 and value.get("type") == "secret"


def plain_value(value: Any) -> Any:
    """JSON-only view of a literal: tuples become lists, other objects their repr."""
    if isinstance(value, dict):
        if value.get("lc") == 1 and value.get("type") == "not_implemented":
            return _ADDRESS.sub("", str(value.get("repr") or value.get("id")))
        if "__lc_escaped__" in value and len(value) == 1:
            return plain_value(value["__lc_escaped__"])
        return {str(k): plain_value(v) for k, v in value.items() if not _is_secret_ref(v)}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [plain_value(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return _ADDRESS.sub("", repr(value))


def message_from_lc(serialized: dict[str, Any]) -> dict[str, Any]:
    """One ``dumps``-ed message reduced to role, content, name, tool calls and tool results."""
    raw = serialized.get("kwargs")
    ident = serialized.get("id") or []
    return message_from_kwargs(raw if isinstance(raw, dict) else {}, ident[-1] if ident else None)


def message_from_kwargs(
    kwargs: dict[str, Any], class_name: Any = None, plain: Callable[[Any], Any] = plain_value
) -> dict[str, Any]:
    """A message's fields (as ``dumps`` writes them) reduced to what the model reads;
    ``class_name`` names the role when there is no ``type`` field; ``plain`` makes each
    value JSON (``messages`` passes one that refuses what ``dumps`` would convert)."""
    kind = str(kwargs.get("type") or class_name or "unknown")
    role = _ROLE.get(kind, kwargs.get("role") or kind)
    content = kwargs.get("content", "")
    message: dict[str, Any] = {
        "role": role,
        "content": content if type(content) is str else _content(content, plain),
    }
    for field in sorted(kwargs):
        if field in _NOT_COPIED:
            continue
        value = kwargs[field]
        if not value and (value is None or isinstance(value, _EMPTY_WHEN_FALSY)):
            continue  # empty (``0`` and ``False`` are values)
        if field in _TOOL_CALL_LISTS:
            message[field] = [_tool_call(c, plain) for c in value]
        elif type(value) is str:
            if field != "status" or value != "success":
                message[field] = value
        else:
            message[field] = plain(value)
    return message


#: Fields ``message_from_kwargs`` does not copy as they are.
_NOT_COPIED = DROPPED_MESSAGE_FIELDS | {"content", "role"}
_TOOL_CALL_LISTS = frozenset({"tool_calls", "invalid_tool_calls"})
#: Types whose falsy values are the empty ones a field at its default holds.
_EMPTY_WHEN_FALSY = (str, list, dict)


def _tool_call(call: Any, plain: Callable[[Any], Any]) -> Any:
    if not isinstance(call, dict):
        return plain(call)
    return {k: v if type(v) is str else plain(v) for k, v in call.items() if k not in _NOT_IN_CALL}


_NOT_IN_CALL = frozenset({"type", "index"})


def _content(content: Any, plain: Callable[[Any], Any]) -> Any:
    """Content with LangChain-minted block IDs (``lc_…``) removed; tool-call IDs stay for aliasing."""
    if isinstance(content, list):
        blocks = []
        for block in content:
            if isinstance(block, dict):
                block = {
                    k: plain(v)
                    for k, v in block.items()
                    if not (k == "id" and isinstance(v, str) and v.startswith("lc_"))
                }
            else:
                block = plain(block)
            blocks.append(block)
        return blocks
    return plain(content)
