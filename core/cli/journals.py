"""``chaincassette journal FILE``: what a process that died left unsaved, and finishing it.

Every recording is journaled the moment it completes (``chaincassette.journal``). A
journal whose process is gone is merged by the next program that opens the cassette; this
command shows it and, with ``--finalize``, writes it into the cassette now, without
calling any model again. A save refused because a response looks like a secret is
finished here too: ``--allow-secret REGEX`` keeps the string (it was an example key), or
``--redact-secrets`` replaces it in the stored response (a replay then shows the redacted
text).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import journal
from ..cassette import Cassette
from ..errors import CassetteError
from . import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    orphans = journal.orphans(path)
    pending = [entry for orphan in orphans for entry in journal.entries(orphan)]
    if not orphans:
        print(f"{path}: no unsaved recordings (no journal left by a process that stopped)")
        return EXIT_OK
    print(
        f"{path}: {len(pending)} unsaved recording{'s' if len(pending) != 1 else ''} in "
        f"{len(orphans)} journal{'s' if len(orphans) != 1 else ''} left by stopped processes"
    )
    if not args.finalize:
        print(f"  to write them into the cassette: chaincassette journal {path} --finalize")
        return EXIT_PROBLEMS
    if not path.parent.is_dir():
        print(f"chaincassette journal: no folder {path.parent}", file=sys.stderr)
        return EXIT_USAGE
    cassette = Cassette(path, mode="new_episodes", allow_secrets=args.allow_secret or ())
    try:
        cassette.load()
        if args.redact_secrets:
            for interaction in cassette.unsaved_interactions():
                interaction.response = cassette.redactor.redact(
                    interaction.response, check_names=False
                )
        written = cassette.save()
    except CassetteError as error:
        print(f"chaincassette journal: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    count = len(pending)
    print(f"  wrote {count} recording{'s' if count != 1 else ''} into {path}" if written else "")
    return EXIT_OK
