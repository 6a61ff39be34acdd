"""Workflow control flow: exceptions that steer a LlamaIndex run, not errors of a tool.

``WaitingForEvent`` of human-in-the-loop tools and the like propagate live: they are never
recorded (a paused step runs again), nor traced as a failed call.
"""

from __future__ import annotations

import sys

_CONTROL_FLOW = (
    ("workflows.runtime.types.results", "WaitingForEvent"),
    ("workflows.errors", "WorkflowDone"),
    ("workflows.errors", "WorkflowCancelledByUser"),
    ("workflows.errors", "WorkflowTimeoutError"),
)


def control_flow_types() -> tuple[type[BaseException], ...]:
    """The workflow exceptions that steer a run (of the workflows modules imported: an
    exception of a module never imported was never raised)."""
    found = []
    for module_name, name in _CONTROL_FLOW:
        module = sys.modules.get(module_name)
        kind = getattr(module, name, None) if module is not None else None
        if kind is None:
            continue
        if isinstance(kind, type) and issubclass(kind, BaseException):
            found.append(kind)
    return tuple(found)


def is_control_flow(error: BaseException) -> bool:
    return isinstance(error, control_flow_types())
