"""``chaincassette show``: a cassette as a readable transcript, or as JSON for machines.

Each interaction prints what was new in its request (a call that continues an earlier
one prints only the messages after that one's answer) and its answer: text, tool calls
as ``→ name(args)``, streamed or not, LangChain or LlamaIndex alike.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import keyrules, storage
from ..canonical import key_of
from ..miss import describe
from ..transcript import continuations
from ..wording import counted
from . import files, text


def header(loaded: files.Loaded) -> str:
    assert loaded.document is not None
    count = len(loaded.document.interactions)
    versions = ", ".join(f"{k} {v}" for k, v in sorted(loaded.document.recorded_with.items()))
    return f"{files.display(loaded.path)} · {count} interaction{'s' if count != 1 else ''} · recorded with {versions or '?'}"


def interaction_title(index: int, interaction: dict[str, Any], base: int | None = None) -> str:
    meta = interaction.get("meta") or {}
    parts = [f"[{index}] {describe(interaction['request']).split(' · last user message')[0]}"]
    if base is not None:
        parts.append(f"continues [{base}]")
    for field in ("agent", "node", "framework"):
        if meta.get(field):
            parts.append(f"{field} {meta[field]}")
    if meta.get("tokens"):
        parts.append(counted(int(meta["tokens"]), "token"))
    if meta.get("recorded"):
        parts.append(f"recorded {meta['recorded']}")
    parts.append(f"key {interaction['key'][:12]}")
    return " · ".join(parts)


def run(args: argparse.Namespace) -> int:
    loaded = files.load(Path(args.file))
    if loaded.document is None:
        print(f"chaincassette: {loaded.error}", file=sys.stderr)
        return 1
    if getattr(args, "key", None) is not None:
        return show_keys(loaded, args.key)
    if args.json:
        json.dump(storage.expanded(loaded.document), sys.stdout, indent=1, ensure_ascii=False)
        print()
        return 0
    print(header(loaded))
    interactions = loaded.document.interactions
    for index, (interaction, (base, start)) in enumerate(
        zip(interactions, continuations(interactions), strict=True)
    ):
        print()
        print(interaction_title(index, interaction, base))
        request = interaction["request"]
        if base is None:
            lines = text.request_lines(request)
        else:  # only what is new: the earlier answer was printed under [base]
            new = request["messages"][start:]
            if new and isinstance(new[0], dict) and new[0].get("role") in ("assistant", "ai"):
                new = new[1:]
            lines = [line for m in new if isinstance(m, dict) for line in text.message_lines(m)]
        for line in lines:
            print(f"  {line}")
        print("  ── answer")
        for line in text.response_lines(interaction["response"]):
            print(f"  {line}")
    if loaded.document.trace:
        runs = counted(len(loaded.document.trace), "run")
        print(f"\ntrace: {runs} (chaincassette show --json for all of it)")
    return 0


def key_lines(interaction: dict[str, Any]) -> list[str]:
    """What of one stored request is in its key, what is left out and why."""
    request = interaction["request"]
    rules = storage.interaction_rules(interaction)
    view = keyrules.explain(request, rules)
    lines = ["in the key (what the model reads):"]
    for line in json.dumps(view.kept, indent=2, ensure_ascii=False, sort_keys=True).splitlines():
        lines.append(f"  {_clip(line)}")
    if view.left_out:
        lines.append("left out of the key:")
        lines.extend(f"  - {path}: {why}" for path, why in view.left_out)
    else:
        lines.append("left out of the key: nothing (every stored field is keyed)")
    if view.unknown:
        lines.append("content blocks of unknown type (keyed by their text-like fields only):")
        lines.extend(f"  - {path}" for path in view.unknown)
    if "<redacted" in json.dumps(request):
        lines.append("key check: skipped (the stored copy is redacted)")
    elif key_of(request, rules) == interaction["key"]:
        lines.append("key check: the stored key is this view's hash")
        if rules != keyrules.KEY_RULES_VERSION:
            lines.append(
                f"key rules: {rules}, older than this chaincassette's "
                f"({keyrules.KEY_RULES_VERSION}); it replays by them"
            )
    else:
        lines.append(
            "key check: the stored key is NOT this view's hash: recorded by an older "
            "chaincassette with other key rules, or edited by hand; replay will miss it"
        )
    return lines


def _clip(line: str, limit: int = text.WIDTH) -> str:
    return line if len(line) <= limit else line[: limit - 1] + "…"


def show_keys(loaded: files.Loaded, index: int) -> int:
    assert loaded.document is not None
    interactions = loaded.document.interactions
    if index >= len(interactions) or index < -1:
        count = len(interactions)
        print(
            f"chaincassette: {files.display(loaded.path)} has {count} interaction"
            f"{'s' if count != 1 else ''}; --key takes 0…{count - 1}",
            file=sys.stderr,
        )
        return 2
    print(header(loaded))
    chosen = range(len(interactions)) if index == -1 else [index]
    for i in chosen:
        print()
        print(interaction_title(i, interactions[i]))
        for line in key_lines(interactions[i]):
            print(f"  {line}")
    return 0
