"""``chaincassette upgrade`` and ``chaincassette accept``: rewrite cassettes in place, safely.

``upgrade`` writes every cassette under a folder in the current format (version 2, the
transcript form) and keys each interaction by the current key rules where its stored
request allows (``chaincassette.rekey``: one that cannot keeps the rules that keyed it, and
replays by them); nothing about what replays changes, and running it again changes no
byte. ``accept`` is for a response edited or written by hand on purpose: it stores the
response's new hash (and, for a request edited by hand, its new key), so ``verify``
stops reporting it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import keyrules, rekey, storage
from ..canonical import canonical_json, key_of
from ..errors import CassetteError
from ..filelock import FileLock
from ..transcript import response_hash
from . import files


def _rewrite(path: Path, document: storage.CassetteDocument) -> bool:
    """Write ``document`` to ``path`` if that changes the file; whether it did."""
    text = storage.dumps(document, storage.detect_format(path))
    if path.read_text(encoding="utf-8") == text:
        return False
    storage.write_atomic(path, text)
    return True


def run_upgrade(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    changed = current = 0
    failed = []
    for path in files.find(root):
        try:
            with FileLock(path):
                loaded = files.load(path)
                if loaded.document is None:
                    assert loaded.error is not None
                    raise loaded.error
                old, rules = loaded.document.version, loaded.document.key_rules
                kept = upgrade(loaded.document)
                if args.dry_run:
                    text = storage.dumps(loaded.document, storage.detect_format(path))
                    did = path.read_text(encoding="utf-8") != text
                else:
                    did = _rewrite(path, loaded.document)
        except CassetteError as error:
            failed.append(f"FAIL {files.display(path)}: {str(error).splitlines()[0]}")
            continue
        if did:
            changed += 1
            verb = "would rewrite" if args.dry_run else "rewrote"
            print(
                f"{verb} {files.display(path)} (version {old} → {storage.FORMAT_VERSION}, key "
                f"rules {rules} → {keyrules.KEY_RULES_VERSION})"
            )
        else:
            current += 1
        for index, version, why in kept:
            print(f"  interaction {index} keeps key rules {version} (it replays by them): {why}")
    for line in failed:
        print(line, file=sys.stderr)
    print(
        f"{changed} cassette{'s' if changed != 1 else ''} "
        f"{'to upgrade' if args.dry_run else 'upgraded'}, {current} already current"
        + (f", {len(failed)} unreadable" if failed else "")
    )
    return 1 if failed else 0


def upgrade(document: storage.CassetteDocument) -> list[tuple[int, int, str]]:
    """Key each interaction by the current key rules where its stored request allows
    (``rekey.rekeyed``); the (index, rules, why) of each that keeps older ones."""
    kept = []
    for index, interaction in enumerate(document.interactions):
        rules = storage.interaction_rules(interaction)
        key, now, why = rekey.rekeyed(interaction["request"], interaction["key"], rules)
        interaction["key"] = key
        meta = {k: v for k, v in (interaction.get("meta") or {}).items() if k != storage.KEY_RULES}
        if now != keyrules.KEY_RULES_VERSION:
            meta[storage.KEY_RULES] = now
        interaction["meta"] = meta
        if why is not None:
            kept.append((index, now, why))
    return kept


def run_accept(args: argparse.Namespace) -> int:
    status = 0
    for name in args.files:
        path = Path(name)
        if not path.is_file():
            print(f"chaincassette accept: {name}: no such cassette file", file=sys.stderr)
            status = 1
            continue
        try:
            with FileLock(path):
                loaded = files.load(path)
                if loaded.document is None:
                    assert loaded.error is not None
                    raise loaded.error
                responses, keys = accept(loaded.document)
                _rewrite(path, loaded.document)
        except CassetteError as error:
            print(f"chaincassette accept: {error}", file=sys.stderr)
            status = 1
            continue
        print(
            f"{files.display(path)}: accepted {responses} response{'s' if responses != 1 else ''}"
            f" and {keys} request{'s' if keys != 1 else ''} edited by hand"
        )
    return status


def accept(document: storage.CassetteDocument) -> tuple[int, int]:
    """Take what the file holds now as recorded: (responses re-hashed, requests re-keyed).

    A request holding a redacted secret keeps its key: the key was computed from the
    secret, which is not in the file, so it cannot be recomputed here.
    """
    responses = keys = 0
    for interaction in document.interactions:
        digest = response_hash(interaction["response"])
        if interaction.get("response_hash") != digest:
            interaction["response_hash"] = digest
            responses += 1
        request = interaction["request"]
        rules = storage.interaction_rules(interaction)  # a hand edit keeps the rules it had
        if (
            "<redacted" not in canonical_json(request)
            and key_of(request, rules) != interaction["key"]
        ):
            interaction["key"] = key_of(request, rules)
            keys += 1
    return responses, keys
