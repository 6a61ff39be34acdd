"""Which ``CassetteLLM(..., replay_tools=True)`` a tool call belongs to.

Agents call their tools in other workflow steps (other asyncio tasks) than their LLM
calls, so no context variable set by the LLM reaches the tool. LlamaIndex's span tree
does: every span made under an agent or workflow whose LLM is such a wrapper is marked
with the wrapper's cassette, and its descendants inherit the mark. A tool call outside
every such span is none of that cassette's business and runs untouched.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

from llama_index.core.instrumentation.span import active_span_id

from chaincassette import Cassette
from chaincassette.patching import Patches

from .spans import listen, listener_of, unlisten


def _cassette_of(instance: Any) -> Cassette | None:
    """The cassette of the replay-tools wrapper that ``instance`` (an agent, a workflow) uses,
    read without importing ``CassetteLLM``."""
    llms = [getattr(instance, "llm", None)]
    agents = getattr(instance, "agents", None)  # AgentWorkflow: {name: agent}
    if isinstance(agents, dict):
        llms += [getattr(agent, "llm", None) for agent in agents.values()]
    for llm in llms:
        found = getattr(llm, "tool_replay_cassette", None)
        if isinstance(found, Cassette):
            return found
    return None


class _Scopes:
    """Marks spans with the cassette of the replay-tools wrapper they run under."""

    def __init__(self) -> None:
        self._scopes: dict[str, Cassette] = {}
        self._lock = threading.Lock()

    def enter(
        self, span_id: str, bound: inspect.BoundArguments, instance: Any, parent: str | None
    ) -> None:
        try:
            cassette = _cassette_of(instance)
        except Exception:  # scoping must never break the user's program
            cassette = None
        with self._lock:
            if cassette is None and parent is not None:
                cassette = self._scopes.get(parent)
            if cassette is not None:
                self._scopes[span_id] = cassette

    def exit(self, span_id: str, result: Any) -> None:
        with self._lock:
            self._scopes.pop(span_id, None)

    def drop(self, span_id: str, err: BaseException | None) -> None:
        self.exit(span_id, None)

    def scope_of(self, span_id: str) -> Cassette | None:
        with self._lock:
            return self._scopes.get(span_id)


def _add_handler(patches: Patches) -> None:
    handler = listen(_Scopes())
    patches.on_undo(lambda: unlisten(handler))


PATCHES = Patches(_add_handler)
install = PATCHES.install  # start marking spans (once per process)


def scoped_cassette() -> Cassette | None:
    """The cassette of the replay-tools wrapper the running span belongs to, if any."""
    span = active_span_id.get()
    scopes = listener_of(_Scopes) if span is not None else None
    return scopes.scope_of(span) if scopes is not None else None
