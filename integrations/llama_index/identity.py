"""Cheap, exact names of LlamaIndex requests, for the cassette's key memo (``core.key_memo``).

A replayed call would otherwise turn every message into JSON, normalize it and hash it
again, for a conversation the cassette has already keyed. ``Cassette.begin`` takes an
``identity`` instead: when it has seen the identity, it reuses that request and key.

So an identity must be *exact*: two calls with equal identities must build the same
canonical request (``request.chat_request`` / ``completion_request``). It is therefore
made of the builders' own inputs (the model name, the raw sampling values, messages,
keyword arguments, the stream flag), frozen into hashable values that are equal only
when the JSON they become is equal (``True``, ``1`` and ``1.0`` are three names; so are
``0.0`` and ``-0.0``). Whatever has no such cheap name (a provider object in a message's
kwargs, an image block, a pydantic class passed as an argument) makes the identity
``None``: the request is then built and hashed as before, never guessed.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock

from .request import VOLATILE_KWARGS


class _Unnamed(Exception):
    """A value with no cheap exact name: the caller falls back to no identity."""


def freeze(value: Any) -> Hashable:
    """A hashable stand-in for a JSON-like ``value``, equal only for values that
    ``request.plain`` turns into the same JSON (in the same key order).

    Raises ``_Unnamed`` for anything else (sets, enums, objects, …).
    """
    kind = type(value)
    if kind is str or value is None:
        return value
    if kind is bool or kind is int:
        return (kind, value)
    if kind is float:
        return (float, repr(value))  # repr tells 0.0 from -0.0, as JSON does
    if kind is dict:
        return (dict, tuple((freeze(k), freeze(v)) for k, v in value.items()))
    if kind is list or kind is tuple:
        return (kind, tuple(freeze(v) for v in value))
    raise _Unnamed


def _block(block: Any) -> Hashable:
    """What ``request.message_dict`` reads of a text or tool-call block."""
    kind = type(block)
    if kind is TextBlock:
        text = block.text
        if type(text) is not str:
            raise _Unnamed
        return text
    if kind is ToolCallBlock:
        return (
            kind,
            freeze(block.tool_call_id),
            freeze(block.tool_name),
            freeze(block.tool_kwargs),
        )
    raise _Unnamed  # images, thinking, documents…: JSON-dumped whole, named by no one here


def _message(message: ChatMessage) -> Hashable:
    extra = message.additional_kwargs
    if type(extra) is not dict:
        raise _Unnamed
    kept = tuple((freeze(k), freeze(v)) for k, v in extra.items() if k not in VOLATILE_KWARGS)
    return (message.role.value, tuple(_block(b) for b in message.blocks), kept)


def chat_identity(
    model: Any,
    values: Sequence[tuple[str, Any]],
    messages: Sequence[ChatMessage],
    kwargs: dict[str, Any],
    stream: bool,
    tools: dict[str, Any] | None,
) -> Hashable | None:
    """The identity of ``chat_request(model, params_of(values), messages, kwargs, stream,
    tools)``, or ``None`` when part of it has no cheap exact name."""
    try:
        if tools is not None:  # the neutral tool request holds the messages, as JSON
            conversation: Hashable = ("tools", freeze(tools))
        else:
            conversation = tuple(_message(m) for m in messages)
        return (
            "chat",
            freeze(model),
            _values(values),
            conversation,
            freeze(kwargs) if kwargs else _NO_KWARGS,
            stream,
        )
    except (_Unnamed, AttributeError, TypeError, RecursionError):
        return None


def completion_identity(
    model: Any,
    values: Sequence[tuple[str, Any]],
    prompt: Any,
    formatted: bool,
    kwargs: dict[str, Any],
    stream: bool,
) -> Hashable | None:
    """The identity of ``completion_request(model, params_of(values), prompt, formatted,
    kwargs, stream)``, or ``None``."""
    try:
        return (
            "completion",
            freeze(model),
            _values(values),
            prompt if type(prompt) is str else freeze(prompt),
            freeze(formatted),
            freeze(kwargs) if kwargs else _NO_KWARGS,
            stream,
        )
    except (_Unnamed, RecursionError):
        return None


_NO_KWARGS = freeze({})


def _values(values: Sequence[tuple[str, Any]]) -> Hashable:
    return tuple([(name, freeze(value)) for name, value in values])
