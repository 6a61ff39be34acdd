"""Opt-in tool replay (``replay_tools=True``): tool results come from the cassette.

``BaseTool.run``/``arun`` are patched while enabled. A call is keyed by tool name and its
arguments (injected state and ``tool_call_id`` filtered out, as LangChain does for
callbacks) plus its occurrence, never by the provider's call ID. On record the raw
outcome is captured where LangChain formats it (``content``, ``artifact``, ``status``) or
the exception is stored; on replay the *original* ``run`` executes on a stand-in tool
that returns that outcome, so validation, ``on_tool_start``/``on_tool_end`` and the
``ToolMessage`` with the live ``tool_call_id`` are exactly as when live.

Outcomes that are not plain data (a LangGraph ``Command`` from a hand-off tool, an
``interrupt``) are marked ``live``: the tool runs again on replay.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from functools import partial
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, Tool, ToolException
from langchain_core.tools import base as tools_base

from chaincassette import Call
from chaincassette.canonical import json_copy
from chaincassette.decoding import decoded
from chaincassette.error_codec import as_raised, encode_error, rebuild_error, steers
from chaincassette.patching import Patches

from . import routing
from .labels import call_meta

OPTION = routing.REPLAY_TOOLS
#: Where ``BaseTool.run`` turns a tool's outcome into its output: the one place its raw
#: content, artifact and status meet (LangChain has no public hook for them).
FORMAT_OUTPUT = "_format_output"

#: The outcome of the tool being recorded in this context (filled where it is formatted).
_capture: ContextVar[dict[str, Any] | None] = ContextVar(
    "chaincassette_lc_tool_capture", default=None
)
#: A tool recorded here runs live: tools it calls are part of its outcome.
_inside: ContextVar[bool] = ContextVar("chaincassette_lc_tool_inside", default=False)


def _apply(patches: Patches) -> None:
    run, arun = BaseTool.__dict__["run"], BaseTool.__dict__["arun"]
    format_output = getattr(tools_base, FORMAT_OUTPUT)

    def capturing_format_output(
        content: Any, artifact: Any, tool_call_id: Any, name: str, status: str
    ) -> Any:
        slot = _capture.get()
        if slot is not None and "outcome" not in slot:
            mask = slot.get("mask")
            if mask is not None:  # the secret values the file will not hold: masked here too
                content, artifact = mask(content), mask(artifact)
            slot["outcome"] = (content, artifact, status)
        return format_output(content, artifact, tool_call_id, name, status)

    def patched_run(self: BaseTool, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        call = _begin(self, tool_input)
        if call is None and _capture.get() is None:  # nothing to record, nothing to hide
            return run(self, tool_input, *args, **kwargs)
        tool, recording = _serving(self, call)
        with recording:
            return run(tool, tool_input, *args, **kwargs)

    async def patched_arun(self: BaseTool, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        call = _begin(self, tool_input)
        if call is None and _capture.get() is None:
            return await arun(self, tool_input, *args, **kwargs)
        tool, recording = _serving(self, call)
        with recording:
            return await arun(tool, tool_input, *args, **kwargs)

    patches.replace(BaseTool, "run", functools.wraps(run)(patched_run))
    patches.replace(BaseTool, "arun", functools.wraps(arun)(patched_arun))
    patches.replace(tools_base, FORMAT_OUTPUT, capturing_format_output)


PATCHES = Patches(_apply)
install = PATCHES.install


def _request(tool: BaseTool, tool_input: Any) -> dict[str, Any]:
    args = tool._filter_injected_args(tool_input) if isinstance(tool_input, dict) else tool_input
    try:
        plain = json_copy(args)
    except TypeError:
        from .serde import to_json

        plain = to_json(args)
    return {"kind": "tool", "tool": tool.name, "args": plain}


def _outcome(slot: dict[str, Any]) -> dict[str, Any]:
    if "outcome" not in slot:
        return {"live": True}
    content, artifact, status = slot["outcome"]
    try:
        stored = json_copy({"content": content, "artifact": artifact})
    except TypeError:
        return {"live": True}
    if stored != {"content": content, "artifact": artifact}:  # tuples, subclasses: not exact
        return {"live": True}
    out: dict[str, Any] = {"content": content}
    if artifact is not None:
        out["artifact"] = artifact
    if status != "success":
        out["status"] = status
    return out


def _error_outcome(error: BaseException, call: Call) -> dict[str, Any]:
    """The recorded form of a tool's exception (``chaincassette.error_codec``), redacted like
    a provider's; LangGraph's interrupts and parent commands, and other control flow
    (``steers``), are no answers: the tool runs again on replay."""
    if type(error).__module__.startswith("langgraph") or steers(error):
        return {"live": True}
    return {"error": call.cassette.redactor.redact(encode_error(error))}


def _recorded_failure(call: Call, error: BaseException) -> BaseException:
    """Record the tool's ``error``; what to raise: ``error``, or what a replay raises when
    redaction changed its text (a secret in its message)."""
    stored = call.record(_error_outcome(error, call))
    return as_raised(error, stored["error"]) if "error" in stored else error


def _stand_in(tool: BaseTool, outcome: dict[str, Any], call: Call) -> BaseTool:
    """A tool with ``tool``'s name, schema and settings that returns ``outcome``, once the
    tools that finished before it when it was recorded have (``Call.turn``)."""
    content = outcome.get("content")
    artifact = outcome.get("artifact")
    failed = outcome.get("status") == "error"
    error = rebuild_error(outcome["error"]) if outcome.get("error") else None

    def answer() -> Any:
        if error is not None:
            raise error
        if failed:
            raise ToolException(content)
        return (content, artifact) if tool.response_format == "content_and_artifact" else content

    def respond(*args: Any, **kwargs: Any) -> Any:
        with call.turn():
            return answer()

    async def arespond(*args: Any, **kwargs: Any) -> Any:
        async with call.turn():
            return answer()

    handle: Any = (lambda _e: content) if failed else tool.handle_tool_error
    common: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "func": respond,
        "coroutine": arespond,
        "response_format": tool.response_format,
        "return_direct": tool.return_direct,
        "handle_tool_error": handle,
        "callbacks": tool.callbacks,
        "tags": tool.tags,
        "metadata": tool.metadata,
        "verbose": tool.verbose,
    }
    if tool.args_schema is None:  # a single-string-input ``Tool``
        return Tool(**common)
    return StructuredTool(
        **common,
        args_schema=tool.args_schema,
        handle_validation_error=tool.handle_validation_error,
    )


def _begin(tool: BaseTool, tool_input: Any) -> Call | None:
    """The call of this tool in the cassette that replays tools here, if any."""
    target = None if _inside.get() else routing.route(tools=True)
    if target is None:
        return None
    return target.cassette.begin(
        _request(tool, tool_input), meta=call_meta(), autosave=target.autosave
    )


def _serving(tool: BaseTool, call: Call | None) -> tuple[BaseTool, AbstractContextManager[Any]]:
    """The tool to run (a stand-in returning the recording, on a hit) and what records it."""
    if call is not None and call.hit and "live" not in call.response:
        return decoded(call, _stand_in, tool, call.response, call), nullcontext()
    return tool, _recording(call)


@contextmanager
def _recording(call: Call | None) -> Iterator[None]:
    """Run the live tool: its outcome (or exception) is captured where LangChain formats it
    and recorded; with no call, only make sure an outer capture does not see it."""
    if call is None:
        token = _capture.set(None)
        try:
            yield
        finally:
            _capture.reset(token)
        return
    where = str(call.cassette.path)
    slot: dict[str, Any] = {"mask": partial(call.mask_response, where=where)}
    tokens = (_capture.set(slot), _inside.set(True))
    try:
        yield
    except Exception as error:
        raised = _recorded_failure(call, error)
        if raised is error:
            raise
        raise raised from None
    except BaseException:
        call.abandon()
        raise
    finally:
        _inside.reset(tokens[1])
        _capture.reset(tokens[0])
    call.record(_outcome(slot))
