"""The disk side of one cassette: its file, its journal, its run's place in the ledger.

``Cassette`` keeps recordings in memory and decides what to save; this object reads and
writes the files for it under the cassette's file lock: ``open`` applies or sets aside
what dead processes left in journals (``recovery``) and writes the result at once, so
every process sees one file; ``append`` journals each recording as it completes; ``save``
merges with the file as it is now (``merge``). The last process of a run removes what the
run left in the state folder (``finish_run``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from . import journal, runs, statedir, storage
from .errors import CassetteWriteError, describe_os_error
from .filelock import FileLock
from .journal import Journal
from .ledger import Ledger, RunEntry, fingerprint, uncounted
from .merge import Conflict, Outcome, merge
from .modes import current_policy
from .recovery import Mask, Opener, Scan, aside_line, aside_record, recover
from .statedir import FileId
from .wording import counted

Build = Callable[[list[dict[str, Any]], storage.CassetteDocument | None], storage.CassetteDocument]
"""Makes the document to write from the merged interactions and the file read under lock."""


class JournalWarning(UserWarning):
    """What an open recovered or set aside, and a journal that cannot be written."""


@dataclass
class Opened:
    """What an open found: the document (after recovery) and what to report."""

    document: storage.CassetteDocument | None
    existed: bool
    lines: list[str] = field(default_factory=list)


class Store:
    """The files of the cassette at ``path`` for one ``Cassette`` object."""

    def __init__(self, path: Path, fmt: str, mode: str) -> None:
        self.path = path
        self.format = fmt
        self.mode = mode
        self.fileid: FileId | None = None
        """The version of the file this object last read or wrote."""
        # plain functions, not bound methods: no reference cycle (tests/langchain/test_garbage.py)
        self.journal = Journal(partial(_journal_folder, path), partial(_journal_header, path, mode))
        self.journal_error: str | None = None
        """Why the journal cannot be written, once it failed (recordings stay in memory)."""
        self.refused: list[Path] = []
        """Journals set aside when a save was refused; removed once a save succeeds."""
        self.entry: RunEntry | None = None
        self._started: float | None = None
        self._replaced: list[dict[str, Any]] = []
        """The older interactions this object's ``record`` saves dropped (``retract``)."""

    @property
    def display(self) -> str:
        return str(self.path)

    @property
    def run(self) -> str:
        return self.entry.run if self.entry is not None else runs.current_run()

    # -- opening -------------------------------------------------------------------------

    def open(self, scan: Scan, mask: Mask) -> Opened:
        """Read the file, with what dead processes left unsaved applied (see module doc)."""
        self.fileid = statedir.fileid(self.path)
        folders = statedir.cassette_folders(self.path)
        orphans = _orphans(folders)
        if self.mode == "record" and not orphans:  # replays nothing: read it only if needed
            document = None
        else:
            document = storage.read(self.path, self.format, lazy_trace=True)
        existed = self.fileid is not None
        lines = self._unreported(folders)
        refused = current_policy().refuse_writes
        if refused:  # strict: no folder made, no file written; a dead run's journal waits
            return Opened(document, existed, lines + self._waiting(orphans, refused))
        if self.mode == "record" or orphans:
            try:
                document, more = self._open_locked(document, orphans, scan, mask)
            except OSError:  # a folder that cannot be made: the save will say so, plainly
                more = []
            lines += more
        return Opened(document, existed, lines)

    def _open_locked(
        self,
        document: storage.CassetteDocument | None,
        orphans: list[Path],
        scan: Scan,
        mask: Mask,
    ) -> tuple[storage.CassetteDocument | None, list[str]]:
        target = statedir.real_target(self.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(self.path):
            current = statedir.fileid(self.path)
            folder = self._folder_or_none()
            ledger = Ledger.load(folder)
            joined = self.mode != "record" or runs.current_run() in ledger.runs
            if orphans or not joined:  # what the recovery or the run's baseline reads
                document = storage.read(self.path, self.format, lazy_trace=not orphans)
                self.fileid = current
            disk = list(document.interactions) if document is not None else []
            if self.mode == "record":
                self._join(ledger, disk)
            orphans = _orphans(statedir.cassette_folders(self.path))  # some taken meanwhile?
            if not orphans:
                self._store_ledger(ledger)
                return document, []
            opener = Opener(runs.current_run(), self.mode, self.entry)
            result = recover(self.display, disk, current, ledger, opener, orphans, scan, mask)
            if result.changed:
                document = self._write_recovered(document, result, ledger)
            self._store_ledger(ledger)
            return document, result.lines

    def _write_recovered(
        self, document: storage.CassetteDocument | None, result: Any, ledger: Ledger
    ) -> storage.CassetteDocument | None:
        trace = None if result.replaced_trace or document is None else document.trace
        recorded_with = document.recorded_with if document is not None else {}
        written = storage.CassetteDocument(
            interactions=result.interactions, recorded_with=recorded_with, trace=trace
        )
        try:
            self._replace(written, ledger)
        except (CassetteWriteError, OSError) as exc:  # served from memory; the journals stay
            result.lines.append(
                f"chaincassette: {self.display}: the recovered recordings are used from memory "
                f"only: {exc}; their journals stay for the next open"
            )
            return written
        journal.remove(result.applied)
        return storage.read(self.path, self.format, lazy_trace=True)

    def _unreported(self, folders: list[Path]) -> list[str]:
        """Lines for journals set aside by another run (a refused save) not reported yet."""
        lines = []
        run = runs.current_run()
        for path in [p for folder in folders for p in journal.asides(folder)]:
            found = journal.read(path)
            if found.reported or found.aside is None or found.aside.get("run") == run:
                continue
            lines.append(aside_line(self.display, found, found.aside, path))
            journal.mark_reported(path)
        return lines

    def _waiting(self, orphans: list[Path], refused: str) -> list[str]:
        """The line for journals of stopped runs an open may not apply (writes refused)."""
        count = sum(len(journal.read(path).entries) for path in orphans)
        if not count:
            return []
        return [
            f"chaincassette: {self.display}: {count} recording{'s' if count != 1 else ''} "
            f"that a stopped process left in a journal {'were' if count != 1 else 'was'} not "
            f"applied: writing cassettes is refused ({refused}); replaying the file as it is. "
            "The next open that may write applies them (chaincassette journal "
            f"{self.display} shows them, --drop removes them)"
        ]

    # -- the run's entry -------------------------------------------------------------------

    def _join(self, ledger: Ledger, disk: list[dict[str, Any]]) -> RunEntry:
        """This run's entry in the ledger (made on its first save or ``record`` open)."""
        me = runs.writer()  # first: a process that switched runs leaves its previous one
        started = self._started if self._started is not None else time.time()
        self.entry = ledger.join(runs.current_run(), self.mode, started, disk, runs.writer_alive)
        self.entry.writers.setdefault(me, [])
        runs.touch(ledger.folder)
        return self.entry

    def _store_ledger(self, ledger: Ledger) -> None:
        if ledger.folder != Path():
            ledger.store()

    # -- journaling ------------------------------------------------------------------------

    def append(self, interaction: dict[str, Any], *, response_text: str | None = None) -> bool:
        """Journal one recording; ``False`` once the journal cannot be written, and while
        writing is refused (the next open would apply the journal)."""
        if self.journal_error is not None or current_policy().refuse_writes:
            return False
        if self._started is None:
            self._started = time.time()
        try:
            self.journal.append(interaction, response_text=response_text)
        except (OSError, ValueError) as exc:
            self.journal_error = describe_os_error(exc, self.journal.path or statedir.state_dir())
            return False
        return True

    def _folder_or_none(self) -> Path | None:
        with contextlib.suppress(OSError):
            return statedir.make_cassette_folder(self.path)
        return None

    # -- saving ----------------------------------------------------------------------------

    def save(self, adding: list[dict[str, Any]], build: Build) -> Outcome:
        """Merge ``adding`` into the file as it is now and replace it (under its lock); the
        journal is synced only when the save fails."""
        try:
            return self._save(adding, build)
        except BaseException:
            self.journal.sync()
            raise

    def _save(self, adding: list[dict[str, Any]], build: Build) -> Outcome:
        try:
            statedir.real_target(self.path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CassetteWriteError(self.path, describe_os_error(exc, self.path.parent)) from None
        with FileLock(self.path):
            on_disk = storage.read(self.path, self.format)
            disk = list(on_disk.interactions) if on_disk is not None else []
            ledger = Ledger.load(self._folder_or_none())
            entry = self._join(ledger, disk)
            outcome = merge(disk, adding, ledger, entry.run, runs.writer())
            self._replace(build(outcome.interactions, on_disk), ledger, self.journal.path)
            self._replaced += outcome.replaced
            self._store_ledger(ledger)
        journal.remove(self.refused)
        self.refused = []
        return outcome

    @property
    def replaced(self) -> int:
        """How many older interactions this object's ``record`` saves dropped so far."""
        return len(self._replaced)

    def retract(self, saved: list[dict[str, Any]], *, created: bool, since: int = 0) -> int:
        """Take ``saved`` (interactions this object wrote) out of the file, newest copy
        first, and out of its writer's ledger entry; a file this object ``created`` that
        holds nothing else then goes. The older interactions its ``record`` saves replaced
        after the first ``since`` come back, stale again (the run's next save drops them,
        as a first save would). How many were taken out."""
        if not saved or not self.path.exists():
            return 0
        with FileLock(self.path):
            on_disk = storage.read(self.path, self.format)
            if on_disk is None:
                return 0
            disk = list(on_disk.interactions)
            fps = [fingerprint(plain) for plain in saved]
            kept = uncounted(disk[::-1], Counter(fps))[::-1]
            taken = len(disk) - len(kept)
            if not taken:
                return 0
            ledger = Ledger.load(self._folder_or_none())
            entry = ledger.runs.get(self.run)
            mine = entry.writers.get(runs.writer(), []) if entry is not None else []
            for fp in fps:
                if fp in mine:
                    mine.remove(fp)
            back = self._replaced[since:]
            if entry is not None and back:
                entry.stale += [fingerprint(plain) for plain in back]
                kept = back + kept
            del self._replaced[since:]
            on_disk.interactions = kept
            self._replace(None if created and not kept else on_disk, ledger)
            self._store_ledger(ledger)
        return taken

    def _replace(
        self, document: storage.CassetteDocument | None, ledger: Ledger, wrote: Path | None = None
    ) -> None:
        """Write ``document`` in place of the file (``None``: remove it); the ledger learns
        the new version and the journal it holds all of (``wrote``: this object's)."""
        before = statedir.fileid(self.path)
        if document is None:
            self.path.unlink()
        else:
            storage.write_atomic(self.path, storage.dumps(document, self.format))
        self.fileid = statedir.fileid(self.path)
        folders = statedir.cassette_folders(self.path)
        paths = [p for f in folders for p in journal.live(f) + journal.orphans(f)]
        known = [journal.known_version(p) for p in paths]
        ledger.saved(before, self.fileid, known, wrote.name if wrote is not None else None)

    def saved_all(self) -> None:
        """Everything journaled is in the file: the journal goes."""
        self.journal.discard()

    def set_aside_refused(self, findings: list[str], mask: Mask) -> Path | None:
        """A save was refused for a secret: keep the journal only with it masked."""
        aside = aside_record("secret", runs.current_run(), findings)
        with contextlib.suppress(OSError, ValueError):
            path = self.journal.set_aside(aside, mask)
            if path is not None:
                self.refused.append(path)
            return path
        return None

    def adopt(self, check: Callable[[list[dict[str, Any]]], None], mask: Mask | None) -> int:
        """Write the set-aside journals' recordings after the file's (masked by ``mask``;
        ``check`` refuses a secret); how many were written (``journal --finalize``)."""
        folders = statedir.cassette_folders(self.path)
        found = [journal.read(path) for f in folders for path in journal.asides(f)]
        entries = [entry for item in found for entry in item.entries]
        if mask is not None:
            entries = [mask(entry) for entry in entries]
        check(entries)
        with FileLock(self.path):
            on_disk = storage.read(self.path, self.format)
            disk = list(on_disk.interactions) if on_disk is not None else []
            ledger = Ledger.load(self._folder_or_none())
            outcome = merge(disk, entries, ledger, None, None, skip_present=True)
            document = storage.CassetteDocument(
                interactions=outcome.interactions,
                recorded_with=on_disk.recorded_with if on_disk is not None else {},
                trace=on_disk.trace if on_disk is not None else None,
            )
            if outcome.written:
                self._replace(document, ledger)
                self._store_ledger(ledger)
            journal.remove([item.path for item in found])
        return len(outcome.written)

    def whereabouts(self, journaled: int, memory: int) -> str:
        """Where the recordings not in the cassette are, and what to do about them."""
        parts = []
        if journaled:
            where = self.journal.path or (self.refused[-1] if self.refused else "its journal")
            parts.append(
                f"{counted(journaled, 'recording')} of this run {_are(journaled)} safe in the "
                f"journal {where} (the next open writes them, or once the cassette can be written: "
                f"chaincassette journal {self.display} --finalize)"
            )
        if memory:
            parts.append(
                f"{counted(memory, 'recording')} of this run {_are(memory)} only in memory, "
                f"because the journal could not be written either ({self.journal_error}): lost "
                "when this process exits unless a later save succeeds"
            )
        return "; ".join(parts)


def _journal_folder(path: Path) -> Path:
    """The state folder a journal of ``path`` goes in, made; the run's end cleans it up."""
    folder = statedir.make_cassette_folder(path)
    runs.touch(folder)
    return folder


def _journal_header(path: Path, mode: str) -> dict[str, Any]:
    """A journal's first line: whose it is, and the version of the cassette it knew."""
    return {
        "run": runs.current_run(),
        "writer": runs.writer(),
        "mode": mode,
        "cassette": str(statedir.real_target(path)),
        "fileid": statedir.fileid(path),
        "started": time.time(),  # its first recording: a recovery settles keys by it
        "pid": os.getpid(),
    }


def _are(count: int) -> str:
    return "is" if count == 1 else "are"


def conflict_line(display: str, conflicts: list[Conflict], run: str) -> str:
    """One line for keys that two runs recorded at once, saying whose answers were kept."""
    others = sorted({c.other for c in conflicts})
    ours = sum(1 for c in conflicts if c.kept == run)
    kept = (
        "this run's answers were kept (it began recording this cassette first)"
        if ours == len(conflicts)
        else "the answers of the run that began recording this cassette first were kept"
        + (f" ({ours} of them this run's)" if ours else " (not this run's)")
    )
    return (
        f"chaincassette: {display}: {len(conflicts)} key{'s were' if len(conflicts) != 1 else ' was'}"
        f" recorded by this run and by run {', '.join(others)} at the same time; {kept}"
    )


@dataclass
class Journals:
    """What the state folder holds for one cassette: journals of stopped processes that
    the next open applies (``pending``), and those set aside (``aside``)."""

    pending: list[journal.JournalFile]
    aside: list[journal.JournalFile]

    @property
    def pending_count(self) -> int:
        return sum(len(found.entries) for found in self.pending)


def journals(cassette: Path) -> Journals:
    folders = statedir.cassette_folders(cassette)
    pending = [journal.read(path) for path in _orphans(folders)]
    aside = [journal.read(path) for folder in folders for path in journal.asides(folder)]
    return Journals([found for found in pending if found.entries], aside)


def _orphans(folders: list[Path]) -> list[Path]:
    """The orphaned journals in ``folders``, oldest first."""
    found = [path for folder in folders for path in journal.orphans(folder)]
    return sorted(found, key=journal.age) if len(folders) > 1 else found


# -- the end of a run -----------------------------------------------------------------------


def made_by_this_run(cassette: Path, fmt: str) -> bool:
    """Whether the file at ``cassette`` holds only what this run recorded, by its ledger."""
    folder = statedir.cassette_folder(cassette)
    entry = Ledger.load(folder if folder.is_dir() else None).runs.get(runs.current_run())
    if entry is None:
        return False
    try:
        document = storage.read(cassette, fmt, lazy_trace=True)
    except Exception:  # an unreadable file: the open says what is wrong with it
        return False
    if document is None or not document.interactions:
        return False
    ours = Counter(fp for fps in entry.writers.values() for fp in fps)
    held = Counter(fingerprint(i) for i in document.interactions)
    return not held - ours


def finish_run(run: str) -> None:
    """This process is done with ``run``: if no other process of it lives, remove what the
    run left in the state folder of each cassette it recorded."""
    over = not runs.run_alive(run, besides_me=True)
    if over:
        for name in runs.touched(run):
            clean(statedir.state_dir() / statedir.CASSETTES / name, ending=run)
    runs.forget(run, over=over)


def finish_process() -> None:
    """At exit: finish every run this process took part in, and what killed runs left."""
    for run in runs.my_runs():
        with contextlib.suppress(Exception):
            finish_run(run)
    for dead in runs.dead_runs():
        for name in runs.remove_dead(dead):
            with contextlib.suppress(Exception):
                clean(statedir.state_dir() / statedir.CASSETTES / name, ending=None)


def clean(folder: Path, ending: str | None) -> None:
    """Forget the runs of this cassette once none is alive (``ending`` counts as over),
    and remove its state folder when nothing is left in it."""
    cassette = statedir.cassette_of(folder)
    with _locked(cassette):
        ledger = Ledger.load(folder)
        pending = {journal.read(p).run for p in journal.orphans(folder) + journal.live(folder)}

        def alive(run: str) -> bool:
            return runs.run_alive(run, besides_me=run == ending)

        ledger.prune(alive, keep={r for r in pending if r is not None})
        if not pending:
            ledger.saves = []
        ledger.store()
        statedir.remove_folder(folder)


def _locked(cassette: Path | None) -> contextlib.AbstractContextManager[Any]:
    if cassette is not None and cassette.parent.is_dir():
        return FileLock(cassette)
    return contextlib.nullcontext()
