"""Recording a tool's exception, and raising it again on replay with the same text.

Agents put ``str(error)`` (sometimes ``repr``) into the next request, so a replayed error
must read exactly like the recorded one or the next call misses: ``KeyError('2')`` reads
``'2'``, not ``"'2'"``. The exception's args are stored (JSON, else their repr) along with
its str and repr; the class is rebuilt only if it is a builtin or already imported (a
cassette never makes us import a module), and only if the rebuilt error reads the same.
Otherwise a ``RecordedToolError`` stands in, reading exactly as recorded.

Workflow control flow (``WaitingForEvent`` of human-in-the-loop tools and the like) is not
an error of the tool: it is never recorded, only propagated.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import json
import sys
from functools import cache
from typing import Any

_CONTROL_FLOW = (
    ("workflows.runtime.types.results", "WaitingForEvent"),
    ("workflows.errors", "WorkflowDone"),
    ("workflows.errors", "WorkflowCancelledByUser"),
    ("workflows.errors", "WorkflowTimeoutError"),
)
_NOT_JSON = "__repr__"


class RecordedToolError(Exception):
    """A recorded tool error whose exception type cannot be rebuilt here.

    ``str`` and ``repr`` are exactly those of the recorded exception; ``type_name`` names it.
    """

    def __init__(self, message: str, type_name: str = "", recorded_repr: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.type_name = type_name
        self.recorded_repr = recorded_repr

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return self.recorded_repr if self.recorded_repr is not None else super().__repr__()


@cache
def control_flow_types() -> tuple[type[BaseException], ...]:
    """The workflow exceptions that steer a run (imported from the installed workflows)."""
    found = []
    for module_name, name in _CONTROL_FLOW:
        try:
            kind = getattr(importlib.import_module(module_name), name)
        except (ImportError, AttributeError):
            continue
        if isinstance(kind, type) and issubclass(kind, BaseException):
            found.append(kind)
    return tuple(found)


def is_control_flow(error: BaseException) -> bool:
    return isinstance(error, control_flow_types())


def _encode_arg(value: Any) -> Any:
    try:
        if json.loads(json.dumps(value)) == value:
            return value
    except (TypeError, ValueError):
        pass
    return {_NOT_JSON: repr(value)}


def encode_error(error: BaseException) -> dict[str, Any]:
    """What a cassette stores about a tool's exception."""
    kind = type(error)
    return {
        "error": {
            "type": f"{kind.__module__}.{kind.__qualname__}",
            "message": str(error),
            "repr": repr(error),
            "args": [_encode_arg(arg) for arg in error.args],
        }
    }


def _loaded_class(name: str) -> type[Exception] | None:
    """The named exception class if it is a builtin or already imported; never imports."""
    for split in range(name.count("."), 0, -1):
        parts = name.split(".")
        module_name, path = ".".join(parts[:split]), parts[split:]
        module = builtins if module_name == "builtins" else sys.modules.get(module_name)
        if module is None:
            continue
        found: Any = module
        for part in path:
            found = getattr(found, part, None)
        if isinstance(found, type) and issubclass(found, Exception):
            return found
        return None
    return None


def _candidates(kind: type[Exception], args: list[Any]) -> list[Exception]:
    built: list[Exception] = []
    with contextlib.suppress(Exception):
        built.append(kind(*args))
    try:  # a class whose __init__ takes other arguments than its args
        bare = kind.__new__(kind, *args)
        bare.args = tuple(args)
        built.append(bare)
    except Exception:
        pass
    return built


def rebuild_error(data: dict[str, Any]) -> Exception:
    """The recorded exception, reading exactly as recorded, else a ``RecordedToolError``."""
    name = str(data.get("type") or "")
    message = str(data.get("message") or "")
    recorded_repr = data.get("repr")
    raw_args = data.get("args")
    args = list(raw_args) if isinstance(raw_args, list) else [message]
    kind = _loaded_class(name)
    as_json = not any(isinstance(a, dict) and set(a) == {_NOT_JSON} for a in args)
    if kind is not None and as_json:
        for error in _candidates(kind, args):
            try:
                same = str(error) == message and (
                    recorded_repr is None or repr(error) == recorded_repr
                )
            except Exception:
                same = False
            if same:
                return error
    return RecordedToolError(message, name, recorded_repr)
