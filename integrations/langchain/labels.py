"""Who made a call: the agent and LangGraph node, stored as each interaction's meta.

LangGraph puts the running node into the runnable config that LangChain keeps in a
``ContextVar``; reading it where a call begins labels each interaction without any
callback plumbing. The branch of a ``RunnableParallel`` comes from the run tree the trace
handler keeps (``parallel``).
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables.config import var_child_runnable_config

from chaincassette.order import BRANCH

from . import parallel, trace
from .graph import graph_branch, graph_fields

FRAMEWORK = "langchain"


def call_branch(metadata: dict[str, Any] | None) -> str | None:
    """The branch making a call, the same in every run: the LangGraph task, then the
    ``RunnableParallel`` keys above the call (``joke#2/one``); ``None`` in neither."""
    parts = [graph_branch(metadata), parallel.branch(trace.map_paths())]
    named = [p for p in parts if p]
    return "/".join(named) if named else None


def call_meta() -> dict[str, Any]:
    """The meta stored with a LangChain interaction: framework, and the node and agent running
    in this context (the step changes with unrelated edits to a graph, so it is left out),
    and its branch (``order.BRANCH``: kept only by a call that overlapped others)."""
    config = var_child_runnable_config.get()
    metadata = config.get("metadata") if config else None
    node, agent, _ = graph_fields(metadata)
    labels = {"node": node, "agent": agent, BRANCH: call_branch(metadata)}
    return {"framework": FRAMEWORK, **{k: v for k, v in labels.items() if v is not None}}
