"""``chaincassette diff``: what changed in meaning between two versions of a cassette.

Meaning is the requests (messages, params, tools) and the answers (text and tool calls);
provider ids, fingerprints, usage and timestamps differ between any two recordings of
the same program, so they are summed up in one line (``--all`` lists them). Trace
changes are shown as the agent steps that changed.

Interactions are matched by key first (same request); what is left is paired by the
nearest request of the same kind, so an edited prompt shows as one changed interaction
with "messages[1] (user).content: … → …" instead of a removal plus an addition.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import storage
from ..diff import diff_requests, similarity
from ..errors import CassetteFormatError
from ..miss import describe
from ..trace import step_changes
from . import files, gitutil, text

MAX_LINES = 12


@dataclass
class CassetteDiff:
    added: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    removed: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    changed: list[tuple[int, int, list[str], list[str]]] = field(default_factory=list)
    """(old index, new index, request differences, answer differences)."""
    unchanged: int = 0
    details: list[tuple[int, int, list[str]]] = field(default_factory=list)
    """Same meaning, other provider details: (old index, new index, raw differences)."""
    notes: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    """Agent steps that changed in the trace (``trace.step_changes``)."""

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.notes or self.steps)


def _answer_changes(old: Any, new: Any) -> tuple[list[str], list[str]]:
    """(changes in meaning, changes in provider details only) between two responses."""
    if old == new:
        return [], []
    meant = diff_requests(text.meaning(old), text.meaning(new), "answer")
    if meant:
        return meant, []
    return [], diff_requests(old, new, "response")


def compare(old: storage.CassetteDocument, new: storage.CassetteDocument) -> CassetteDiff:
    result = CassetteDiff()
    old_left, new_left = _same_keys(old.interactions, new.interactions, result)
    _pair_by_similarity(old_left, new_left, result)
    result.changed.sort(key=lambda c: c[1])
    if old.recorded_with != new.recorded_with:
        changes = diff_requests(old.recorded_with, new.recorded_with, "recorded_with")
        result.notes.extend(changes)
    if old.trace and new.trace:
        result.steps = step_changes(old.trace, new.trace)
    return result


Indexed = list[tuple[int, dict[str, Any]]]


def _same_keys(
    old: list[dict[str, Any]], new: list[dict[str, Any]], result: CassetteDiff
) -> tuple[Indexed, Indexed]:
    """Compare the answers of interactions with the same key; the ones left on each side."""
    old_left = list(enumerate(old))
    new_left: Indexed = []
    for index, interaction in enumerate(new):
        match = next((pair for pair in old_left if pair[1]["key"] == interaction["key"]), None)
        if match is None:
            new_left.append((index, interaction))
            continue
        old_left.remove(match)
        meant, details = _answer_changes(match[1]["response"], interaction["response"])
        if meant:
            result.changed.append((match[0], index, [], meant))
        else:
            result.unchanged += 1
            if details:
                result.details.append((match[0], index, details))
    return old_left, new_left


def _pair_by_similarity(old_left: Indexed, new_left: Indexed, result: CassetteDiff) -> None:
    """Pair the rest, most alike first: a changed request; unpaired ones are removed or added."""
    candidates = sorted(
        (
            (similarity(o["request"], n["request"]), oi, ni)
            for oi, o in old_left
            for ni, n in new_left
            if o["request"].get("kind") == n["request"].get("kind")
        ),
        reverse=True,
    )
    paired_old: set[int] = set()
    paired_new: set[int] = set()
    old_by, new_by = dict(old_left), dict(new_left)
    for score, oi, ni in candidates:
        if score <= 0 or oi in paired_old or ni in paired_new:
            continue
        paired_old.add(oi)
        paired_new.add(ni)
        request = diff_requests(old_by[oi]["request"], new_by[ni]["request"])
        meant, _ = _answer_changes(old_by[oi]["response"], new_by[ni]["response"])
        result.changed.append((oi, ni, request, meant))
    result.removed = [(i, x) for i, x in old_left if i not in paired_old]
    result.added = [(i, x) for i, x in new_left if i not in paired_new]


def render(
    diff: CassetteDiff, old_name: str, new_name: str, *, show_all: bool = False
) -> list[str]:
    lines = [f"--- {old_name}", f"+++ {new_name}"]
    if diff.empty:
        if not diff.details:
            return [*lines, "no differences"]
        lines.append(
            f"no change in meaning: {len(diff.details)} interaction"
            f"{'s differ' if len(diff.details) != 1 else ' differs'} only in provider ids, "
            "fingerprints, usage or timestamps" + ("" if show_all else " (--all lists them)")
        )
        return lines + (_detail_lines(diff) if show_all else [])
    lines.append(
        f"{len(diff.changed)} changed, {len(diff.added)} added, {len(diff.removed)} removed, "
        f"{diff.unchanged} unchanged interactions"
    )
    for oi, ni, request, response in diff.changed:
        label = f"[{oi}]" if oi == ni else f"[{oi}] → [{ni}]"
        lines.append(f"~ changed {label}")
        for change in (request + response)[:MAX_LINES]:
            lines.append(f"    {change}")
        if len(request) + len(response) > MAX_LINES:
            lines.append(f"    … and {len(request) + len(response) - MAX_LINES} more")
    for index, interaction in diff.removed:
        lines.append(f"- removed [{index}] {describe(interaction['request'])}")
    for index, interaction in diff.added:
        lines.append(f"+ added [{index}] {describe(interaction['request'])}")
    if diff.steps:
        lines.append("agent steps that changed (trace):")
        lines.extend(f"    {step}" for step in diff.steps)
    lines.extend(f"! {note}" for note in diff.notes)
    if diff.details:
        lines.append(
            f"(and {len(diff.details)} interaction{'s' if len(diff.details) != 1 else ''} with "
            "the same meaning but other provider ids, fingerprints, usage or timestamps"
            + (")" if show_all else "; --all lists them)")
        )
        if show_all:
            lines.extend(_detail_lines(diff))
    return lines


def _detail_lines(diff: CassetteDiff) -> list[str]:
    lines = []
    for oi, ni, details in diff.details:
        lines.append(f"  [{oi}]" if oi == ni else f"  [{oi}] → [{ni}]")
        lines.extend(f"    {change}" for change in details[:MAX_LINES])
        if len(details) > MAX_LINES:
            lines.append(f"    … and {len(details) - MAX_LINES} more")
    return lines


def _load_bytes(raw: bytes | None, path: Path) -> storage.CassetteDocument:
    if raw is None:
        return storage.CassetteDocument()
    return storage.loads_bytes(raw, storage.detect_format(path), path)


def run(args: argparse.Namespace) -> int:
    try:
        if args.new is None:
            path = Path(args.old)
            old_doc = _load_bytes(gitutil.committed(path, args.rev), path)
            new_doc = _load_bytes(storage.read_bytes(path), path)
            names = (f"{files.display(path)} ({args.rev})", f"{files.display(path)} (working tree)")
        else:
            old_doc = _require(Path(args.old))
            new_doc = _require(Path(args.new))
            names = (files.display(Path(args.old)), files.display(Path(args.new)))
    except (CassetteFormatError, gitutil.GitError, OSError) as error:
        print(f"chaincassette diff: {error}", file=sys.stderr)
        return 2
    diff = compare(old_doc, new_doc)
    print("\n".join(render(diff, *names, show_all=args.all)))
    return 0 if diff.empty else 1


def _require(path: Path) -> storage.CassetteDocument:
    loaded = files.load(path)
    if loaded.document is None:
        assert loaded.error is not None
        raise loaded.error
    return loaded.document
