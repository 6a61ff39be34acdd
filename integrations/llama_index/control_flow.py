"""Workflow control flow: exceptions that steer a LlamaIndex run, not errors of a tool.

``WaitingForEvent`` of human-in-the-loop tools and the like propagate live: they are never
recorded (a paused step runs again), nor traced as a failed call.
"""

from __future__ import annotations

import importlib
from functools import cache

_CONTROL_FLOW = (
    ("workflows.runtime.types.results", "WaitingForEvent"),
    ("workflows.errors", "WorkflowDone"),
    ("workflows.errors", "WorkflowCancelledByUser"),
    ("workflows.errors", "WorkflowTimeoutError"),
)


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
