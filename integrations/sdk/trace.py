"""An SDK call in the cassette's trace: under the framework node it was made in
(``chaincassette.call_sites``), else in this layer's own part of the trace (source ``sdk``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chaincassette import Call, Cassette
from chaincassette.call_sites import place
from chaincassette.trace import finish_trace

SOURCE = "sdk"
KEY_CHARS = 16
#: The cassette state holding, per open block, the nodes no framework placed.
CAPTURES = "sdk.trace_captures"


def _captures(cassette: Any) -> list[list[dict[str, Any]]]:
    found: list[list[dict[str, Any]]] = cassette.state(CAPTURES, list)
    return found


def note(call: Call, sdk: str, endpoint: str, request: dict[str, Any]) -> None:
    """Put the call's node where it happened (a framework's run), else in this layer's part."""
    kind = "embedding" if request.get("kind") == "embedding" else "llm"
    node = {"type": kind, "name": f"{sdk} {endpoint}", "key": call.key[:KEY_CHARS]}
    if place(call.cassette, node):
        return
    captures = _captures(call.cassette)
    if captures:
        captures[-1].append(node)


@contextmanager
def capturing(cassette: Cassette) -> Iterator[None]:
    """Capture the SDK calls of a block that no framework placed; keep them in the trace."""
    nodes: list[dict[str, Any]] = []
    captures = _captures(cassette)
    captures.append(nodes)
    failure: BaseException | None = None
    try:
        yield
    except BaseException as error:  # the block's own error: its trace says how it ended
        failure = error
        raise
    finally:
        if any(entry is nodes for entry in captures):
            captures[:] = [entry for entry in captures if entry is not nodes]
        finish_trace(cassette, _numbered(nodes), source=SOURCE, failure=failure)


def _numbered(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Top-level nodes in a canonical order (concurrent calls finish in any order)."""
    ordered = sorted(nodes, key=lambda n: (str(n.get("type")), str(n["name"]), str(n["key"])))
    return [{"id": i, "parent": None, **node} for i, node in enumerate(ordered, 1)]
