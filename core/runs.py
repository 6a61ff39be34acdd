"""Runs: which processes record together, and which of them are alive.

A *run* is a process, or a pytest session with all its xdist workers, or one
``chaincassette run`` with every process it starts: those share ``CHAINCASSETTE_RUN``.
``record`` mode drops what is older than its run, never what its run recorded in any of
its processes, and never what a *live writer* of another run recorded: two programs
recording one cassette at once keep both their recordings.

Liveness is a held ``flock``, so a killed process stops being alive the moment it dies:

- a *writer* is one process taking part in one run (``state/live/<run>/<pid>-<id>.lock``),
  created when the process first records in that run and released when the process
  moves to another run (a test that switches ``CHAINCASSETTE_RUN``): what it recorded
  is then no longer a live run's;
- a *holder* (``….hold``) keeps a run alive between its processes: a pytest session's
  controller and ``chaincassette run`` hold their run while their children come and go.

A run is alive while any of its writers or holders is. Each run also lists the state
folders of the cassettes it recorded (``touched``), so that the last of its processes
can clean up after it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .statedir import LIVE, state_dir

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: every run counts as alive
    fcntl = None  # type: ignore[assignment]

RUN_ENV = "CHAINCASSETTE_RUN"
WRITER = ".lock"
HOLDER = ".hold"
TOUCHED = "touched"

_RUN = f"p{os.getpid()}-{uuid.uuid4().hex[:12]}"


def current_run() -> str:
    """The id of the run this process belongs to (``CHAINCASSETTE_RUN``, else its own)."""
    return os.environ.get(RUN_ENV) or _RUN


def tag(run: str) -> str:
    """A file name for a run id (which may be any string)."""
    return hashlib.sha256(run.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def run_folder(run: str) -> Path:
    return state_dir() / LIVE / tag(run)


@dataclass
class _Held:
    """One lock file this process holds."""

    path: Path
    fd: int


@dataclass
class _Process:
    """What this process holds: a writer (for its current run), holders, folders touched."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    writer: tuple[str, _Held] | None = None
    holders: dict[str, _Held] = field(default_factory=dict)
    touched: dict[str, set[str]] = field(default_factory=dict)
    runs: set[str] = field(default_factory=set)


_process = _Process()


def _reset_after_fork() -> None:  # a forked child holds no lock of its own
    global _process
    _process = _Process()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _take(run: str, suffix: str) -> _Held:
    folder = run_folder(run)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}{suffix}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)
    return _Held(path, fd)


def _release(held: _Held) -> None:
    with contextlib.suppress(OSError):
        held.path.unlink()
    with contextlib.suppress(OSError):
        os.close(held.fd)


def writer() -> str:
    """This process's writer id in its current run (``<run tag>/<lock name>``), taken on
    first use; a writer of the run this process left is released first."""
    run = current_run()
    with _process.lock:
        if _process.writer is not None and _process.writer[0] != run:
            _release(_process.writer[1])
            _process.writer = None
        if _process.writer is None:
            try:
                _process.writer = (run, _take(run, WRITER))
            except OSError:  # no state folder: a writer nobody can see alive
                return f"{tag(run)}/{os.getpid()}-unlocked{WRITER}"
            _process.runs.add(run)
        held = _process.writer[1]
    return f"{held.path.parent.name}/{held.path.name}"


def hold(run: str) -> None:
    """Keep ``run`` alive while this process lives."""
    with _process.lock:
        if run not in _process.holders:
            with contextlib.suppress(OSError):
                _process.holders[run] = _take(run, HOLDER)
                _process.runs.add(run)


def writer_alive(writer_id: str) -> bool:
    """Whether the writer ``writer_id`` (from ``writer``) is a live process in its run."""
    return _locked(state_dir() / LIVE / writer_id)


def run_alive(run: str, *, besides_me: bool = False) -> bool:
    """Whether any writer or holder of ``run`` lives (``besides_me``: other than this
    process's own, for a process deciding whether it is the run's last)."""
    folder = run_folder(run)
    mine = _own_paths() if besides_me else set()
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    for name in names:
        path = folder / name
        if name.endswith((WRITER, HOLDER)) and path not in mine and _locked(path):
            return True
    return False


def _own_paths() -> set[Path]:
    with _process.lock:
        own = {held.path for held in _process.holders.values()}
        if _process.writer is not None:
            own.add(_process.writer[1].path)
    return own


def _locked(path: Path) -> bool:
    """Whether a process holds the lock file ``path``."""
    if fcntl is None:  # pragma: no cover
        return path.exists()
    return held(path) is True


def held(path: Path) -> bool | None:
    """Whether a live process holds the lock file ``path``: ``None`` when there is no such
    file, or no ``fcntl`` to ask with (a held ``flock`` is how a process shows it lives)."""
    if fcntl is None:  # pragma: no cover
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def touch(folder: Path) -> None:
    """The current run recorded the cassette of state folder ``folder``: remember it for
    the cleanup at the end of the run (in this process, and for the run's last process)."""
    if not folder.name:
        return
    writer()  # first: a run folder holding no lock is a dead run's to every other process
    run = current_run()
    with _process.lock:
        seen = _process.touched.setdefault(run, set())
        if folder.name in seen:
            return
        seen.add(folder.name)
        _process.runs.add(run)
    with contextlib.suppress(OSError):
        index = run_folder(run)
        index.mkdir(parents=True, exist_ok=True, mode=0o700)
        with (index / TOUCHED).open("a", encoding="utf-8") as handle:
            handle.write(folder.name + "\n")


def touched(run: str) -> set[str]:
    """The state folders (names) the run's processes recorded in, as far as this one knows."""
    with _process.lock:
        names = set(_process.touched.get(run, ()))
    with contextlib.suppress(OSError):
        names |= set((run_folder(run) / TOUCHED).read_text(encoding="utf-8").split())
    return names


def my_runs() -> set[str]:
    """Every run this process took part in."""
    with _process.lock:
        return set(_process.runs)


def forget(run: str, *, over: bool) -> None:
    """This process is done with ``run``: release what it holds of it; ``over``: no other
    process of the run lives, and the run's folder goes too."""
    with _process.lock:
        held = _process.holders.pop(run, None)
        mine = _process.writer if _process.writer and _process.writer[0] == run else None
        if mine is not None:
            _process.writer = None
        _process.touched.pop(run, None)
        _process.runs.discard(run)
    for lock in (held, mine[1] if mine else None):
        if lock is not None:
            _release(lock)
    if not over:
        return
    folder = run_folder(run)
    with contextlib.suppress(OSError):
        (folder / TOUCHED).unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()  # only once no other process holds a lock file in it


def dead_runs() -> list[str]:
    """Tags of runs whose every process is gone but whose folder remains (a killed run)."""
    root = state_dir() / LIVE
    try:
        tags = os.listdir(root)
    except OSError:
        return []
    dead = []
    for name in tags:
        folder = root / name
        try:
            locks = [n for n in os.listdir(folder) if n.endswith((WRITER, HOLDER))]
        except OSError:
            continue
        if not any(_locked(folder / n) for n in locks):
            dead.append(name)
    return dead


def remove_dead(run_tag: str) -> set[str]:
    """Remove a dead run's folder; returns the state folders it had touched."""
    folder = state_dir() / LIVE / run_tag
    names: set[str] = set()
    with contextlib.suppress(OSError):
        names = set((folder / TOUCHED).read_text(encoding="utf-8").split())
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            with contextlib.suppress(OSError):
                (folder / name).unlink()
        folder.rmdir()
    return names


def start_run() -> str | None:
    """Start a new run for this process and every process it starts (for runners such as a
    pytest session), held alive by this process; returns the id of the run it replaces,
    for ``end_run``."""
    previous = os.environ.get(RUN_ENV)
    run = f"r{uuid.uuid4().hex[:16]}"
    os.environ[RUN_ENV] = run
    hold(run)
    return previous


def end_run(previous: str | None) -> str:
    """Go back to the run ``start_run`` replaced; returns the id of the run that ended
    (its cleanup is the caller's: ``chaincassette.store.finish_run``)."""
    ended = current_run()
    if previous is None:
        os.environ.pop(RUN_ENV, None)
    else:
        os.environ[RUN_ENV] = previous
    return ended
