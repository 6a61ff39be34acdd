"""A cassette's ledger: which runs are recording it, what each means to drop, who wrote what.

One small JSON file in the cassette's state folder, replaced only under the cassette's
file lock. Per run: when it began recording (of two runs recording one key at once, the
earlier one's answers are kept), its mode, what a ``record`` run drops (``stale``), the
writers alive then (``peers``) and what each writer wrote. ``saves``: each save's file
version before and after, so a journal can tell whether the cassette changed other than
by a recording since its run last knew it, and the name of the journal the save wrote in
full (a process killed before it removed that journal: the file holds it already). The
last run to finish removes the ledger.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .statedir import FileId
from .transcript import response_hash

NAME = "state.json"
VERSION = 1
MAX_SAVES = 10_000
"""Saves remembered at most (a journal older than that many saves is set aside)."""


def fingerprint(interaction: dict[str, Any]) -> str:
    """An interaction's identity: 16 hex digits of its key and 16 of its response's hash."""
    digest = interaction.get("response_hash") or response_hash(interaction["response"])
    return f"{str(interaction['key'])[:16]}{str(digest)[:16]}"


def uncounted(interactions: list[dict[str, Any]], counts: Counter[str]) -> list[dict[str, Any]]:
    """The interactions ``counts`` (of fingerprints) leaves over; each counted one uses one up."""
    left = []
    for plain in interactions:
        fp = fingerprint(plain)
        if counts[fp] > 0:
            counts[fp] -= 1
        else:
            left.append(plain)
    return left


@dataclass
class RunEntry:
    """One run recording this cassette."""

    run: str
    started: float
    mode: str
    stale: list[str] = field(default_factory=list)
    peers: list[str] = field(default_factory=list)
    writers: dict[str, list[str]] = field(default_factory=dict)

    def to_plain(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "run"}

    @classmethod
    def from_plain(cls, run: str, data: dict[str, Any]) -> RunEntry:
        writers = data.get("writers") or {}
        return cls(
            run=run,
            started=float(data.get("started", 0.0)),
            mode=str(data.get("mode", "")),
            stale=[str(f) for f in data.get("stale") or []],
            peers=[str(p) for p in data.get("peers") or []],
            writers={str(w): [str(f) for f in fps] for w, fps in writers.items()},
        )


@dataclass
class Ledger:
    """The ledger of the cassette whose state folder is ``folder``."""

    folder: Path
    runs: dict[str, RunEntry] = field(default_factory=dict)
    saves: list[list[Any]] = field(default_factory=list)
    """Per save ``[before, after]`` (file versions), ``+ [journal name]`` it wrote in full."""
    stored: str = field(default="", repr=False)
    """The text last read or written: an unchanged ledger is not written again."""

    @classmethod
    def load(cls, folder: Path | None) -> Ledger:
        """The ledger as stored (empty when there is none or it is unreadable: it never
        fails a recording)."""
        ledger = cls(folder or Path())
        if folder is None:
            return ledger
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            text = (folder / NAME).read_text(encoding="utf-8")
            data = json.loads(text)
            ledger.runs = {
                str(run): RunEntry.from_plain(str(run), entry)
                for run, entry in (data.get("runs") or {}).items()
            }
            ledger.saves = [list(pair) for pair in data.get("saves") or [] if len(pair) in (2, 3)]
            ledger.stored = ledger.text()
        return ledger

    def text(self) -> str:
        data = {
            "version": VERSION,
            "runs": {run: entry.to_plain() for run, entry in self.runs.items()},
            "saves": self.saves,
        }
        return json.dumps(data, separators=(",", ":"))

    def store(self) -> None:
        """Write it (or remove the file when there is nothing to remember); best effort."""
        path = self.folder / NAME
        if not self.runs and not self.saves:
            with contextlib.suppress(OSError):
                path.unlink()
            self.stored = ""
            return
        text = self.text()
        if text == self.stored:
            return
        temporary = self.folder / f".{NAME}.{os.getpid()}.tmp"
        try:
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, path)
            self.stored = text
        except Exception:  # it coordinates recordings, and never fails one
            with contextlib.suppress(OSError):
                temporary.unlink()

    def join(
        self,
        run: str,
        mode: str,
        started: float,
        disk: list[dict[str, Any]],
        alive: Callable[[str], bool],
    ) -> RunEntry:
        """The entry of ``run``, made on its first save or ``record`` open: the writers of
        other runs ``alive`` then (``peers``) and, for ``record``, what of ``disk`` (the file
        now) none of them wrote (``stale``); ``started``: when this process began recording."""
        entry = self.runs.get(run)
        if entry is None:
            entry = RunEntry(run, started, mode)
            live: Counter[str] = Counter()
            for other in self.runs.values():  # ``run`` is not among them yet
                for writer, fps in other.writers.items():
                    if alive(writer):
                        entry.peers.append(writer)
                        live.update(fps)
            if mode == "record":
                entry.stale = [fingerprint(plain) for plain in uncounted(disk, live)]
            self.runs[run] = entry
        elif started < entry.started:  # another process of the run began earlier
            entry.started = started
        return entry

    def owners(self) -> dict[str, list[tuple[str, str]]]:
        """Per fingerprint, who wrote it: a (run, writer) pair per copy."""
        owned: dict[str, list[tuple[str, str]]] = {}
        for entry in self.runs.values():
            for writer, fps in entry.writers.items():
                for fp in fps:
                    owned.setdefault(fp, []).append((entry.run, writer))
        return owned

    # -- the versions of the file ----------------------------------------------------------

    def saved(
        self,
        before: FileId | None,
        after: FileId | None,
        known: Iterable[Any],
        wrote: str | None = None,
    ) -> None:
        """A save replaced version ``before`` by ``after``, writing all of the journal named
        ``wrote``; forget saves no journal needs (``known``: the versions they last knew)."""
        self.saves.append([before, after] + ([wrote] if wrote is not None else []))
        needed = [list(v) if v is not None else None for v in known]
        keep: list[list[Any]] = []
        reachable = list(needed)
        for pair in self.saves:  # oldest first: a journal's version leads to later ones
            if pair is self.saves[-1] or pair[0] in reachable:
                keep.append(pair)
                reachable.append(pair[1])
        self.saves = keep[-MAX_SAVES:]

    def reaches(self, start: FileId | None, current: FileId | None) -> bool:
        """Whether saves alone lead from version ``start`` of the file to ``current``."""
        if start == current:
            return True
        at = start
        for pair in self.saves:
            if pair[0] == at:
                at = pair[1]
                if at == current:
                    return True
        return False

    def wrote(self, journal: str) -> bool:
        """Whether a save wrote all of the journal named ``journal`` (its process was killed
        before it removed it): telling that from the file would take another process's
        alike recording for that journal's."""
        return any(pair[2:] == [journal] for pair in self.saves)

    # -- runs that are over ------------------------------------------------------------------

    def prune(self, run_alive: Callable[[str], bool], keep: set[str]) -> None:
        """Once no run recording this cassette is alive, forget all but those in ``keep``
        (the runs of its journals). A run that journals but has not saved yet is not in
        the ledger: while it lives, the ended runs stay, so its save can tell which of two
        runs recording one key began first."""
        if any(run_alive(run) for run in {*self.runs, *keep}):
            return
        self.runs = {run: entry for run, entry in self.runs.items() if run in keep}
