"""The cross-process lock around a cassette's read-merge-write, leaving no file beside it.

Concurrent recorders (pytest-xdist workers, several programs) merge instead of clobbering
because each save holds this lock while it reads the file, merges and replaces it. The
lock is an ``flock`` on the cassette's folder itself: it needs no lock file, so nothing
piles up beside the cassettes for users to ignore, and the kernel releases it when its
process dies, however it dies. One lock per folder means saves of sibling cassettes take
turns; a save takes milliseconds.

Threads of one process share one ``flock`` per folder through an in-process lock: two
descriptors of one process would otherwise wait for each other. Where a folder cannot be
locked (Windows, some network file systems), a lock file in a per-user folder under the
system temp directory stands in, still never beside the cassette.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import tempfile
import threading
from pathlib import Path
from types import TracebackType

try:  # POSIX
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    _FOLDER_LOCKS = True

except ImportError:  # pragma: no cover - Windows
    import msvcrt

    def _lock(fd: int) -> None:
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined]
                return
            except OSError:
                continue

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]

    _FOLDER_LOCKS = False


def fallback_lock_dir() -> Path:
    """Where lock files go when a folder cannot be locked: private to the user, never
    beside a cassette."""
    user = str(os.getuid()) if hasattr(os, "getuid") else getpass.getuser()
    return Path(tempfile.gettempdir()) / f"chaincassette-{user}" / "locks"


class _Folder:
    """This process's hold on one folder's lock: who holds it, how often, with which fd."""

    def __init__(self) -> None:
        self.threads = threading.RLock()
        self.depth = 0
        self.fd: int | None = None


_registry = threading.Lock()
_folders: dict[str, _Folder] = {}


def _reset_after_fork() -> None:  # a forked child holds no lock, whatever its parent held
    global _registry
    _registry = threading.Lock()
    _folders.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _acquire(folder: str) -> int:
    """A descriptor holding the exclusive lock of ``folder``."""
    if _FOLDER_LOCKS:
        try:
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            fd = -1
        if fd >= 0:
            try:
                _lock(fd)
                return fd
            except OSError:  # a file system without flock on folders: use a lock file
                os.close(fd)
    locks = fallback_lock_dir()
    locks.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = hashlib.sha256(folder.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    fd = os.open(locks / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


class FileLock:
    """Exclusive lock on the (existing) folder of ``path`` for a ``with`` block, reentrant
    within a thread."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        # the folder of the file a save replaces: two links to one cassette share its lock
        self.folder = os.path.dirname(os.path.realpath(self.path))

    def __enter__(self) -> FileLock:
        with _registry:
            entry = _folders.setdefault(self.folder, _Folder())
        entry.threads.acquire()
        try:
            if entry.depth == 0:
                entry.fd = _acquire(self.folder)
            entry.depth += 1
        except BaseException:
            entry.threads.release()
            raise
        self._entry = entry
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        entry = self._entry
        try:
            entry.depth -= 1
            if entry.depth == 0 and entry.fd is not None:
                fd, entry.fd = entry.fd, None
                try:
                    _unlock(fd)
                finally:
                    os.close(fd)
        finally:
            entry.threads.release()
