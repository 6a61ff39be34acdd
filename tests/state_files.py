"""Reading the files of a state folder that other workers of the run share."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def files_under(root: Path) -> Iterator[tuple[Path, bytes]]:
    """Each file under ``root`` with its bytes. Another xdist worker cleans the folder it
    shares meanwhile: a file or folder removed while it is walked is skipped (``rglob``
    raised on a folder gone between its listing and its reading)."""
    for folder, _, names in os.walk(root):
        for path in (Path(folder) / name for name in names):
            try:
                yield path, path.read_bytes()
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                continue
