"""Where chaincassette keeps what is not a cassette: journals, run ledgers, liveness locks.

A per-user state directory (``CHAINCASSETTE_STATE_DIR``, else ``$XDG_STATE_HOME/
chaincassette``, else ``~/.local/state/chaincassette``), mode 0700: a journal may hold a
response a save refused, and must never be committed by accident.

Each cassette gets one folder there, named by the file's identity, not by the spelling of
its path: the device and inode of the folder that holds it (so a bind mount, a symlinked
folder or a relative path all find the same journals) and its name. A cassette that is a
symbolic link is named by the file it points to, which is the file a save replaces.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

STATE_ENV = "CHAINCASSETTE_STATE_DIR"
CASSETTES = "cassettes"
LIVE = "live"
NAME_FILE = "cassette.txt"

FileId = list[int]
"""What tells one version of a file from another: device, inode, size, mtime (ns)."""


def state_dir() -> Path:
    explicit = os.environ.get(STATE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "chaincassette"


def real_target(cassette: Path) -> Path:
    """The file a save of ``cassette`` replaces: its path with every link resolved."""
    return Path(os.path.realpath(cassette))


def fileid(path: Path) -> FileId | None:
    """The identity of the file at ``path`` now (following links), or ``None`` if absent."""
    try:
        info = os.stat(path)
    except OSError:  # absent, or a link that loops (reading it says so)
        return None
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns]


def cassette_key(cassette: Path) -> str | None:
    """The state folder's name for ``cassette`` by its identity; ``None`` while the folder
    that will hold it does not exist (see ``path_key``)."""
    target = real_target(cassette)
    try:
        info = os.stat(target.parent)
    except OSError:
        return None
    # a file system without inode numbers falls back to the resolved path
    where = f"{info.st_dev}:{info.st_ino}" if info.st_ino else f"path:{target.parent}"
    return _digest(f"{where}/{target.name}")


def path_key(cassette: Path) -> str:
    """The state folder's name for a cassette whose folder does not exist yet (a recording
    journaled before anything created it: a refused write never creates it)."""
    return _digest(f"path:{real_target(cassette)}")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def cassette_folder(cassette: Path) -> Path:
    """The state folder of ``cassette`` now (it may not exist)."""
    key = cassette_key(cassette)
    return state_dir() / CASSETTES / (key if key is not None else path_key(cassette))


def cassette_folders(cassette: Path) -> list[Path]:
    """Every state folder that may hold journals of ``cassette``: by identity, and by path
    for those written before its folder existed."""
    key = cassette_key(cassette)
    by_path = state_dir() / CASSETTES / path_key(cassette)
    return [by_path] if key is None else [state_dir() / CASSETTES / key, by_path]


def make_cassette_folder(cassette: Path) -> Path:
    """The state folder of ``cassette``, created (never the cassette's own folder)."""
    folder = cassette_folder(cassette)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = folder / NAME_FILE
    if not name.exists():  # for a human looking at the state directory, and for cleaning up
        with contextlib.suppress(OSError):
            name.write_text(f"{real_target(cassette)}\n", encoding="utf-8")
    return folder


def cassette_of(folder: Path) -> Path | None:
    """The cassette a state folder belongs to, as its folder says (``None`` if unknown)."""
    try:
        text = (folder / NAME_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Path(text) if text else None


def remove_folder(folder: Path) -> bool:
    """Remove a cassette's state folder once it holds nothing but its name file."""
    with contextlib.suppress(OSError):
        names = set(os.listdir(folder))
        if names - {NAME_FILE}:
            return False
        with contextlib.suppress(FileNotFoundError):
            (folder / NAME_FILE).unlink()
        folder.rmdir()
        return True
    return False
