"""Nothing recorded is lost: a write-ahead journal per process and cassette, and the run.

Each interaction is appended to this process's journal for its cassette (one JSON line,
flushed and fsynced) the moment it is recorded. The journal is deleted once the cassette
file holds it. A process that dies first (SIGKILL, SIGTERM, ``os._exit``, Ctrl-C during
the save, an OOM kill) leaves its journal behind, and the next open of that cassette, in
any process, merges it. The journal is held under an exclusive ``flock`` while its
process lives, and the kernel drops the lock when the process dies however it dies, so
"whose journal is orphaned" is never a guess.

Journals live in a per-user state directory (``CHAINCASSETTE_STATE_DIR``, else
``$XDG_STATE_HOME/chaincassette``, else ``~/.local/state/chaincassette``), one folder per
cassette, mode 0700/0600: they may hold a response a save refused as a secret, and can
never be committed by accident.

A *run* (a process; or a pytest session with all its xdist workers, or a ``chaincassette
run``, which share ``CHAINCASSETTE_RUN``) decides what ``record`` mode drops: what the
file held when the run first opened it (its *baseline*), never what the run itself
recorded in any of its processes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from . import plain

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: journals work, orphan detection does not
    fcntl = None  # type: ignore[assignment]

STATE_ENV = "CHAINCASSETTE_STATE_DIR"
RUN_ENV = "CHAINCASSETTE_RUN"
SUFFIX = ".journal"
BASELINE = "baseline.json"

_RUN = f"p{os.getpid()}-{uuid.uuid4().hex[:12]}"


def current_run() -> str:
    """The id of the run this process belongs to (``CHAINCASSETTE_RUN``, else its own)."""
    return os.environ.get(RUN_ENV) or _RUN


def start_run() -> str | None:
    """Start a new run for this process and every process it starts (for runners such as a
    pytest session); returns the id of the run it replaces, for ``end_run``."""
    previous = os.environ.get(RUN_ENV)
    os.environ[RUN_ENV] = f"r{uuid.uuid4().hex[:16]}"
    return previous


def end_run(previous: str | None) -> None:
    """Go back to the run ``start_run`` replaced (a session run inside another's process)."""
    if previous is None:
        os.environ.pop(RUN_ENV, None)
    else:
        os.environ[RUN_ENV] = previous


def state_dir() -> Path:
    explicit = os.environ.get(STATE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "chaincassette"


def folder_for(cassette: Path) -> Path:
    """The state folder of one cassette file (named by a hash of its absolute path)."""
    resolved = str(Path(os.path.abspath(cassette)))
    digest = hashlib.sha256(resolved.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return state_dir() / "journal" / digest


def _make_folder(cassette: Path) -> Path:
    folder = folder_for(cassette)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = folder / "cassette.txt"
    if not name.exists():  # for a human looking at the state directory
        with contextlib.suppress(OSError):
            name.write_text(f"{os.path.abspath(cassette)}\n")
    return folder


class Journal:
    """This process's journal for one cassette; opened on the first append."""

    def __init__(self, cassette: Path) -> None:
        self.cassette = cassette
        self.path: Path | None = None
        self._file: IO[str] | None = None
        self._lock = threading.Lock()

    def append(self, interaction: dict[str, Any]) -> None:
        line = json.dumps(
            {"run": current_run(), "interaction": interaction},
            ensure_ascii=False,
            allow_nan=False,
        )
        with self._lock:
            handle = self._open()
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def _open(self) -> IO[str]:
        if self._file is None:
            folder = _make_folder(self.cassette)
            self.path = folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}{SUFFIX}"
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)  # held while this process lives
            self._file = os.fdopen(fd, "a", encoding="utf-8")
        return self._file

    def discard(self) -> None:
        """The cassette file now holds everything journaled: delete the journal."""
        with self._lock:
            if self._file is None:
                return
            path, self.path = self.path, None
            with contextlib.suppress(OSError):
                if path is not None:
                    path.unlink()
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


def orphans(cassette: Path) -> list[Path]:
    """Journals of this cassette whose process is gone (their lock can be taken)."""
    folder = folder_for(cassette)
    try:  # asked at every load, where there is nearly always no folder: one listdir
        names = os.listdir(folder)
    except OSError:
        return []
    candidates = sorted((folder / name for name in names if name.endswith(SUFFIX)), key=_age)
    return [path for path in candidates if _orphaned(path)]


def _age(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return time.time()


def _orphaned(path: Path) -> bool:
    if fcntl is None:  # pragma: no cover
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # its process is alive and holds it
    finally:
        os.close(fd)
    return True


def entries(path: Path) -> Iterator[dict[str, Any]]:
    """The journaled entries (``run``, ``interaction``); a line torn by a kill is skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            plain.check(entry, keys=False)  # what a cassette may hold, as on every load
        except (ValueError, RecursionError):
            continue  # the write a kill interrupted (that call was in flight), or not ours
        if isinstance(entry, dict) and isinstance(entry.get("interaction"), dict):
            yield entry


def remove(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


def baseline(cassette: Path, current: list[str]) -> list[str]:
    """What ``record`` mode drops for this run: the fingerprints of what the file held when
    the run first opened it. ``current`` is what it holds now; call under the cassette's
    lock, so no process of the run can have saved before the first one fixed the baseline.
    """
    folder = _make_folder(cassette)
    path = folder / BASELINE
    run = current_run()
    with contextlib.suppress(OSError, ValueError):
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored.get("run") == run and isinstance(stored.get("fingerprints"), list):
            return [str(f) for f in stored["fingerprints"]]
    temporary = folder / f".{BASELINE}.{os.getpid()}"
    temporary.write_text(json.dumps({"run": run, "fingerprints": current}), encoding="utf-8")
    os.replace(temporary, path)
    return current


def stale_now(cassette: Path, fallback: list[str]) -> list[str]:
    """The baseline entries no save of this run has dropped yet (under the cassette's lock)."""
    with contextlib.suppress(OSError, ValueError):
        stored = json.loads((folder_for(cassette) / BASELINE).read_text(encoding="utf-8"))
        if stored.get("run") == current_run() and isinstance(stored.get("fingerprints"), list):
            return [str(f) for f in stored["fingerprints"]]
    return fallback


def dropped(cassette: Path, remaining: list[str]) -> None:
    """A save of this run dropped stale entries: what remains stale for its other processes
    (an identical interaction the run records again is then never taken for a stale one)."""
    folder = _make_folder(cassette)
    temporary = folder / f".{BASELINE}.{os.getpid()}"
    temporary.write_text(
        json.dumps({"run": current_run(), "fingerprints": remaining}), encoding="utf-8"
    )
    os.replace(temporary, folder / BASELINE)


def fingerprint(plain: dict[str, Any]) -> str:
    """Identity of a stored interaction (its canonical JSON's hash)."""
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
