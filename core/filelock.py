"""A cross-process lock beside a cassette, so concurrent recorders merge instead of clobbering."""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

try:  # POSIX
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

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


def lock_path_for(path: Path) -> Path:
    """The hidden lock file that guards ``path`` (``.name.cclock`` in the same folder)."""
    return path.with_name(f".{path.name}.cclock")


class FileLock:
    """Exclusive advisory lock held for the duration of a ``with`` block."""

    def __init__(self, path: Path) -> None:
        self.path = lock_path_for(path)
        self._fd: int | None = None

    def __enter__(self) -> FileLock:
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _lock(self._fd)
        except BaseException:
            os.close(self._fd)
            self._fd = None
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fd is not None:
            try:
                _unlock(self._fd)
            finally:
                os.close(self._fd)
                self._fd = None
