"""Opt-in tool replay: ``FunctionTool`` results and errors recorded, replayed without running.

A tool call is keyed by its name and canonical arguments, so the n-th identical call gets
the n-th recording whatever the order of parallel calls. The patched ``FunctionTool.call``
and ``acall`` pass straight through unless ``routing.tool_cassette`` names a cassette.
"""

from __future__ import annotations

import functools
from typing import Any, NoReturn

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.tools import FunctionTool, ToolOutput

from chaincassette import Call
from chaincassette.decoding import decoded
from chaincassette.error_codec import RecordedError, as_raised, encode_error, rebuild_error, steers
from chaincassette.patching import Patches

from . import codec, tool_scope
from .control_flow import is_control_flow
from .playback import FRAMEWORK
from .request import plain
from .routing import tool_cassette, wants_tool_replay

#: Kept under its former name: a recorded tool error whose class cannot be rebuilt here.
RecordedToolError = RecordedError

_dispatcher = get_dispatcher(__name__)

__all__ = [
    "RecordedToolError",
    "enable_tool_replay",
    "install",
    "tool_cassette",
    "wants_tool_replay",
]


def enable_tool_replay(wrapper: Any) -> None:
    """Replay ``FunctionTool`` calls made under the agents that use ``wrapper`` (a
    ``CassetteLLM(..., replay_tools=True)``, see ``tool_scope``) when no block decides."""
    tool_scope.install()
    install()


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


def _decoded(response: dict[str, Any]) -> ToolOutput | BaseException:
    if "error" in response:
        return rebuild_error(response["error"])
    return _decode_output(response["output"])


def _replayed(call: Call) -> ToolOutput:
    """The recorded output of a hit, or its error raised; a broken one is named."""
    answer = decoded(call, _decoded, call.response)
    if isinstance(answer, BaseException):
        raise answer
    return answer


def _begin(tool: FunctionTool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call | None:
    cassette = tool_cassette()
    if cassette is None:
        return None
    return cassette.begin(_request(tool, args, kwargs), meta={"framework": FRAMEWORK})


def _raise_recorded(call: Call, error: BaseException) -> NoReturn:
    """Record a tool's exception (redacted like a provider's) and raise it, or what a replay
    raises when redaction changed its text; a paused step, an interrupt or other control
    flow (``steers``) is not recorded."""
    if isinstance(error, Exception) and not is_control_flow(error) and not steers(error):
        stored = call.record({"error": call.cassette.redactor.redact(encode_error(error))})
        raised = as_raised(error, stored["error"])
        if raised is not error:
            raise raised from None
    else:
        call.abandon()
    raise error


def _apply(patches: Patches) -> None:
    original_call = getattr(FunctionTool.call, "__wrapped__", FunctionTool.call)
    original_acall = getattr(FunctionTool.acall, "__wrapped__", FunctionTool.acall)

    @functools.wraps(original_call)
    def call(self: FunctionTool, *args: Any, **kwargs: Any) -> ToolOutput:
        recorded = _begin(self, args, kwargs)
        if recorded is None:
            return original_call(self, *args, **kwargs)
        if recorded.hit:
            with recorded.turn():  # behind the tools that finished before it when recorded
                return _replayed(recorded)
        try:
            output = original_call(self, *args, **kwargs)
        except BaseException as error:
            _raise_recorded(recorded, error)
        return _decode_output(recorded.record(_encode_output(output))["output"])

    @functools.wraps(original_acall)
    async def acall(self: FunctionTool, *args: Any, **kwargs: Any) -> ToolOutput:
        recorded = _begin(self, args, kwargs)
        if recorded is None:
            return await original_acall(self, *args, **kwargs)
        if recorded.hit:
            async with recorded.turn():
                return _replayed(recorded)
        try:
            output = await original_acall(self, *args, **kwargs)
        except BaseException as error:
            _raise_recorded(recorded, error)
        return _decode_output(recorded.record(_encode_output(output))["output"])

    for fn in (call, acall):
        if hasattr(fn, "__dispatcher_span_decorated__"):
            delattr(fn, "__dispatcher_span_decorated__")
    patches.replace(FunctionTool, "call", _dispatcher.span(call))
    patches.replace(FunctionTool, "acall", _dispatcher.span(acall))


PATCHES = Patches(_apply)
install = PATCHES.install
