"""Who made a call (agent, LangGraph node) and which occurrence of its request it is.

LangGraph puts the running node into the runnable config that LangChain keeps in a
``ContextVar``; reading it at the provider boundary labels each interaction without
any callback plumbing. Occurrence numbers give replayed messages IDs that are the same
in every run yet unique per call (LangGraph's ``add_messages`` replaces a message whose
ID it has seen instead of appending it).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from langchain_core.runnables.config import var_child_runnable_config

from chaincassette import Cassette

_occurrences: weakref.WeakKeyDictionary[Cassette, dict[str, int]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def next_occurrence(cassette: Cassette, key: str) -> int:
    """1 for the first call with ``key`` on ``cassette`` in this process, then 2, 3…"""
    with _lock:
        counts = _occurrences.setdefault(cassette, {})
        counts[key] = counts.get(key, 0) + 1
        return counts[key]


def reset_occurrences(cassette: Cassette) -> None:
    with _lock:
        _occurrences.pop(cassette, None)


def message_id(key: str, occurrence: int) -> str:
    """The ID a recorded answer carries: stable across runs, unique per call."""
    return f"cassette-{key[:16]}-{occurrence}"


def graph_labels(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """``{"agent": …, "node": …, "step": …}`` from LangGraph run metadata (absent keys left out).

    The agent is LangGraph's ``lc_agent_name`` when set, else the subgraph node that
    contains the running node (``supervisor:…|researcher:…|agent:…`` → ``researcher``).
    """
    if not metadata:
        return {}
    labels: dict[str, Any] = {}
    node = metadata.get("langgraph_node")
    if isinstance(node, str):
        labels["node"] = node
    namespace = metadata.get("langgraph_checkpoint_ns") or metadata.get("checkpoint_ns")
    agent = metadata.get("lc_agent_name")
    if not isinstance(agent, str) and isinstance(namespace, str):
        parts = [p.split(":", 1)[0] for p in namespace.split("|") if p]
        if len(parts) > 1:
            agent = parts[-2]
    if isinstance(agent, str):
        labels["agent"] = agent
    step = metadata.get("langgraph_step")
    if isinstance(step, int):
        labels["step"] = step
    return labels


def current_labels() -> dict[str, Any]:
    """Labels of the LangGraph node running in this context, if any."""
    config = var_child_runnable_config.get()
    if not config:
        return {}
    return graph_labels(config.get("metadata"))


class RecordOrder:
    """Records identical requests in the order they were asked, not the order they finished.

    Under ``asyncio.gather`` or threads, two identical requests may finish in either
    order; the engine replays a key's recordings first-in-first-out by *lookup*, so the
    recordings must be stored by lookup order too, or the replayed program hands each
    caller the other's answer. A miss takes a ticket; finished recordings wait (never
    blocking) until every earlier ticket of the same key is recorded or abandoned.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: weakref.WeakKeyDictionary[Cassette, dict[str, list[Any]]] = (
            weakref.WeakKeyDictionary()
        )

    def _slot(self, cassette: Cassette, key: str) -> list[Any]:
        # [tickets issued, next ticket to record, {ticket: waiting action}]
        return self._state.setdefault(cassette, {}).setdefault(key, [0, 0, {}])

    def ticket(self, cassette: Cassette, key: str) -> int:
        with self._lock:
            slot = self._slot(cassette, key)
            slot[0] += 1
            return int(slot[0] - 1)

    def done(self, cassette: Cassette, key: str, ticket: int, action: Any) -> None:
        """Run ``action()`` (a recording) in ticket order; ``None`` abandons the ticket."""
        with self._lock:
            slot = self._slot(cassette, key)
            waiting: dict[int, Any] = slot[2]
            waiting[ticket] = action
            # Recording happens under the lock so two finishers never reorder it.
            while slot[1] in waiting:
                run = waiting.pop(slot[1])
                slot[1] += 1
                if run is not None:
                    run()


record_order = RecordOrder()
