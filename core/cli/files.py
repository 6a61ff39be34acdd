"""Finding and reading cassettes for the CLI: which files are cassettes, and what is in them."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import storage
from ..errors import CassetteFormatError

SUFFIXES = (".yaml", ".yml", ".json")
SKIPPED_DIRS = frozenset(
    {".git", ".venv", "venv", "node_modules", "__pycache__", "site-packages", ".tox"}
)
SNIFF_BYTES = 4096


@dataclass
class Loaded:
    """A cassette file and its document, or the error that kept it from loading."""

    path: Path
    document: storage.CassetteDocument | None = None
    error: CassetteFormatError | None = None

    @property
    def ok(self) -> bool:
        return self.document is not None


def looks_like_cassette(path: Path) -> bool:
    """Inside a ``cassettes`` folder, or a YAML/JSON file that starts like one."""
    if "cassettes" in path.parts[:-1]:
        return True
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # never open a FIFO or a device to sniff
            return False
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES).decode("utf-8", "replace")
    except OSError:
        return False
    return "recorded_with" in head and "version" in head


def find(root: Path) -> Iterator[Path]:
    """Cassette files under ``root`` (or ``root`` itself), sorted, hidden files skipped."""
    if root.is_file():
        yield root
        return
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in files:
            path = Path(folder) / name
            if name.startswith(".") or not name.lower().endswith(SUFFIXES):
                continue
            if looks_like_cassette(path):
                found.append(path)
    yield from sorted(found)


def load(path: Path) -> Loaded:
    try:
        document = storage.read(path, storage.detect_format(path))
    except CassetteFormatError as error:
        return Loaded(path, error=error)
    if document is None:
        return Loaded(
            path, error=CassetteFormatError(path, "does not exist", hint="check the path")
        )
    return Loaded(path, document)


def display(path: Path) -> str:
    """``path`` relative to the working directory when it is inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)
