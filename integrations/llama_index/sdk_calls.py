"""A call served below LlamaIndex (a provider SDK called in a workflow step or a tool) in the
trace.

The SDK layer hands its trace node over (``chaincassette.call_sites``); if the call was
made inside a span of this cassette's capture, it becomes a child of the nearest captured
node (the workflow run, the agent step, the tool), and ``in`` names the span it was made
in (``MyWorkflow.summarise``: a workflow step is a span, not a node of its own). The
collector's own members (``_owner``, ``_lock``, ``nodes``) are used from here, in the same
package, rather than widening ``trace``'s interface for one caller.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from llama_index.core.instrumentation.span import active_span_id

from chaincassette.call_sites import placing

from . import trace


def place(cassette: Any, node: dict[str, Any]) -> bool:
    """Add ``node`` under the captured run this call was made in, if there is one."""
    span_id = active_span_id.get()
    if not span_id:
        return False
    with trace._active_lock:
        collectors = [c for c in trace._active if c.cassette is cassette]
    for collector in collectors:
        with collector._lock:
            if span_id not in collector._owner:
                continue
            owner = collector._owner[span_id]
            entry = {**node, "in": span_id.rsplit("-", 5)[0]}
            entry["id"] = len(collector.nodes) + 1
            entry["parent"] = owner["id"] if owner else None
            collector.nodes.append(entry)
        return True
    return False


@contextmanager
def placed() -> Iterator[None]:
    """For the length of a block: SDK calls made inside LlamaIndex spans join their tree."""
    with placing(place):
        yield
