"""A failed test whose cause is a cassette, as one short report instead of a traceback: a
miss deep in an agent otherwise prints a hundred framework frames around the miss text.
``--tb=long`` (or ``native``) still shows the full traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chaincassette import CassetteError, CassetteMiss
from chaincassette.live_guard import LiveCallBlocked


@dataclass(frozen=True)
class Crash:
    """What pytest's one-line summary (``FAILED test - message``) and junitxml read."""

    path: str
    lineno: int
    message: str


class ShortFailure:
    """A ``longrepr`` pytest prints as is: the full text in the failure section, its first
    line in the short summary (a plain string would be repeated whole there on CI)."""

    def __init__(self, text: str, nodeid: str, summary: str = "") -> None:
        self.text = text
        self.reprcrash = Crash(nodeid.split("::")[0], 0, summary or text.splitlines()[0])

    def toterminal(self, tw: Any) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text


def short_report(error: CassetteError, nodeid: str, cassette: str, note: str = "") -> ShortFailure:
    """The failure pytest shows for a test a cassette error failed (its ``longrepr``). The
    summary of a refused live call leaves out its hint, a paragraph CI printed twice."""
    kind = "CassetteMiss" if isinstance(error, CassetteMiss) else type(error).__name__
    where = f"cassette: {cassette} (" if cassette not in ("", "?") else "("
    summary = f"{kind}: {error.headline}" if isinstance(error, LiveCallBlocked) else ""
    lines = [
        f"{kind}: {error}",
        f"  test: {nodeid}",
        f"  {where}the full traceback: pytest --tb=long)",
    ]
    if note:
        lines.append(f"  {note}")
    return ShortFailure("\n".join(lines), nodeid, summary)
