"""Opt-in tool replay: ``FunctionTool`` results and errors recorded, replayed without running.

A tool call's request is ``{"kind": "tool", "tool": name, "args": ...}`` (canonical
arguments), so the n-th identical call gets the n-th recording, whatever the order in
which parallel calls happen. ``FunctionTool.call``/``acall`` are patched once, on first
use; the patch passes straight through unless the active cassette (``use_cassette``) or
the cassette of a ``CassetteLLM(..., replay_tools=True)`` asks for tool replay.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.tools import FunctionTool, ToolOutput

from chaincassette import Cassette, current_cassette

from . import codec, tool_scope
from .request import plain
from .tool_errors import RecordedToolError, encode_error, is_control_flow, rebuild_error

OPTION = "replay_tools"

_lock = threading.Lock()
_patched = False
_dispatcher = get_dispatcher(__name__)

__all__ = ["RecordedToolError", "enable_tool_replay", "install", "tool_cassette"]


def enable_tool_replay(cassette: Cassette) -> None:
    """Replay ``FunctionTool`` calls in ``cassette`` for the tools of a ``CassetteLLM``.

    Only calls made under an agent or workflow that uses that wrapper (``tool_scope``),
    and only when no other cassette is active: an active cassette decides for its block.
    """
    tool_scope.install()
    install()


def wants_tool_replay(cassette: Cassette | None) -> bool:
    return cassette is not None and bool(getattr(cassette, "options", {}).get(OPTION))


def tool_cassette() -> Cassette | None:
    """The cassette that records this tool call, if any.

    The active one when it asks for tool replay; with no active cassette, that of the
    ``CassetteLLM(..., replay_tools=True)`` whose agent makes the call.
    """
    active = current_cassette()
    if wants_tool_replay(active):
        return active
    scoped = tool_scope.scoped_cassette()
    return scoped if active is None or scoped is active else None


def _request(tool: FunctionTool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    arguments = {k: v for k, v in kwargs.items() if k != tool.ctx_param_name}
    return {
        "kind": "tool",
        "tool": tool.metadata.get_name(),
        "args": {"args": plain(list(args)), "kwargs": plain(arguments)},
    }


def _encode_output(output: ToolOutput) -> dict[str, Any]:
    return {
        "output": {
            "tool_name": output.tool_name,
            "blocks": [block.model_dump(mode="json") for block in output.blocks],
            "raw_input": codec.tag(plain(output.raw_input)),
            "raw_output": codec.tag(output.raw_output)
            if isinstance(output.raw_output, (dict, list, str, int, float, bool, type(None), bytes))
            or hasattr(output.raw_output, "model_dump")
            else repr(output.raw_output),
            "is_error": output.is_error,
        }
    }


def _decode_output(data: dict[str, Any]) -> ToolOutput:
    from llama_index.core.base.llms.types import ChatMessage

    blocks = ChatMessage.model_validate({"blocks": data.get("blocks") or []}).blocks
    return ToolOutput(
        tool_name=data["tool_name"],
        blocks=blocks or None,
        content=None if blocks else "",
        raw_input=codec.untag(data.get("raw_input")) or {},
        raw_output=codec.untag(data.get("raw_output")),
        is_error=bool(data.get("is_error")),
    )


def _answer(response: dict[str, Any]) -> ToolOutput:
    if "error" in response:
        raise rebuild_error(response["error"])
    return _decode_output(response["output"])


def install() -> None:
    """Patch ``FunctionTool.call``/``acall`` once (idempotent)."""
    global _patched
    with _lock:
        if _patched:
            return
        _patched = True
    original_call = getattr(FunctionTool.call, "__wrapped__", FunctionTool.call)
    original_acall = getattr(FunctionTool.acall, "__wrapped__", FunctionTool.acall)

    @functools.wraps(original_call)
    def call(self: FunctionTool, *args: Any, **kwargs: Any) -> ToolOutput:
        cassette = tool_cassette()
        if cassette is None:
            return original_call(self, *args, **kwargs)
        found = cassette.lookup(_request(self, args, kwargs))
        if found.hit:
            return _answer(found.response)
        try:
            output = original_call(self, *args, **kwargs)
        except Exception as error:
            if not is_control_flow(error):  # a paused step is retried: nothing to record
                cassette.record(found, encode_error(error), meta={"framework": "llama_index"})
            raise
        return _answer(
            cassette.record(found, _encode_output(output), meta={"framework": "llama_index"})
        )

    @functools.wraps(original_acall)
    async def acall(self: FunctionTool, *args: Any, **kwargs: Any) -> ToolOutput:
        cassette = tool_cassette()
        if cassette is None:
            return await original_acall(self, *args, **kwargs)
        found = cassette.lookup(_request(self, args, kwargs))
        if found.hit:
            return _answer(found.response)
        try:
            output = await original_acall(self, *args, **kwargs)
        except Exception as error:
            if not is_control_flow(error):  # a paused step is retried: nothing to record
                cassette.record(found, encode_error(error), meta={"framework": "llama_index"})
            raise
        return _answer(
            cassette.record(found, _encode_output(output), meta={"framework": "llama_index"})
        )

    for fn in (call, acall):
        if hasattr(fn, "__dispatcher_span_decorated__"):
            delattr(fn, "__dispatcher_span_decorated__")
    FunctionTool.call = _dispatcher.span(call)  # type: ignore[method-assign]
    FunctionTool.acall = _dispatcher.span(acall)  # type: ignore[method-assign]
