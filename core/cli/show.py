"""``chaincassette show``: a cassette as a readable transcript, or as JSON for machines."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import storage
from ..miss import describe
from . import files, text


def header(loaded: files.Loaded) -> str:
    assert loaded.document is not None
    count = len(loaded.document.interactions)
    versions = ", ".join(f"{k} {v}" for k, v in sorted(loaded.document.recorded_with.items()))
    return f"{files.display(loaded.path)} · {count} interaction{'s' if count != 1 else ''} · recorded with {versions or '?'}"


def interaction_title(index: int, interaction: dict[str, Any]) -> str:
    meta = interaction.get("meta") or {}
    parts = [f"[{index}] {describe(interaction['request']).split(' · last user message')[0]}"]
    for field in ("agent", "node", "framework"):
        if meta.get(field):
            parts.append(f"{field} {meta[field]}")
    if meta.get("tokens"):
        parts.append(f"{int(meta['tokens']):,} tokens")
    if meta.get("recorded"):
        parts.append(f"recorded {meta['recorded']}")
    parts.append(f"key {interaction['key'][:12]}")
    return " · ".join(parts)


def run(args: argparse.Namespace) -> int:
    loaded = files.load(Path(args.file))
    if loaded.document is None:
        print(f"chaincassette: {loaded.error}", file=sys.stderr)
        return 1
    if args.json:
        json.dump(storage.to_plain(loaded.document), sys.stdout, indent=1, ensure_ascii=False)
        print()
        return 0
    print(header(loaded))
    for index, interaction in enumerate(loaded.document.interactions):
        print()
        print(interaction_title(index, interaction))
        for line in text.request_lines(interaction["request"]):
            print(f"  {line}")
        print("  ── response")
        for line in text.response_lines(interaction["response"]):
            print(f"  {line}")
    if loaded.document.trace:
        print(
            f"\ntrace: {len(loaded.document.trace)} runs (chaincassette show --json for all of it)"
        )
    return 0
