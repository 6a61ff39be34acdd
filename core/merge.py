"""What a save writes: the file as it is now, what the writing run drops, what it adds.

One pure function serves a live save and the recovery of a dead run's journal alike, so
recovery applies exactly what that run meant: a ``record`` run drops its ``stale``
interactions (never one a live writer of another run recorded); of a key two runs
recorded at once, the answers of the run that began first are kept (a ``Conflict``);
the writer's interactions are appended in their recorded order.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .ledger import Ledger, RunEntry, fingerprint, uncounted


@dataclass
class Conflict:
    """A key that two runs recorded at once, and whose answers were kept."""

    key: str
    other: str
    kept: str


@dataclass
class Outcome:
    interactions: list[dict[str, Any]]
    """What the file holds after the save."""
    written: list[dict[str, Any]] = field(default_factory=list)
    """Of the writer's interactions, those that were written."""
    dropped: int = 0
    """Interactions the writer's ``record`` run replaced."""
    replaced: list[dict[str, Any]] = field(default_factory=list)
    """Those ``dropped`` interactions, for a writer that takes its recordings back
    (``Store.retract``)."""
    skipped: int = 0
    """Interactions the file held already (``skip_present``: ``journal --finalize``)."""
    conflicts: list[Conflict] = field(default_factory=list)


@dataclass
class _Owned:
    """One interaction of the file, and which run's writer recorded it (if known)."""

    plain: dict[str, Any]
    fp: str
    run: str | None = None
    writer: str | None = None


def merge(
    disk: list[dict[str, Any]],
    adding: list[dict[str, Any]],
    ledger: Ledger,
    run: str | None,
    writer: str | None,
    *,
    skip_present: bool = False,
) -> Outcome:
    """The merge of ``adding`` (by ``writer`` of ``run``) into ``disk``; updates
    ``ledger`` (what is stale, who wrote what) to match the result."""
    entry = ledger.runs.get(run) if run is not None else None
    owned = _attribute(disk, ledger)
    outcome = Outcome([])
    if entry is not None and entry.mode == "record":
        owned, outcome.replaced = _drop_stale(owned, entry, ledger)
        outcome.dropped = len(outcome.replaced)
    adding = list(adding)
    if run is not None:
        owned, adding, outcome.conflicts = _settle(owned, adding, entry, ledger)
    if skip_present:
        kept = uncounted(adding, Counter(item.fp for item in owned))
        outcome.skipped = len(adding) - len(kept)
        adding = kept
    outcome.interactions = [item.plain for item in owned] + adding
    outcome.written = adding
    if entry is not None and writer is not None:
        entry.writers.setdefault(writer, []).extend(fingerprint(p) for p in adding)
    return outcome


def _attribute(disk: list[dict[str, Any]], ledger: Ledger) -> list[_Owned]:
    owners = ledger.owners()
    items = []
    for plain in disk:
        fp = fingerprint(plain)
        mine = owners.get(fp)
        run, writer = mine.pop(0) if mine else (None, None)
        items.append(_Owned(plain, fp, run, writer))
    return items


def _forget(ledger: Ledger, item: _Owned) -> None:
    """``item`` leaves the file: its writer no longer has it there."""
    if item.run is None or item.writer is None:
        return
    fps = ledger.runs[item.run].writers.get(item.writer)
    if fps and item.fp in fps:
        fps.remove(item.fp)


def _drop_stale(
    owned: list[_Owned], entry: RunEntry, ledger: Ledger
) -> tuple[list[_Owned], list[dict[str, Any]]]:
    stale = Counter(entry.stale)
    peers = set(entry.peers)
    kept: list[_Owned] = []
    dropped: list[dict[str, Any]] = []
    for item in owned:
        recorded_live = item.run == entry.run or item.writer in peers
        if stale[item.fp] > 0 and not recorded_live:
            stale[item.fp] -= 1
            dropped.append(item.plain)
            _forget(ledger, item)
        else:
            kept.append(item)
    entry.stale = list(stale.elements())
    return kept, dropped


def _settle(
    owned: list[_Owned], adding: list[dict[str, Any]], entry: RunEntry | None, ledger: Ledger
) -> tuple[list[_Owned], list[dict[str, Any]], list[Conflict]]:
    """Keys the writer adds that another run recorded too: one run's answers stay."""
    me = entry.run if entry is not None else None
    rivals = _rivals(owned, {str(plain["key"]) for plain in adding}, me, ledger)
    if not rivals:
        return owned, adding, []
    conflicts: list[Conflict] = []
    losing: set[str] = set()
    beaten: set[tuple[str, str]] = set()
    for key, others in sorted(rivals.items()):
        first = min(others, key=lambda r: (ledger.runs[r].started, r))
        if entry is not None and (entry.started, entry.run) < (ledger.runs[first].started, first):
            beaten |= {(key, other) for other in others}
            conflicts += [Conflict(key, other, entry.run) for other in sorted(others)]
        else:
            losing.add(key)
            conflicts.append(Conflict(key, first, first))
    kept = []
    for item in owned:
        if (str(item.plain["key"]), item.run) in beaten:
            _forget(ledger, item)
        else:
            kept.append(item)
    return kept, [p for p in adding if str(p["key"]) not in losing], conflicts


def _rivals(
    owned: list[_Owned], keys: set[str], me: str | None, ledger: Ledger
) -> dict[str, set[str]]:
    """Per key the writer adds, the other runs whose recordings of it the file holds."""
    rivals: dict[str, set[str]] = {}
    for item in owned:
        key = str(item.plain["key"])
        if key in keys and item.run is not None and item.run != me and item.run in ledger.runs:
            rivals.setdefault(key, set()).add(item.run)
    return rivals
