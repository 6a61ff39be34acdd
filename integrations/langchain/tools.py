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

import importlib
import sys
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from langchain_core.globals import get_llm_cache
from langchain_core.tools import BaseTool, StructuredTool, Tool, ToolException
from langchain_core.tools import base as tools_base

from chaincassette import Cassette, current_cassette
from chaincassette.canonical import json_copy

from .labels import current_labels

OPTION = "replay_tools"

_capture: ContextVar[dict[str, Any] | None] = ContextVar(
    "chaincassette_lc_tool_capture", default=None
)
_inside: ContextVar[bool] = ContextVar("chaincassette_lc_tool_inside", default=False)
_lock = threading.Lock()
_users = 0
_originals: dict[str, Any] = {}


def cassette_for_tools() -> tuple[Cassette, bool] | None:
    """(cassette, autosave) recording tools here, or ``None``."""
    from .cache import CassetteCache

    active = current_cassette()
    if active is not None:
        return (active, False) if active.options.get(OPTION) else None
    shared = get_llm_cache()
    if isinstance(shared, CassetteCache) and shared.replay_tools and shared.cassette is not None:
        return shared.cassette, shared.autosave
    return None


def install() -> None:
    global _users
    with _lock:
        _users += 1
        if _users > 1:
            return
        _originals["run"] = BaseTool.__dict__["run"]
        _originals["arun"] = BaseTool.__dict__["arun"]
        _originals["_format_output"] = tools_base._format_output
        BaseTool.run = _patched_run  # type: ignore[method-assign]
        BaseTool.arun = _patched_arun  # type: ignore[method-assign]
        tools_base._format_output = _capturing_format_output


def uninstall() -> None:
    global _users
    with _lock:
        if _users == 0:
            return
        _users -= 1
        if _users:
            return
        BaseTool.run = _originals.pop("run")  # type: ignore[method-assign]
        BaseTool.arun = _originals.pop("arun")  # type: ignore[method-assign]
        tools_base._format_output = _originals.pop("_format_output")


def _capturing_format_output(
    content: Any, artifact: Any, tool_call_id: Any, name: str, status: str
) -> Any:
    slot = _capture.get()
    if slot is not None and "outcome" not in slot:
        slot["outcome"] = (content, artifact, status)
    return _originals["_format_output"](content, artifact, tool_call_id, name, status)


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


def _error_outcome(error: BaseException) -> dict[str, Any]:
    """The recorded form of a tool's exception: enough to rebuild an equal ``str``/``repr``.

    The ``ToolMessage`` text LangChain makes from the error feeds the next model request,
    so a replay must reproduce ``str(error)`` and ``repr(error)`` exactly.
    """
    cls = type(error)
    if cls.__module__.startswith("langgraph"):  # interrupts, parent commands: control flow
        return {"live": True}
    try:
        args: Any = json_copy(list(error.args))
        if tuple(args) != error.args:  # tuples, subclasses: not exact
            args = None
    except TypeError:
        args = None
    return {
        "error": {
            "type": _class_name(cls),
            "bases": [_class_name(c) for c in cls.__mro__[1:] if issubclass(c, BaseException)],
            "args": args,
            "message": str(error),
            "repr": repr(error),
        }
    }


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _known_class(name: str) -> type[BaseException] | None:
    """A recorded exception class, only from builtins, langchain_core or modules already
    imported: a cassette must never make the program import a module it names."""
    module_name, _, qualname = name.partition(".") if name.startswith("builtins.") else ("", "", "")
    if not module_name:
        for candidate in sorted(sys.modules, key=len, reverse=True):
            if name.startswith(candidate + "."):
                module_name, qualname = candidate, name[len(candidate) + 1 :]
                break
        else:
            return None
    module = sys.modules.get(module_name)
    if module is None:
        if not (module_name == "langchain_core" or module_name.startswith("langchain_core.")):
            return None
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            return None
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if isinstance(found, type) and issubclass(found, BaseException):
        return found
    return None


def _revive_error(error: dict[str, Any]) -> BaseException:
    message = str(error.get("message", ""))
    text = str(error.get("repr", ""))
    args = error.get("args")
    cls = _known_class(str(error.get("type", "")))
    if cls is not None and isinstance(args, list) and issubclass(cls, Exception):
        try:
            revived = cls(*args)
        except Exception:  # needs other arguments
            pass
        else:
            if str(revived) == message and (not text or repr(revived) == text):
                return revived
    base = cls
    if base is None:  # the nearest recorded base class we may use keeps except-clauses working
        for name in error.get("bases") or ():
            base = _known_class(str(name))
            if base is not None:
                break
    if base is None or not issubclass(base, Exception):
        base = (
            ToolException
            if "langchain_core.tools.base.ToolException" in (error.get("bases") or ())
            else Exception
        )
    return _replica(base, str(error.get("type", "")), message, text or None, args)


def _replica(
    base: type[BaseException], name: str, message: str, text: str | None, args: Any
) -> BaseException:
    """An instance of a ``base`` subclass whose ``str``/``repr`` are the recorded ones."""
    module, _, qualname = name.rpartition(".")

    def __init__(self: BaseException, *a: Any) -> None:
        BaseException.__init__(self, *a)

    namespace = {
        "__init__": __init__,
        "__str__": lambda self: message,
        "__repr__": lambda self: text if text is not None else f"{qualname}({message!r})",
        "__module__": module or __name__,
        "__qualname__": qualname or "RecordedToolError",
    }
    try:
        replica = type(qualname.rpartition(".")[2] or "RecordedToolError", (base,), namespace)
        return replica(*(args if isinstance(args, list) else [message]))
    except Exception:  # a base whose layout forbids subclassing or construction
        fallback = type("RecordedToolError", (Exception,), namespace)
        return fallback(message)


def _stand_in(tool: BaseTool, outcome: dict[str, Any]) -> BaseTool:
    """A tool with ``tool``'s name, schema and settings that returns ``outcome``."""
    content = outcome.get("content")
    artifact = outcome.get("artifact")
    failed = outcome.get("status") == "error"
    error = outcome.get("error")

    def respond(*args: Any, **kwargs: Any) -> Any:
        if error:
            raise _revive_error(error)
        if failed:
            raise ToolException(content)
        return (content, artifact) if tool.response_format == "content_and_artifact" else content

    async def arespond(*args: Any, **kwargs: Any) -> Any:
        return respond()

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


def _meta(tool: BaseTool) -> dict[str, Any]:
    labels = current_labels()
    labels.pop("step", None)
    return {"framework": "langchain", **labels}


def _patched_run(self: BaseTool, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
    original: Callable[..., Any] = _originals["run"]
    target = None if _inside.get() else cassette_for_tools()
    if target is None:
        token = _capture.set(None)
        try:
            return original(self, tool_input, *args, **kwargs)
        finally:
            _capture.reset(token)
    cassette, autosave = target
    found = cassette.lookup(_request(self, tool_input))
    if found.hit and "live" not in found.response:
        return original(_stand_in(self, found.response), tool_input, *args, **kwargs)
    slot: dict[str, Any] = {}
    tokens = (_capture.set(slot), _inside.set(True))
    try:
        output = original(self, tool_input, *args, **kwargs)
    except Exception as error:
        if not found.hit:
            _save(cassette, autosave, found, _error_outcome(error), self)
        raise
    finally:
        _inside.reset(tokens[1])
        _capture.reset(tokens[0])
    if not found.hit:
        _save(cassette, autosave, found, _outcome(slot), self)
    return output


async def _patched_arun(self: BaseTool, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
    original: Callable[..., Any] = _originals["arun"]
    target = None if _inside.get() else cassette_for_tools()
    if target is None:
        token = _capture.set(None)
        try:
            return await original(self, tool_input, *args, **kwargs)
        finally:
            _capture.reset(token)
    cassette, autosave = target
    found = cassette.lookup(_request(self, tool_input))
    if found.hit and "live" not in found.response:
        return await original(_stand_in(self, found.response), tool_input, *args, **kwargs)
    slot: dict[str, Any] = {}
    tokens = (_capture.set(slot), _inside.set(True))
    try:
        output = await original(self, tool_input, *args, **kwargs)
    except Exception as error:
        if not found.hit:
            _save(cassette, autosave, found, _error_outcome(error), self)
        raise
    finally:
        _inside.reset(tokens[1])
        _capture.reset(tokens[0])
    if not found.hit:
        _save(cassette, autosave, found, _outcome(slot), self)
    return output


def _save(
    cassette: Cassette, autosave: bool, found: Any, outcome: dict[str, Any], tool: BaseTool
) -> None:
    cassette.record(found, outcome, meta=_meta(tool))
    if autosave and current_cassette() is not cassette:
        cassette.save()
