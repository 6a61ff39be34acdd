"""Who made a call: the agent and LangGraph node, stored as each interaction's meta.

LangGraph puts the running node into the runnable config that LangChain keeps in a
``ContextVar``; reading it where a call begins labels each interaction without any
callback plumbing.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables.config import var_child_runnable_config

from chaincassette.order import BRANCH

FRAMEWORK = "langchain"


def graph_fields(
    metadata: dict[str, Any] | None,
) -> tuple[str | None, str | None, int | None]:
    """(node, agent, step) from LangGraph run metadata, ``None`` where absent. The agent is
    LangGraph's ``lc_agent_name`` when set, else the subgraph node that contains the running
    node (``supervisor:…|researcher:…|agent:…`` → ``researcher``)."""
    if not metadata:
        return None, None, None
    node = metadata.get("langgraph_node")
    namespace = metadata.get("langgraph_checkpoint_ns") or metadata.get("checkpoint_ns")
    agent = metadata.get("lc_agent_name")
    if not isinstance(agent, str) and isinstance(namespace, str) and "|" in namespace:
        parts = [p.split(":", 1)[0] for p in namespace.split("|") if p]
        if len(parts) > 1:
            agent = parts[-2]
    step = metadata.get("langgraph_step")
    return (
        node if isinstance(node, str) else None,
        agent if isinstance(agent, str) else None,
        step if isinstance(step, int) else None,
    )


def graph_branch(metadata: dict[str, Any] | None) -> str | None:
    """The LangGraph task running in this context, named the same in every run: the nodes
    of its namespace (``inner|joke``) and, for a ``Send``, its place among the step's sends
    (``joke#2``); task ids are left out, they are new each run. ``None`` outside a graph."""
    if not metadata:
        return None
    namespace, path = metadata.get("langgraph_checkpoint_ns"), metadata.get("langgraph_path")
    if not isinstance(namespace, str) or not isinstance(path, tuple):
        return None
    nodes = "|".join(part.split(":", 1)[0] for part in namespace.split("|") if part)
    places = [str(p) for p in _flat(path) if isinstance(p, int) and not isinstance(p, bool)]
    return "#".join([nodes, *places])


def _flat(path: tuple[Any, ...]) -> list[Any]:
    """A task path's parts, nested paths (a ``Send`` made inside a task) spread out."""
    return [q for p in path for q in (_flat(p) if isinstance(p, tuple) else [p])]


def call_meta() -> dict[str, Any]:
    """The meta stored with a LangChain interaction: framework, and the node and agent running
    in this context (the step changes with unrelated edits to a graph, so it is left out),
    and the graph task (``order.BRANCH``: kept only by a call that overlapped others)."""
    config = var_child_runnable_config.get()
    metadata = config.get("metadata") if config else None
    node, agent, _ = graph_fields(metadata)
    labels = {"node": node, "agent": agent, BRANCH: graph_branch(metadata)}
    return {"framework": FRAMEWORK, **{k: v for k, v in labels.items() if v is not None}}
