"""An SDK call in the cassette's trace: where it happened, or on its own.

The call's node (``{"type": "llm", "name": "openai chat.completions", "key": …}``) is
offered to the frameworks' trace captures first (``chaincassette.call_sites``): a call
made inside a LangGraph tool or node, or a LlamaIndex workflow step, is placed under it.
A call made outside every framework run (a plain script) is kept in this layer's own part
of the trace (source ``sdk``), captured for the length of each ``use_cassette`` block and
compared on replay like the frameworks' parts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chaincassette import Call, Cassette
from chaincassette.call_sites import place
from chaincassette.trace import finish_trace

SOURCE = "sdk"
KEY_CHARS = 16

_lock = threading.Lock()
#: The open captures: each block's cassette with the nodes no framework placed.
_captures: list[tuple[Cassette, list[dict[str, Any]]]] = []


def node_for(call: Call, sdk: str, endpoint: str, request: dict[str, Any]) -> dict[str, Any]:
    kind = "embedding" if request.get("kind") == "embedding" else "llm"
    return {"type": kind, "name": f"{sdk} {endpoint}", "key": call.key[:KEY_CHARS]}


def note(call: Call, sdk: str, endpoint: str, request: dict[str, Any]) -> None:
    """Put the call's node where it happened (a framework's run), else in this layer's part."""
    node = node_for(call, sdk, endpoint, request)
    if place(call.cassette, node):
        return
    with _lock:
        for cassette, nodes in _captures:
            if cassette is call.cassette:
                nodes.append(node)
                return


@contextmanager
def capturing(cassette: Cassette) -> Iterator[None]:
    """Capture the SDK calls of a block that no framework placed; keep them in the trace."""
    entry: tuple[Cassette, list[dict[str, Any]]] = (cassette, [])
    with _lock:
        _captures.append(entry)
    failed = True
    try:
        yield
        failed = False
    finally:
        with _lock:
            _captures[:] = [c for c in _captures if c is not entry]
        if not failed:  # a block cut short by an error (a miss) is not a path to compare
            finish_trace(cassette, _numbered(entry[1]), source=SOURCE)


def _numbered(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Top-level nodes in a canonical order (concurrent calls finish in any order)."""
    ordered = sorted(nodes, key=lambda n: (str(n.get("type")), str(n["name"]), str(n["key"])))
    return [{"id": i, "parent": None, **node} for i, node in enumerate(ordered, 1)]
