"""What an open does with the journals of processes that died before saving.

Each orphan is applied as its run meant it (``merge``), or set aside for a reason in
``WHY`` and reported, never merged behind newer answers. Applied means: as its process's
own save would have applied it to the file as it is now, its run joining the ledger as
that save would have joined it. A journal that a save of its process wrote (the ledger
says so: it was killed before it removed the journal) is removed; an alike recording
(same key, same answer) another process saved is never taken for its own. Every
decision is one line for the opener to report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import journal, runs
from .journal import JournalFile
from .ledger import Ledger, RunEntry, fingerprint, uncounted
from .merge import Outcome, merge
from .statedir import FileId
from .wording import counted

Scan = Callable[[list[dict[str, Any]]], list[str]]
"""Secrets found in interactions, one ``kind at path`` string each (none: ``[]``)."""
Mask = Callable[[dict[str, Any]], dict[str, Any]]

WHY = {
    "deleted": "the cassette was deleted after that run stopped",
    "changed": "the cassette changed after that run stopped (edited, restored or rewritten "
    "other than by a recording)",
    "replaced": "this record run replaces what earlier runs recorded",
    "unknown": "what that record run meant to replace is no longer known",
    "secret": "a response in it holds a secret (stored masked in the journal)",
}


@dataclass
class Opener:
    """Who opens the cassette: its run, mode, and the ledger entry of a ``record`` run."""

    run: str
    mode: str
    entry: RunEntry | None = None


@dataclass
class Recovered:
    """What an open did with the orphans."""

    interactions: list[dict[str, Any]]
    changed: bool = False
    """Whether ``interactions`` differ from the file (they must be written)."""
    replaced_trace: bool = False
    """A ``record`` run's recordings replaced the file's: its trace goes with them."""
    applied: list[Path] = field(default_factory=list)
    """Journals applied: removed once the file holding them is written."""
    lines: list[str] = field(default_factory=list)


def recover(
    display: str,
    disk: list[dict[str, Any]],
    current: FileId | None,
    ledger: Ledger,
    opener: Opener,
    orphans: list[Path],
    scan: Scan,
    mask: Mask,
) -> Recovered:
    """Apply or set aside each orphan (oldest first) against ``disk`` (version ``current``)."""
    result = Recovered(list(disk))
    for path in orphans:
        found = journal.read(path)
        if not found.entries or _saved(found, ledger, current, result.interactions):
            journal.remove([path])  # nothing unsaved (killed after its save, or empty)
            continue
        code = _refusal(found, current, ledger, opener)
        if code is None:
            findings = scan(found.entries)
            if findings:
                code = "secret"
                _aside(found, code, opener, result, display, mask, findings)
                continue
            _apply(found, ledger, result, display)
        else:
            _aside(found, code, opener, result, display, None, [])
    return result


def _saved(
    found: JournalFile, ledger: Ledger, current: FileId | None, interactions: list[dict[str, Any]]
) -> bool:
    """Whether a save of ``found``'s own process wrote all of it: the ledger says so, or
    that process was killed between writing the file and the ledger (which then knows
    no save that led to this version) and the file holds every entry."""
    if ledger.wrote(found.path.name):
        return True
    if ledger.reaches(found.fileid, current):
        return False
    return not uncounted(found.entries, Counter(fingerprint(p) for p in interactions))


def _refusal(
    found: JournalFile, current: FileId | None, ledger: Ledger, opener: Opener
) -> str | None:
    """Why ``found`` must not be merged (a ``WHY`` code), or ``None``."""
    if not ledger.reaches(found.fileid, current):
        return "deleted" if current is None else "changed"
    if opener.mode == "record" and found.run != opener.run:
        peers = set(opener.entry.peers) if opener.entry is not None else set()
        if found.writer not in peers:  # it was not recording when this run began
            return "replaced"
    if found.mode == "record" and (found.run is None or found.run not in ledger.runs):
        return "unknown"
    return None


def _merged(found: JournalFile, ledger: Ledger, disk: list[dict[str, Any]]) -> Outcome:
    """``merge`` as a save of ``found``'s process would do it now. A run that never saved
    is not in the ledger: it joins for this merge only (as of its journal's first
    recording), so the keys another run recorded at the same time are settled as that save
    would have settled them; then it leaves, and its recordings are the file's, like those
    of a run that ended (a later run's further call of one of them is no conflict)."""
    guest = _guest(found, ledger, disk)
    run = found.run if found.run in ledger.runs else None
    try:
        return merge(disk, found.entries, ledger, run, found.writer)
    finally:
        if guest is not None:
            del ledger.runs[guest]


def _guest(found: JournalFile, ledger: Ledger, disk: list[dict[str, Any]]) -> str | None:
    """Join ``found``'s run to the ledger as its first save would have, if it is not in it
    and its journal says when it began; the run joined, or ``None``."""
    run, started = found.run, found.started
    if run is None or started is None or run in ledger.runs:
        return None
    ledger.join(run, found.mode, started, disk, runs.writer_alive)
    return run


def _apply(found: JournalFile, ledger: Ledger, result: Recovered, display: str) -> None:
    outcome = _merged(found, ledger, result.interactions)
    if outcome.interactions == result.interactions:  # settled: another run's answers stay
        journal.remove([found.path])
        if any(conflict.kept != found.run for conflict in outcome.conflicts):
            result.lines.append(_settled_line(display, found, len(outcome.conflicts)))
        return
    result.interactions = outcome.interactions
    result.changed = True
    result.applied.append(found.path)
    if found.mode == "record":
        result.replaced_trace = True
    line = (
        f"chaincassette: {display}: recovered {counted(len(outcome.written), 'recording')} that "
        f"a stopped process (run {found.run}, mode {found.mode}) had not saved"
    )
    if outcome.dropped:
        older = counted(outcome.dropped, "older recording")
        line += f"; they replace {older}, as that record run meant"
    if outcome.conflicts:
        line += f"; {_kept_first(len(outcome.conflicts))}"
    result.lines.append(line)


def _settled_line(display: str, found: JournalFile, keys: int) -> str:
    """What a save of that process would have said: its recordings lost to another run's."""
    return (
        f"chaincassette: {display}: {counted(len(found.entries), 'recording')} that a stopped "
        f"process (run {found.run}, mode {found.mode}) had not saved are not applied: "
        f"{_kept_first(keys)}"
    )


def _kept_first(keys: int) -> str:
    return (
        f"{counted(keys, 'key')} another run recorded at the same time keep the answers of the "
        "run that began recording first"
    )


def _aside(
    found: JournalFile,
    code: str,
    opener: Opener,
    result: Recovered,
    display: str,
    mask: Mask | None,
    findings: list[str],
) -> None:
    aside = aside_record(code, opener.run, findings)
    target = journal.set_aside(found, aside, mask)
    journal.mark_reported(target)  # reported right here, by this line
    result.lines.append(aside_line(display, found, aside, target))


def aside_record(code: str, run: str, findings: list[str]) -> dict[str, Any]:
    """Why a journal is set aside, as its last line says it (``code``: one of ``WHY``)."""
    return {"code": code, "why": WHY[code], "run": run, "findings": findings[:10]}


def aside_line(display: str, found: JournalFile, aside: dict[str, Any], where: Path) -> str:
    """The one line that says what was set aside, why, and what to do with it."""
    findings = aside.get("findings") or []
    secret = f" ({', '.join(findings[:3])})" if findings else ""
    advice = (
        f"chaincassette journal {display} --finalize writes them into the cassette, "
        "--drop removes them"
    )
    if aside.get("code") == "secret":
        advice += (
            "; to keep the text (an example, not a secret), record again with "
            "allow_secrets=[r'<regex>']"
        )
    return (
        f"chaincassette: {display}: set aside {counted(len(found.entries), 'recording')} of a "
        f"stopped run (run {found.run}, mode {found.mode}): {aside.get('why')}{secret}; "
        f"kept in {where} ({advice})"
    )
