"""Who made a call: the agent and LangGraph node, stored as each interaction's meta.

LangGraph puts the running node into the runnable config that LangChain keeps in a
``ContextVar``; reading it where a call begins labels each interaction without any
callback plumbing.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables.config import var_child_runnable_config

FRAMEWORK = "langchain"


def graph_labels(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """``{"agent": …, "node": …, "step": …}`` from LangGraph run metadata (absent keys left out).

    The agent is LangGraph's ``lc_agent_name`` when set, else the subgraph node that
    contains the running node (``supervisor:…|researcher:…|agent:…`` → ``researcher``).
    """
    node, agent, step = graph_fields(metadata)
    labels: dict[str, Any] = {}
    if node is not None:
        labels["node"] = node
    if agent is not None:
        labels["agent"] = agent
    if step is not None:
        labels["step"] = step
    return labels


def graph_fields(
    metadata: dict[str, Any] | None,
) -> tuple[str | None, str | None, int | None]:
    """``graph_labels`` as a tuple (node, agent, step), ``None`` where absent: the trace
    reads them at every chain event."""
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


def current_labels() -> dict[str, Any]:
    """Labels of the LangGraph node running in this context, if any."""
    config = var_child_runnable_config.get()
    if not config:
        return {}
    return graph_labels(config.get("metadata"))


def call_meta() -> dict[str, Any]:
    """The meta stored with a LangChain interaction: framework, agent and node (the step
    changes with unrelated edits to a graph, so it is left out)."""
    labels = current_labels()
    labels.pop("step", None)
    return {"framework": FRAMEWORK, **labels}
