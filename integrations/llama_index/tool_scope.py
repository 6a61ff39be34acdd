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

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.span import SimpleSpan, active_span_id
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from pydantic import PrivateAttr

from chaincassette import Cassette
from chaincassette.patching import Patches


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


class _ScopeHandler(BaseSpanHandler[SimpleSpan]):
    """Marks spans with the cassette of the replay-tools wrapper they run under."""

    _scopes: dict[str, Cassette] = PrivateAttr(default_factory=dict)
    _scopes_lock: Any = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def class_name(cls) -> str:
        return "ChaincassetteToolScopeHandler"

    def new_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        parent_span_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> SimpleSpan | None:
        try:
            cassette = _cassette_of(instance)
        except Exception:  # scoping must never break the user's program
            cassette = None
        with self._scopes_lock:
            if cassette is None and parent_span_id is not None:
                cassette = self._scopes.get(parent_span_id)
            if cassette is not None:
                self._scopes[id_] = cassette
        return None

    def prepare_to_exit_span(self, id_: str, *args: Any, **kwargs: Any) -> SimpleSpan | None:
        with self._scopes_lock:
            self._scopes.pop(id_, None)
        return None

    prepare_to_drop_span = prepare_to_exit_span

    def scope_of(self, span_id: str) -> Cassette | None:
        with self._scopes_lock:
            return self._scopes.get(span_id)


def _add_handler(patches: Patches) -> None:
    handler = _ScopeHandler()
    dispatcher = get_dispatcher()
    dispatcher.add_span_handler(handler)

    def remove() -> None:
        if handler in dispatcher.span_handlers:
            dispatcher.span_handlers.remove(handler)

    patches.on_undo(remove)


PATCHES = Patches(_add_handler)
install = PATCHES.install  # start marking spans (once per process)


def scoped_cassette() -> Cassette | None:
    """The cassette of the replay-tools wrapper the running span belongs to, if any."""
    span = active_span_id.get()
    if span is None:
        return None
    for handler in get_dispatcher().span_handlers:
        if isinstance(handler, _ScopeHandler):
            return handler.scope_of(span)
    return None
