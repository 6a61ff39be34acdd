"""``chaincassette ls``: one row per cassette."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import files


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024 or unit == "MB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def run(args: argparse.Namespace) -> int:
    rows = [("CASSETTE", "INTERACTIONS", "MODELS", "TOKENS", "SIZE", "RECORDED")]
    broken = 0
    for path in files.find(Path(args.dir)):
        loaded = files.load(path)
        size = human_size(path.stat().st_size)
        if loaded.document is None:
            broken += 1
            rows.append((files.display(path), "unreadable", "-", "-", size, "-"))
            continue
        interactions = loaded.document.interactions
        metas = [i.get("meta") or {} for i in interactions]
        models = sorted({str(m["model"]) for m in metas if m.get("model")}) or sorted(
            {str(i["request"].get("model")) for i in interactions if i["request"].get("model")}
        )
        tokens = sum(int(m.get("tokens") or 0) for m in metas)
        dates = sorted(str(m["recorded"]) for m in metas if m.get("recorded"))
        rows.append(
            (
                files.display(path),
                str(len(interactions)),
                ", ".join(models) or "-",
                f"{tokens:,}",
                size,
                dates[-1] if dates else "-",
            )
        )
    if len(rows) == 1:
        print(f"no cassettes under {args.dir}")
        return 0
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    right = {1, 3, 4}
    for row in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=False))
        ]
        print("  ".join(cells).rstrip())
    if broken:
        print(
            f"\n{broken} unreadable cassette{'s' if broken != 1 else ''}: run `chaincassette verify` for details",
            file=sys.stderr,
        )
        return 1
    return 0
