"""``chaincassette ls``: one row per cassette."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..usage import unknown_usage
from . import files


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024 or unit == "MB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def token_cell(tokens: int, unknown: int) -> str:
    """A cassette's tokens: what providers reported, and how many calls reported none."""
    if not unknown:
        return f"{tokens:,}"
    return f"{tokens:,} + {unknown} unknown" if tokens else "unknown"


def run(args: argparse.Namespace) -> int:
    rows: list[tuple[str, ...]] = [
        ("CASSETTE", "INTERACTIONS", "MODELS", "TOKENS", "SIZE", "RECORDED")
    ]
    broken = 0
    unknown_total = 0
    for path in files.find(Path(args.dir)):
        loaded = files.load(path)
        size = human_size(path.stat().st_size)
        if loaded.document is None:
            broken += 1
            rows.append((files.display(path), "unreadable", "-", "-", size, "-"))
            continue
        row, unknown = _row(path, loaded.document.interactions, size)
        rows.append(row)
        unknown_total += unknown
    if len(rows) == 1:
        print(f"no cassettes under {args.dir}")
        return 0
    _print_table(rows)
    if unknown_total:
        print(
            f"\nunknown: {unknown_total} model call{'s' if unknown_total != 1 else ''} whose "
            "provider reported no usage (OpenAI sends a stream's usage only when asked: "
            "stream_options={'include_usage': True}, stream_usage=True in langchain-openai)"
        )
    if broken:
        print(
            f"\n{broken} unreadable cassette{'s' if broken != 1 else ''}: run `chaincassette verify` for details",
            file=sys.stderr,
        )
        return 1
    return 0


def _row(path: Path, interactions: list[dict[str, Any]], size: str) -> tuple[tuple[str, ...], int]:
    """One cassette's row, and how many of its model calls reported no usage."""
    metas = [i.get("meta") or {} for i in interactions]
    models = sorted({str(m["model"]) for m in metas if m.get("model")}) or sorted(
        {str(i["request"].get("model")) for i in interactions if i["request"].get("model")}
    )
    tokens = sum(int(m.get("tokens") or 0) for m in metas)
    unknown = sum(
        unknown_usage(i.get("request"), i.get("response"), i.get("meta") or {})
        for i in interactions
    )
    dates = sorted(str(m["recorded"]) for m in metas if m.get("recorded"))
    row = (
        files.display(path),
        str(len(interactions)),
        ", ".join(models) or "-",
        token_cell(tokens, unknown),
        size,
        dates[-1] if dates else "-",
    )
    return row, unknown


def _print_table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    right = {1, 3, 4}
    for row in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=False))
        ]
        print("  ".join(cells).rstrip())
