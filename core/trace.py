"""The trace: a cassette's run tree (agents, graph nodes, model and tool calls).

Integrations capture it in one shared shape so that LangChain and LlamaIndex
recordings are compared the same way. A node is a dict::

    {"id": 3, "parent": 1, "type": "llm" | "tool" | "chain" | "agent" | "node",
     "name": "get_weather", "agent": "researcher", "step": 2,
     "key": "<interaction key prefix>", "inputs": ..., "outputs": ..., "error": ...}

``id``/``parent`` are renumbered in capture order, never run IDs. On replay the new
trace is compared with the recorded one and the first divergence is reported.

A block the program's own error ended keeps its trace too, closed by a node naming that
error (``{"type": "error", "name": "ValidationError"}``): a recording of a failed run says
it failed, and its faithful replay (the same failure) matches it. A block that a
chaincassette error (a miss, the live-call guard) ended is no path to keep or compare.
"""

from __future__ import annotations

import warnings
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any

from .canonical import canonical_json
from .diff import diff_requests, short
from .errors import CassetteError

if TYPE_CHECKING:
    from .cassette import Cassette

Node = dict[str, Any]
COMPARED_FIELDS = ("type", "name", "key", "inputs", "outputs", "error")


def _children(nodes: list[Node]) -> dict[Any, list[Node]]:
    by_parent: dict[Any, list[Node]] = {}
    for node in nodes:
        by_parent.setdefault(node.get("parent"), []).append(node)
    for siblings in by_parent.values():
        # Parallel branches start in any order; sort siblings by what they are, keeping
        # the recorded order only as the final tie-break.
        siblings.sort(
            key=lambda n: (
                n.get("step") if isinstance(n.get("step"), int) else -1,
                str(n.get("type")),
                str(n.get("name")),
                canonical_json(n.get("inputs")),
            )
        )
    return by_parent


def _signature(node: Node) -> tuple[str, str]:
    return (str(node.get("type")), str(node.get("name")))


def label(node: Node) -> str:
    parts = []
    if node.get("agent"):
        parts.append(f"agent {node['agent']!r}")
    if node.get("step") is not None:
        parts.append(f"step {node['step']}")
    parts.append(f"{node.get('type', 'run')} {node.get('name') or '?'}")
    return " › ".join(parts)


def first_divergence(recorded: list[Node] | None, current: list[Node] | None) -> str | None:
    """A sentence naming the first place where two traces differ, or ``None``."""
    if not recorded or current is None or recorded == current:
        return None
    old, new = _children(recorded), _children(current)

    def walk(old_parent: Any, new_parent: Any, path: str) -> str | None:
        a, b = old.get(old_parent, []), new.get(new_parent, [])
        signatures = [_signature(n) for n in a], [_signature(n) for n in b]
        opcodes: list[tuple[str, int, int, int, int]]
        if signatures[0] == signatures[1]:  # a replay that took the recorded path: no search
            opcodes = [("equal", 0, len(a), 0, len(b))]
        else:
            matcher = SequenceMatcher(a=signatures[0], b=signatures[1], autojunk=False)
            opcodes = list(matcher.get_opcodes())
        for op, a1, a2, b1, b2 in opcodes:
            if op == "delete" or (op == "replace" and a2 - a1 > b2 - b1):
                return f"{path}{label(a[a1])}: recorded but did not happen in this run"
            if op == "insert" or (op == "replace" and b2 - b1 > a2 - a1):
                return f"{path}{label(b[b1])}: not in the recording (new run)"
            for x, y in zip(a[a1:a2], b[b1:b2], strict=True):
                for field in COMPARED_FIELDS:
                    if x.get(field) != y.get(field):
                        changes = diff_requests(x.get(field), y.get(field), field)
                        detail = (
                            "; ".join(changes[:3])
                            or f"{short(x.get(field))} → {short(y.get(field))}"
                        )
                        return f"{path}{label(x)}: {detail}"
                found = walk(x.get("id"), y.get("id"), f"{path}{label(x)} / ")
                if found:
                    return found
        return None

    return walk(None, None, "")


class TraceDivergenceWarning(UserWarning):
    """A replayed run took a different path than the recorded one."""


def with_failure(nodes: list[Node], failure: BaseException) -> list[Node]:
    """``nodes`` closed by the node of the error that ended their block."""
    last = max((n["id"] for n in nodes if isinstance(n.get("id"), int)), default=0)
    error = {"id": last + 1, "parent": None, "type": "error", "name": type(failure).__name__}
    return [*nodes, error]


def finish_trace(
    cassette: Cassette,
    nodes: list[Node],
    *,
    source: str,
    failure: BaseException | None = None,
) -> str | None:
    """Keep ``nodes`` (handed over) as ``source``'s part of the cassette's trace, closed by
    ``failure`` (the error that ended the block, if any); on a pure replay, report the first
    divergence from the recorded part. A block that captured nothing leaves the trace alone."""
    if not nodes:
        return None
    if failure is not None:
        if isinstance(failure, CassetteError) or not isinstance(failure, Exception):
            return None  # a miss, the guard, an interrupt: not the program's path
        if cassette.misses:  # a miss the program turned into an error of its own
            return None
        nodes = with_failure(nodes, failure)
    cassette.set_trace(nodes, source=source, copy=False)  # built for this call
    stats = cassette.stats
    if stats.recorded or stats.missed:
        return None
    if cassette.replays_recorded_trace(nodes):
        cassette.trace_divergence = None
        return None
    recorded = cassette.recorded_trace_of(source)
    if not recorded or not _calls_in_common(recorded, nodes):
        return None
    divergence = first_divergence(recorded, nodes)
    if divergence is not None:  # the stored trace is redacted: compare like with like
        divergence = first_divergence(recorded, cassette.redactor.redact(nodes))
    cassette.trace_divergence = divergence
    if divergence is not None:
        warnings.warn(
            TraceDivergenceWarning(
                f"{cassette.path}: replay diverged from the recording: {divergence}"
            ),
            stacklevel=3,
        )
    return divergence


def _calls_in_common(recorded: list[Node], current: list[Node]) -> bool:
    """Whether the two traces share a model call (by key), or either has none. A file holds
    one trace, its last recording block's: tests sharing a cassette each replay their own
    calls, and a trace with none of them is another test's path, not a divergence."""
    recorded_keys = {n["key"] for n in recorded if n.get("key")}
    current_keys = {n["key"] for n in current if n.get("key")}
    return not recorded_keys or not current_keys or bool(recorded_keys & current_keys)


#: What a reviewer compares in a step; ``key`` (a request hash) is left to the interactions.
STEP_FIELDS = ("inputs", "outputs", "error")
MAX_STEPS = 12


def _steps(nodes: list[Node]) -> list[tuple[str, Node]]:
    """Every node as (its path of labels, the node), parents before children."""
    by_parent = _children(nodes)
    out: list[tuple[str, Node]] = []

    def walk(parent: Any, path: str, depth: int) -> None:
        for node in by_parent.get(parent, []):
            here = f"{path}{label(node)}"
            out.append((here, node))
            if depth < 64:
                walk(node.get("id"), f"{here} › ", depth + 1)

    walk(None, "", 0)
    return out


def step_changes(recorded: list[Node], current: list[Node]) -> list[str]:
    """The agent steps that differ between two traces, one line each (at most ``MAX_STEPS``);
    a model call whose request changed says so instead of showing two key hashes."""
    old, new = _steps(recorded), _steps(current)
    matcher = SequenceMatcher(a=[p for p, _ in old], b=[p for p, _ in new], autojunk=False)
    lines: list[str] = []
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op in ("delete", "replace"):
            lines.extend(f"- {path}: not in the new run" for path, _ in old[a1:a2])
        if op in ("insert", "replace"):
            lines.extend(f"+ {path}: new" for path, _ in new[b1:b2])
        if op != "equal":
            continue
        for (path, x), (_, y) in zip(old[a1:a2], new[b1:b2], strict=True):
            changes = [
                change
                for name in STEP_FIELDS
                for change in diff_requests(x.get(name), y.get(name), name)
            ]
            if x.get("type") == "llm" and x.get("key") != y.get("key"):
                changes.append("the model was asked something else")
            if changes:
                lines.append(f"~ {path}: {'; '.join(changes[:3])}")
    if len(lines) > MAX_STEPS:
        lines = [*lines[:MAX_STEPS], f"… and {len(lines) - MAX_STEPS} more"]
    return lines
