"""What LangGraph puts in a run's metadata, read as the node, agent and task of a call."""

from __future__ import annotations

from typing import Any


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
