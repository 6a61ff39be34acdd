"""``chaincassette diff``: what changed between two versions of a cassette, by interaction and message.

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
from ..trace import first_divergence
from . import files, gitutil

MAX_LINES = 12


@dataclass
class CassetteDiff:
    added: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    removed: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    changed: list[tuple[int, int, list[str], list[str]]] = field(default_factory=list)
    """(old index, new index, request differences, response differences)."""
    unchanged: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.notes)


def compare(old: storage.CassetteDocument, new: storage.CassetteDocument) -> CassetteDiff:
    result = CassetteDiff()
    old_left = list(enumerate(old.interactions))
    new_left: list[tuple[int, dict[str, Any]]] = []
    for index, interaction in enumerate(new.interactions):
        match = next((pair for pair in old_left if pair[1]["key"] == interaction["key"]), None)
        if match is None:
            new_left.append((index, interaction))
            continue
        old_left.remove(match)
        response = diff_requests(match[1]["response"], interaction["response"], "response")
        if response:
            result.changed.append((match[0], index, [], response))
        else:
            result.unchanged += 1
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
    old_by = dict(old_left)
    new_by = dict(new_left)
    for score, oi, ni in candidates:
        if score <= 0 or oi in paired_old or ni in paired_new:
            continue
        paired_old.add(oi)
        paired_new.add(ni)
        request = diff_requests(old_by[oi]["request"], new_by[ni]["request"])
        response = diff_requests(old_by[oi]["response"], new_by[ni]["response"], "response")
        result.changed.append((oi, ni, request, response))
    result.removed = [(i, x) for i, x in old_left if i not in paired_old]
    result.added = [(i, x) for i, x in new_left if i not in paired_new]
    result.changed.sort(key=lambda c: c[1])
    if old.recorded_with != new.recorded_with:
        changes = diff_requests(old.recorded_with, new.recorded_with, "recorded_with")
        result.notes.extend(changes)
    divergence = first_divergence(old.trace, new.trace) if old.trace and new.trace else None
    if divergence:
        result.notes.append(f"trace: {divergence}")
    return result


def render(diff: CassetteDiff, old_name: str, new_name: str) -> list[str]:
    lines = [f"--- {old_name}", f"+++ {new_name}"]
    if diff.empty:
        return [*lines, "no differences"]
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
    lines.extend(f"! {note}" for note in diff.notes)
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
            new_doc = _load_bytes(path.read_bytes() if path.exists() else None, path)
            names = (f"{files.display(path)} ({args.rev})", f"{files.display(path)} (working tree)")
        else:
            old_doc = _require(Path(args.old))
            new_doc = _require(Path(args.new))
            names = (files.display(Path(args.old)), files.display(Path(args.new)))
    except (CassetteFormatError, gitutil.GitError, OSError) as error:
        print(f"chaincassette diff: {error}", file=sys.stderr)
        return 2
    diff = compare(old_doc, new_doc)
    print("\n".join(render(diff, *names)))
    return 0 if diff.empty else 1


def _require(path: Path) -> storage.CassetteDocument:
    loaded = files.load(path)
    if loaded.document is None:
        assert loaded.error is not None
        raise loaded.error
    return loaded.document
