"""``CassetteCallbackHandler``: the run tree of a LangChain/LangGraph program, as a cassette trace.

Installed for every run inside ``use_cassette`` through LangChain's public configure hook
(``register_configure_hook(..., inheritable=True)``; inheritable so LangGraph node runs
are included rather than fragmenting the tree). It only observes: the recordings are
served by the provider boundary, the cache and the tool patch. Run IDs are renumbered
after siblings are put in a canonical order, so parallel branches and ``asyncio.gather``
give the same trace (``chaincassette.trace``'s node shape) in every run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from json.encoder import encode_basestring as _string
from typing import Any
from uuid import UUID, uuid4

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tracers.context import register_configure_hook

from chaincassette import Cassette, canonical_json
from chaincassette.error_codec import steers
from chaincassette.trace import finish_trace

from .graph import graph_fields
from .parallel import MapPaths
from .serde import to_json

HIDDEN_TAG = "langsmith:hidden"


class CassetteCallbackHandler(BaseCallbackHandler):
    """Captures chains, LangGraph nodes, chat-model calls and tool calls as trace nodes."""

    run_inline = True
    raise_error = False
    # Plain attributes, not the base class's properties: LangChain reads the one that
    # matters before every event it hands a handler (hundreds per agent run).
    ignore_llm = ignore_retry = ignore_chain = ignore_agent = False
    ignore_retriever = ignore_chat_model = ignore_custom_event = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Keyed by ``run_id.int``: a ``UUID`` hashes in Python code, and the tree is
        # rebuilt from these maps with thousands of lookups (``nodes``).
        self._nodes: dict[int, dict[str, Any]] = {}
        self._parents: dict[int, int | None] = {}
        self._keys: dict[int, str] = {}
        #: the ``RunnableParallel`` keys above each run (``labels.call_branch``)
        self.map_paths = MapPaths()

    # -- capture ---------------------------------------------------------------------------

    def start_run(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        kind: str,
        name: str,
        metadata: dict[str, Any] | None,
        tags: list[str] | None,
        inputs: Any = None,
    ) -> None:
        node_name, agent, step = graph_fields(metadata)
        run = run_id.int
        with self._lock:
            parent = self._parents[run] = None if parent_run_id is None else parent_run_id.int
            self.map_paths.start(run, parent, tags)
            if kind == "chain":
                if tags and HIDDEN_TAG in tags:
                    return  # no node: its children hang from its parent (``nodes``)
                if node_name == name:
                    kind = "node"
            node: dict[str, Any] = {"type": kind, "name": name}
            if agent:
                node["agent"] = agent
            if step is not None:
                node["step"] = step
            if inputs is not None:
                node["inputs"] = inputs
            if run in self._keys:
                node["key"] = self._keys[run]
            self._nodes[run] = node

    def _set(self, run_id: UUID, field: str, value: Any) -> None:
        with self._lock:
            node = self._nodes.get(run_id.int)
            if node is not None:
                node[field] = value

    def link(self, run_id: UUID, key: str) -> None:
        """Attach the interaction key to the model call ``run_id``."""
        run = run_id.int
        with self._lock:
            self._keys[run] = key[:16]
            if run in self._nodes:
                self._nodes[run]["key"] = key[:16]

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.start_run(run_id, parent_run_id, "chain", _name(serialized, kwargs), metadata, tags)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._set(run_id, "error", type(error).__name__)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        _last_model_run.set(run_id)
        self.start_run(run_id, parent_run_id, "llm", _name(serialized, kwargs), metadata, tags)

    on_llm_error = on_chain_error  # a model call's error is named like a chain's

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        name = (serialized or {}).get("name") or _name(serialized, kwargs)
        value = to_json(inputs) if inputs is not None else input_str
        self.start_run(run_id, parent_run_id, "tool", str(name), metadata, tags, inputs=value)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._set(run_id, "outputs", _tool_output(output))

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        # control flow (LangGraph's interrupt) by its type: its text holds an id new each run
        text = type(error).__name__ if steers(error) else f"{type(error).__name__}: {error}"
        self._set(run_id, "error", text[:500])

    # -- result ----------------------------------------------------------------------------

    def nodes(self) -> list[dict[str, Any]]:
        """The captured tree in the engine's trace format, in canonical order."""
        with self._lock:
            nodes = dict(self._nodes)  # emit copies each node
            parents = dict(self._parents)
        children: dict[int | None, list[int]] = {}
        for run in nodes:
            parent = parents.get(run)
            while parent is not None and parent not in nodes:
                parent = parents.get(parent)
            children.setdefault(parent, []).append(run)
        return _Tree(nodes, children).emitted()


class _Tree:
    """A captured tree put in canonical order: methods rather than nested functions, which
    would hold themselves through their closures (a reference cycle that keeps every node
    alive until the cyclic collector runs)."""

    __slots__ = ("children", "nodes", "out", "signatures", "sort_keys")

    def __init__(self, nodes: dict[int, dict[str, Any]], children: dict[int | None, list[int]]):
        self.nodes = nodes
        self.children = children
        self.sort_keys: dict[int, str] = {}
        self.signatures: dict[int, str] = {}
        self.out: list[dict[str, Any]] = []

    def sort_key(self, run: int) -> str:
        key = self.sort_keys.get(run)
        if key is None:
            key = self.sort_keys[run] = _sort_key(self.nodes[run])
        return key

    def signature(self, run: int) -> str:
        if run not in self.signatures:
            node = self.nodes[run]
            below = sorted(self.signature(c) for c in self.children.get(run, []))
            self.signatures[run] = canonical_json(
                [self.sort_key(run), node.get("outputs"), node.get("error"), below]
            )
        return self.signatures[run]

    def ordered(self, runs: list[int]) -> list[int]:
        """Siblings by what they are; their whole subtrees only break ties."""
        if len(runs) < 2:
            return runs
        if len({self.sort_key(r) for r in runs}) == len(runs):
            return sorted(runs, key=self.sort_key)
        return sorted(runs, key=lambda r: (self.sort_key(r), self.signature(r)))

    def emitted(self) -> list[dict[str, Any]]:
        if None in self.children:
            self._emit(None, None)
        return self.out

    def _emit(self, parent_run: int | None, parent_id: int | None) -> None:
        out, nodes, children = self.out, self.nodes, self.children
        for run in self.ordered(children[parent_run]):
            node = {"id": len(out) + 1, "parent": parent_id, **nodes[run]}
            out.append(node)
            if run in children:
                self._emit(run, node["id"])


def _sort_key(node: dict[str, Any]) -> str:
    """``canonical_json([step, type, name, inputs, key])``: recorded traces are in this
    order, so it must not change. A node without inputs (every chain) is spelled here
    directly, as the canonical encoder would: its spelling of a string is
    ``encode_basestring``'s, of an int ``repr``'s (``test_trace_sort_key``)."""
    step = node.get("step") if isinstance(node.get("step"), int) else -1
    kind, name, inputs, key = (
        node.get("type"),
        node.get("name"),
        node.get("inputs"),
        node.get("key"),
    )
    if (
        inputs is None
        and type(step) is int
        and type(kind) is str
        and type(name) is str
        and (key is None or type(key) is str)
    ):
        spelled = "null" if key is None else _string(key)
        return f"[{step!r},{_string(kind)},{_string(name)},null,{spelled}]"
    return canonical_json([step, kind, name, inputs, key])


def _name(serialized: dict[str, Any] | None, kwargs: dict[str, Any]) -> str:
    if kwargs.get("name"):
        return str(kwargs["name"])
    if serialized:
        if serialized.get("name"):
            return str(serialized["name"])
        ident = serialized.get("id")
        if isinstance(ident, list) and ident:
            return str(ident[-1])
    return "?"


def _tool_output(output: Any) -> Any:
    content = getattr(output, "content", None)
    if content is not None:
        return to_json(content)
    goto = getattr(output, "goto", None)
    if goto is not None:
        return {"goto": to_json(goto)}
    if output is None or isinstance(output, (str, int, float, bool)):
        return output
    return type(output).__name__


# -- activation -----------------------------------------------------------------------------------

_recorder: ContextVar[CassetteCallbackHandler | None] = ContextVar(
    "chaincassette_lc_recorder", default=None
)
_last_model_run: ContextVar[UUID | None] = ContextVar(
    "chaincassette_lc_last_model_run", default=None
)
register_configure_hook(_recorder, inheritable=True)


def add_call_below(node: dict[str, Any]) -> bool:
    """Add a call served below LangChain (a provider SDK called in a tool or a graph node) as
    a child of the run it was made in, if this context captures one: LangChain's public
    ``var_child_runnable_config`` holds the config the running runnable gives its children,
    whose callback manager's ``parent_run_id`` is that run."""
    recorder = _recorder.get()
    config = var_child_runnable_config.get()
    manager = config.get("callbacks") if config else None
    parent = getattr(manager, "parent_run_id", None)
    if recorder is None or parent is None:
        return False
    run = uuid4()  # renumbered with the tree: never stored
    recorder.start_run(run, parent, str(node["type"]), str(node["name"]), None, None)
    recorder.link(run, str(node["key"]))
    return True


def link_model_call(run_id: UUID | None, key: str) -> None:
    """Tell this context's recorder which interaction the model call ``run_id`` used."""
    recorder = _recorder.get()
    if recorder is not None and run_id is not None:
        recorder.link(run_id, key)


def map_paths() -> MapPaths | None:
    """The parallel keys of this context's runs, ``None`` when no recorder captures them."""
    recorder = _recorder.get()
    return None if recorder is None else recorder.map_paths


def last_model_run() -> UUID | None:
    return _last_model_run.get()


@contextmanager
def capturing(cassette: Cassette) -> Iterator[CassetteCallbackHandler]:
    """Capture the run tree for the block; store it, and on replay compare it."""
    handler = CassetteCallbackHandler()
    token = _recorder.set(handler)
    failure: BaseException | None = None
    try:
        yield handler
    except BaseException as error:  # the block's own error: its trace says how it ended
        failure = error
        raise
    finally:
        # Entered where the program first imported LangChain (inside a task, say), exited
        # with the block: the recorder lives in that task's context, nothing to undo here.
        with suppress(ValueError):
            _recorder.reset(token)
        finish_trace(cassette, handler.nodes(), source="langchain", failure=failure)
