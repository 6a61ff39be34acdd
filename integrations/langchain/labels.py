"""Who made a call: the agent and LangGraph node, stored as each interaction's meta.

LangGraph puts the running node into the runnable config that LangChain keeps in a
``ContextVar``; reading it where a call begins labels each interaction without any
callback plumbing.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables.config import var_child_runnable_config

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


def call_meta() -> dict[str, Any]:
    """The meta stored with a LangChain interaction: framework, and the node and agent running
    in this context (the step changes with unrelated edits to a graph, so it is left out)."""
    config = var_child_runnable_config.get()
    node, agent, _ = graph_fields(config.get("metadata") if config else None)
    labels = {"node": node, "agent": agent}
    return {"framework": FRAMEWORK, **{k: v for k, v in labels.items() if v is not None}}
