"""Nothing recorded is lost: a write-ahead journal per process and cassette.

Each interaction reaches this process's journal for its cassette with one ``write`` the
moment it is recorded: a process that dies however it dies (SIGKILL, SIGTERM,
``os._exit``, Ctrl-C during the save, an OOM kill) keeps it, because the kernel holds
what was written. The journal is ``fsync``-ed in groups: every ``SYNC_EVERY`` entries, at
the first entry ``SYNC_SECONDS`` or more after the last sync, and when a save fails (a
save that succeeds deletes it). Only a power loss or an operating-system crash can lose
the entries of the last group, those written since the last sync. The journal is deleted
once the cassette holds what it holds.

The journal is held under an exclusive ``flock`` while its process lives; the kernel
drops the lock when the process dies, so "whose journal is orphaned" is never a guess.
Its first line says who wrote it and what that run meant (its run, writer, record mode)
and which version of the cassette it last knew (a save that wrote it all deletes it).
What the next open does with an orphan is ``chaincassette.recovery``'s business; a
journal it will not merge is *set aside* (renamed ``.aside``, the reason appended) and
reported, never merged behind newer answers and never deleted unseen.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import plain
from .canonical import plain_json
from .runs import held
from .statedir import FileId

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: journals work, orphan detection does not
    fcntl = None  # type: ignore[assignment]

SUFFIX = ".journal"
ASIDE = ".aside"
VERSION = 3
SYNC_EVERY = 64
"""Entries written between two ``fsync`` calls at most."""
SYNC_SECONDS = 1.0
"""Seconds after which the next entry is synced with the ones written before it."""


class Journal:
    """This process's journal for one cassette; created on the first append.

    ``folder`` makes the cassette's state folder; ``header`` is asked for the first
    line once the file exists (so the version of the cassette it names is never older
    than the file).
    """

    def __init__(self, folder: Callable[[], Path], header: Callable[[], dict[str, Any]]) -> None:
        self._make_folder = folder
        self._header = header
        self.path: Path | None = None
        self.entries = 0
        """Interactions written to the current file (since its last ``discard``)."""
        self._fd: int | None = None
        self._unsynced = 0
        self._synced_at = 0.0
        self._lock = threading.Lock()

    def append(self, interaction: dict[str, Any], *, response_text: str | None = None) -> None:
        """Write one interaction; raises ``OSError`` (disk full, read-only) or ``ValueError``.
        ``response_text``: its response's JSON text, when the caller has it (``_line_of``)."""
        line = _line_of(interaction, response_text)
        with self._lock:
            fd = self._open()
            _write_all(fd, line)
            self.entries += 1
            self._unsynced += 1
            now = time.monotonic()
            if self._unsynced >= SYNC_EVERY or now - self._synced_at >= SYNC_SECONDS:
                self._sync(fd, now)

    def sync(self) -> None:
        """``fsync`` what was written since the last sync (before a save)."""
        with self._lock:
            if self._fd is not None and self._unsynced:
                with contextlib.suppress(OSError):
                    self._sync(self._fd, time.monotonic())

    def discard(self) -> None:
        """The cassette file now holds everything journaled: delete the journal."""
        with self._lock:
            self._close(unlink=True)

    def set_aside(self, aside: dict[str, Any], transform: Callable[[Any], Any]) -> Path | None:
        """Replace this journal by an ``.aside`` copy whose entries went through
        ``transform`` (a refused save masks its secrets), ending in ``aside`` (why); the
        next recording starts a new journal. Returns the copy's path."""
        with self._lock:
            path = self.path
            if path is None:
                return None
            written = write_aside(read(path), aside, transform)
            self._close(unlink=True)
            return written

    def _open(self) -> int:
        if self._fd is None:
            folder = self._make_folder()
            path = folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}{SUFFIX}"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)  # held while this process lives
                _write_all(fd, _line({"journal": VERSION, **self._header()}))
            except BaseException:
                os.close(fd)
                with contextlib.suppress(OSError):
                    path.unlink()
                raise
            self._fd, self.path, self.entries = fd, path, 0
            self._synced_at = time.monotonic()
        return self._fd

    def _sync(self, fd: int, now: float) -> None:
        os.fsync(fd)
        self._unsynced, self._synced_at = 0, now

    def _close(self, *, unlink: bool) -> None:
        fd, path = self._fd, self.path
        self._fd, self.path, self.entries, self._unsynced = None, None, 0, 0
        if unlink and path is not None:
            with contextlib.suppress(OSError):
                path.unlink()
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _line(value: dict[str, Any]) -> bytes:
    return (plain_json(value) + "\n").encode("utf-8")


def _line_of(interaction: dict[str, Any], response_text: str | None) -> bytes:
    """``_line({"interaction": interaction})``, its ``response`` spelled by
    ``response_text`` (the same encoder's text of it, which a recording has already made)
    instead of encoded again: the same bytes."""
    if response_text is None or "response" not in interaction:
        return _line({"interaction": interaction})
    names = list(interaction)
    at = names.index("response")
    head = plain_json({**{n: interaction[n] for n in names[:at]}, "response": 0})[:-2]
    rest = {n: interaction[n] for n in names[at + 1 :]}
    tail = ", " + plain_json(rest)[1:] if rest else "}"
    return f'{{"interaction": {head}{response_text}{tail}}}\n'.encode()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


# -- reading ---------------------------------------------------------------------------------


@dataclass
class JournalFile:
    """A journal read back: who wrote it, what it holds, what is left unsaved."""

    path: Path
    header: dict[str, Any]
    """The first line (``run``, ``writer``, ``mode``, ``cassette``, ``fileid``,
    ``started``); ``{}`` if it has none (torn by a kill before it was written)."""
    entries: list[dict[str, Any]] = field(default_factory=list)
    """The interactions no save has written."""
    fileid: FileId | None = None
    """The version of the cassette its run last knew (the header's)."""
    aside: dict[str, Any] | None = None
    """Why it was set aside (``code``, ``why``, ``run``), for an ``.aside`` file."""
    reported: bool = False

    @property
    def run(self) -> str | None:
        value = self.header.get("run")
        return value if isinstance(value, str) else None

    @property
    def writer(self) -> str | None:
        value = self.header.get("writer")
        return value if isinstance(value, str) else None

    @property
    def started(self) -> float | None:
        """When it got its first recording (a journal older than that field: ``None``)."""
        value = self.header.get("started")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def mode(self) -> str:
        value = self.header.get("mode")
        return value if isinstance(value, str) else "new_episodes"


def read(path: Path) -> JournalFile:
    """The journal at ``path``; a line torn by a kill, or that a cassette could not hold,
    is skipped. A file that cannot be read reads as empty."""
    found = JournalFile(path, {})
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return found
    for line in text.split("\n"):  # not splitlines(): JSON leaves U+2028, U+0085… as they are
        entry = _entry(line)
        if entry is not None:
            _take(found, entry)
    return found


def _entry(line: str) -> dict[str, Any] | None:
    try:
        entry = json.loads(line)
        plain.check(entry)  # what a cassette may hold, as on every load
    except (ValueError, RecursionError):
        return None  # the write a kill interrupted (that call was in flight), or not ours
    return entry if isinstance(entry, dict) else None


def _take(found: JournalFile, entry: dict[str, Any]) -> None:
    if isinstance(entry.get("interaction"), dict):
        found.entries.append(entry["interaction"])
    elif entry.get("journal") is not None and not found.header:
        found.header = {k: v for k, v in entry.items() if k != "journal"}
        found.fileid = _fileid(entry.get("fileid"))
    elif isinstance(entry.get("aside"), dict):
        found.aside = entry["aside"]
    elif entry.get("reported") is True:
        found.reported = True


def _fileid(value: Any) -> FileId | None:
    if isinstance(value, list) and len(value) == 4 and all(isinstance(v, int) for v in value):
        return list(value)
    return None


def known_version(path: Path) -> FileId | None:
    """The version of the cassette a journal's header names (its first line only)."""
    with contextlib.suppress(OSError, ValueError), path.open("rb") as handle:
        entry = _entry(handle.readline().decode("utf-8", "replace"))
        if entry is not None:
            return _fileid(entry.get("fileid"))
    return None


def orphans(folder: Path | None) -> list[Path]:
    """Journals in ``folder`` whose process is gone (their lock can be taken), oldest first."""
    return [path for path in _listed(folder, SUFFIX) if _orphaned(path)]


def live(folder: Path | None) -> list[Path]:
    """Journals in ``folder`` whose process still holds them."""
    return [path for path in _listed(folder, SUFFIX) if not _orphaned(path)]


def asides(folder: Path | None) -> list[Path]:
    """Journals set aside in ``folder``, oldest first."""
    return _listed(folder, ASIDE)


def _listed(folder: Path | None, suffix: str) -> list[Path]:
    if folder is None:
        return []
    try:  # asked at every load, where there is nearly always no folder: one listdir
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted((folder / name for name in names if name.endswith(suffix)), key=age)


def age(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return time.time()


def _orphaned(path: Path) -> bool:
    """A journal whose process no longer holds it (its writer stopped)."""
    return held(path) is False


def write_aside(
    journal: JournalFile, aside: dict[str, Any], transform: Callable[[Any], Any] | None = None
) -> Path:
    """Write ``journal``'s unsaved entries (through ``transform``) as an ``.aside`` file
    that ends with why; the caller removes the original. Returns the new path."""
    target = journal.path.with_suffix(ASIDE)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    lines = [_line({"journal": VERSION, **journal.header})]
    for interaction in journal.entries:
        kept = transform(interaction) if transform is not None else interaction
        lines.append(_line({"interaction": kept}))
    lines.append(_line({"aside": {**aside, "at": round(time.time())}}))
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        _write_all(fd, b"".join(lines))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, target)
    return target


def set_aside(
    journal: JournalFile, aside: dict[str, Any], transform: Callable[[Any], Any] | None = None
) -> Path:
    """Set an orphaned journal aside: its unsaved entries (through ``transform``) kept with
    why, the original gone."""
    target = write_aside(journal, aside, transform)
    with contextlib.suppress(OSError):
        journal.path.unlink()
    return target


def mark_reported(path: Path) -> None:
    """The next run has said what this set-aside journal holds; it stays quiet from now on."""
    with contextlib.suppress(OSError, ValueError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            _write_all(fd, _line({"reported": True}))
        finally:
            os.close(fd)


def remove(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()
