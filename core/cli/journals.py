"""``chaincassette journal FILE``: what stopped processes left unsaved, and finishing it.

Every recording is journaled the moment it completes (``chaincassette.journal``). A
journal whose process is gone is applied by the next program that opens the cassette, as
its run meant; one that must not be merged is set aside (``chaincassette.recovery``).
This command shows both and, with ``--finalize``, writes them into the cassette now,
without calling any model again (the pending ones as an open would, the set-aside ones
after what the cassette holds); ``--drop`` removes them. A string that only looks like a
secret is kept with ``--allow-secret REGEX``; ``--redact-secrets`` stores secrets found in
what is written masked (a replay then shows the masked text).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from .. import journal, store
from ..cassette import Cassette
from ..errors import CassetteError
from ..recovery import aside_line
from ..wording import counted
from . import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    found = store.journals(path)
    pending = found.pending_count
    aside = sum(len(j.entries) for j in found.aside)
    if not pending and not aside:
        print(f"{path}: no unsaved recordings (no journal left by a process that stopped)")
        return EXIT_OK
    _show(path, found)
    if args.drop:
        journal.remove([j.path for j in found.pending + found.aside])
        print(f"  dropped {counted(pending + aside, 'recording')}")
        return EXIT_OK
    if not args.finalize:
        print(
            f"  to write them into the cassette: chaincassette journal {path} --finalize; "
            "to drop them: --drop"
        )
        return EXIT_PROBLEMS
    if not path.parent.is_dir():
        print(f"chaincassette journal: no folder {path.parent}", file=sys.stderr)
        return EXIT_USAGE
    return _finalize(path, args)


def _show(path: Path, found: store.Journals) -> None:
    if found.pending:
        print(
            f"{path}: {counted(found.pending_count, 'unsaved recording')} in "
            f"{len(found.pending)} journal{'s' if len(found.pending) != 1 else ''} left by "
            "stopped processes (the next open applies them)"
        )
    for item in found.aside:
        line = aside_line(str(path), item, item.aside or {}, item.path)
        print(line.removeprefix("chaincassette: "))


def _finalize(path: Path, args: argparse.Namespace) -> int:
    cassette = Cassette(path, mode="new_episodes", allow_secrets=args.allow_secret or ())
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cassette.load()  # applies the pending journals, as any open does
        for warning in caught:
            print(f"  {str(warning.message).removeprefix('chaincassette: ')}")
        written = cassette.adopt_set_aside(redact_secrets=args.redact_secrets)
    except CassetteError as error:
        print(f"chaincassette journal: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    if written:
        print(f"  wrote {counted(written, 'recording')} set aside into {path}")
    return EXIT_OK
