"""Capturing a LlamaIndex run as the cassette's trace, through the instrumentation dispatcher.

A span handler on the root dispatcher sees every span of the run: workflow runs become
``chain`` nodes, agent steps ``agent`` nodes (with the agent's name and step number),
``CassetteLLM`` endpoints and the provider endpoints intercepted at class level (``boundary``)
``llm`` nodes carrying the interaction key, and ``FunctionTool``
calls ``tool`` nodes with their inputs and outputs. Every other span is transparent: its
children hang from the nearest captured ancestor. The shape is core's (``chaincassette.trace``),
shared with the LangChain integration, so ``first_divergence`` compares both the same way.
"""

from __future__ import annotations

import inspect
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from llama_index.core.instrumentation.span import active_span_id

from chaincassette import Cassette, current_cassette
from chaincassette.trace import finish_trace

from .control_flow import is_control_flow
from .playback import ENDPOINTS
from .request import plain
from .spans import SpanHandler, listen, unlisten

#: LLM endpoints whose span becomes an ``llm`` node.
LLM_ENDPOINTS = frozenset(ENDPOINTS)
#: Key prefix length stored in trace nodes (enough to find the interaction, short to read).
KEY_CHARS = 16
#: The cassette state holding the collectors of its open blocks.
COLLECTORS = "llama_index.trace_collectors"


def trace_divergence(cassette: Cassette) -> str | None:
    """The first divergence found when ``cassette`` last finished a replay, if any."""
    found = getattr(cassette, "trace_divergence", None)
    return found if isinstance(found, str) else None


def note_llm_call(key: str, endpoint: str) -> None:
    """Called by ``CassetteLLM`` inside its endpoint span: attach the key to the node of the
    block capturing here (a collector keeps only the spans of its own block's cassette)."""
    cassette = current_cassette()
    if cassette is None:
        return
    span_id = active_span_id.get()
    for collector in list(_collectors(cassette)):
        collector.attach_key(span_id, key, endpoint)


def add_call_below(cassette: Cassette, node: dict[str, Any]) -> bool:
    """Add a call served below LlamaIndex (a provider SDK called in a workflow step or a tool)
    under the captured node of the span it was made in, if this cassette captures one; ``in``
    names that span (``MyWorkflow.summarise``: a workflow step is a span, not a node)."""
    span_id = active_span_id.get()
    if not span_id:
        return False
    return any(c.place_below(span_id, node) for c in list(_collectors(cassette)))


def _collectors(cassette: Cassette) -> list[TraceCollector]:
    found: list[TraceCollector] = cassette.state(COLLECTORS, list)
    return found


@dataclass
class _Expected:
    key: str
    endpoint: str
    taken: bool = False


_expected: ContextVar[_Expected | None] = ContextVar("chaincassette_li_expected", default=None)


@contextmanager
def expecting_llm_call(key: str, endpoint: str) -> Iterator[None]:
    """The next LLM endpoint span in this block is an intercepted call with this key: the
    interception looks the call up before that span starts, so the key travels this way."""
    token = _expected.set(_Expected(key, endpoint))
    try:
        yield
    finally:
        _expected.reset(token)


def _take_expected() -> _Expected | None:
    expected = _expected.get()
    if expected is None or expected.taken:
        return None
    expected.taken = True
    return expected


def _method(span_id: str) -> str:
    return span_id.rsplit("-", 5)[0].rsplit(".", 1)[-1]


class TraceCollector:
    """The nodes of one cassette's run, built from span enter/exit/drop."""

    def __init__(self, cassette: Cassette) -> None:
        self.cassette = cassette
        self.nodes: list[dict[str, Any]] = []
        self._by_span: dict[str, dict[str, Any] | None] = {}
        self._owner: dict[str, dict[str, Any] | None] = {}
        self._steps: dict[str, int] = {}
        self._lock = threading.Lock()

    # -- span events -------------------------------------------------------------------------

    def enter(
        self, span_id: str, bound: inspect.BoundArguments, instance: Any, parent: str | None
    ) -> None:
        try:
            if current_cassette() is not self.cassette:
                return
            with self._lock:
                owner = self._owner.get(parent) if parent else None
                node = self._node_for(span_id, bound, instance, owner)
                if node is not None:
                    self._add(node, owner)
                self._by_span[span_id] = node
                self._owner[span_id] = node or owner
        except Exception as exc:  # a trace must never break the user's program
            warnings.warn(f"chaincassette: trace capture failed: {exc}", stacklevel=3)

    def _add(self, node: dict[str, Any], owner: dict[str, Any] | None) -> None:
        node["id"] = len(self.nodes) + 1
        node["parent"] = owner["id"] if owner else None
        self.nodes.append(node)

    def _closed(self, span_id: str) -> dict[str, Any] | None:
        with self._lock:
            self._owner.pop(span_id, None)
            return self._by_span.pop(span_id, None)

    def exit(self, span_id: str, result: Any) -> None:
        node = self._closed(span_id)
        if node is None:
            return
        if node["type"] == "tool":
            content = getattr(result, "content", result)
            node["outputs"] = plain(content)
            if getattr(result, "is_error", False):
                node["error"] = plain(content)

    def drop(self, span_id: str, err: BaseException | None) -> None:
        node = self._closed(span_id)
        if node is None or err is None:
            return
        if is_control_flow(err):  # a paused step (human in the loop) runs again: not a call
            node["paused"] = True
        else:
            node["error"] = f"{type(err).__name__}: {err}"

    def place_below(self, span_id: str, node: dict[str, Any]) -> bool:
        with self._lock:
            if span_id not in self._owner:
                return False
            self._add({**node, "in": span_id.rsplit("-", 5)[0]}, self._owner[span_id])
            return True

    def attach_key(self, span_id: str | None, key: str, endpoint: str) -> None:
        with self._lock:
            node = self._by_span.get(span_id) if span_id else None
        if node is not None and node["type"] == "llm":
            node["key"] = key[:KEY_CHARS]
            node["name"] = endpoint

    # -- what becomes a node ----------------------------------------------------------------------

    def _node_for(
        self,
        span_id: str,
        bound: inspect.BoundArguments,
        instance: Any,
        owner: dict[str, Any] | None,
    ) -> dict[str, Any] | None:
        from llama_index.core.base.llms.base import BaseLLM
        from llama_index.core.tools import FunctionTool
        from llama_index.core.workflow import Workflow

        method = _method(span_id)
        agent = owner.get("agent") if owner else None
        if getattr(instance, "chaincassette_wrapper", False) and method in LLM_ENDPOINTS:
            return {"type": "llm", "name": method.removeprefix("a"), "agent": agent}
        if isinstance(instance, BaseLLM) and method in LLM_ENDPOINTS:
            expected = _take_expected()  # only calls the cassette serves become nodes
            if expected is not None:
                return {
                    "type": "llm",
                    "name": expected.endpoint,
                    "agent": agent,
                    "key": expected.key[:KEY_CHARS],
                }
        if isinstance(instance, FunctionTool) and method in ("call", "acall"):
            arguments = dict(bound.arguments.get("kwargs") or {})
            if instance.ctx_param_name:
                arguments.pop(instance.ctx_param_name, None)
            inputs = {
                "args": plain(list(bound.arguments.get("args") or ())),
                "kwargs": plain(arguments),
            }
            return {
                "type": "tool",
                "name": instance.metadata.get_name(),
                "agent": agent,
                "inputs": inputs,
            }
        if isinstance(instance, Workflow) and method == "run":
            return {"type": "chain", "name": type(instance).__name__, "agent": agent}
        if method == "run_agent_step":  # a workflow step: its span has no instance
            event = bound.arguments.get("ev")
            name = getattr(event, "current_agent_name", None) or "agent"
            step = self._steps.get(str(name), 0) + 1
            self._steps[str(name)] = step
            return {"type": "agent", "name": name, "agent": name, "step": step}
        return None

    # -- the result -----------------------------------------------------------------------------

    def finish(self, failure: BaseException | None = None) -> str | None:
        """Store the trace in the cassette (closed by ``failure``, the error that ended the
        block, if any); on a pure replay, report where it diverged."""
        with self._lock:
            nodes = _without_paused(self.nodes)
        return finish_trace(self.cassette, nodes, source="llama_index", failure=failure)


def _without_paused(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The nodes minus paused ones (and what ran inside them), numbered again from 1."""
    kept: list[dict[str, Any]] = []
    ids: dict[int, int | None] = {}
    for node in nodes:
        parent = ids.get(node["parent"]) if node.get("parent") is not None else None
        if node.get("paused") or (node.get("parent") is not None and node["parent"] not in ids):
            continue
        ids[node["id"]] = len(kept) + 1
        fresh = {**node, "id": len(kept) + 1, "parent": parent}
        kept.append({k: v for k, v in fresh.items() if v is not None})
    return kept


class capture_trace:
    """Capture the trace of the block into ``cassette`` (installed by ``use_cassette``)."""

    def __init__(self, cassette: Cassette) -> None:
        self.collector = TraceCollector(cassette)
        self._handler: SpanHandler | None = None

    def __enter__(self) -> TraceCollector:
        self._handler = listen(self.collector)
        _collectors(self.collector.cassette).append(self.collector)
        return self.collector

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._handler is not None:
            unlisten(self._handler)
        collectors = _collectors(self.collector.cassette)
        if self.collector in collectors:
            collectors.remove(self.collector)
        self.collector.finish(exc)  # the error that ended the block closes its trace
