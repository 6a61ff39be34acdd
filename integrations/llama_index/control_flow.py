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


def is_control_flow(error: BaseException) -> bool:
    """Whether ``error`` steers the run (only workflows modules already imported are asked:
    an exception of a module never imported was never raised)."""
    for module_name, name in _CONTROL_FLOW:
        kind = getattr(sys.modules.get(module_name), name, None)
        if isinstance(kind, type) and isinstance(error, kind):
            return True
    return False
