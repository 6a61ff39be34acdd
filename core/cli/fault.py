"""``chaincassette fault``: turn a recorded interaction into a provider error, by hand.

``--interaction N`` (the index ``chaincassette show`` prints) gets the error as its
response; with ``--insert`` a copy of interaction N answering with the error is put
before it instead, so the first call of that request fails and the next one (a retry,
a fallback's second try) gets the recorded answer. Replay then raises the error where
the program made that call: "what does my agent do when the model rate-limits at turn 3"
without a provider misbehaving on cue.

The result is what chaincassette itself would have written (``verify`` passes: the
response hash is the new response's). The stored trace, the recording run's path, is
dropped: the error sends a replay down another one, so every replay would warn of a
divergence; the next recording of the cassette writes a new trace.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

from .. import storage, transcript
from ..errors import CassetteFormatError
from ..faults import FAULTS, fault


def add_parser(commands: Any) -> None:  # argparse names its subparsers type privately
    parser = commands.add_parser(
        "fault",
        help="make interaction N of a cassette raise a provider error on replay",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("file", help="the cassette file")
    parser.add_argument(
        "--interaction", "-n", type=int, required=True, metavar="N", help="index (from show)"
    )
    parser.add_argument(
        "--error", required=True, choices=sorted(FAULTS), help="which provider error"
    )
    parser.add_argument("--message", help="the error's message (default: the provider's text)")
    parser.add_argument("--type", dest="type_name", metavar="MODULE.CLASS",
                        help="raise this class instead (e.g. anthropic.RateLimitError); an "
                        "error of a call, never a skip, exit or interrupt")  # fmt: skip
    parser.add_argument("--status", type=int, help="HTTP status (default: the error's)")
    parser.add_argument("--retry-after", type=float, help="retry-after header, in seconds")
    parser.add_argument(
        "--insert",
        action="store_true",
        help="insert the error before interaction N (same request) instead of replacing it",
    )


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    fmt = storage.detect_format(path)
    try:
        document = storage.read(path, fmt)
    except CassetteFormatError as exc:
        print(f"chaincassette: {exc}", file=sys.stderr)
        return 1
    if document is None:
        print(f"chaincassette: no cassette at {path}", file=sys.stderr)
        return 2
    count = len(document.interactions)
    if not 0 <= args.interaction < count:
        print(
            f"chaincassette: {path} has {count} interaction{'s' if count != 1 else ''} "
            f"(0 to {count - 1}); there is no interaction {args.interaction}",
            file=sys.stderr,
        )
        return 2
    try:
        error = fault(
            args.error,
            message=args.message,
            type_name=args.type_name,
            status=args.status,
            retry_after=args.retry_after,
        )
    except ValueError as exc:
        print(f"chaincassette: {exc}", file=sys.stderr)
        return 2
    target = document.interactions[args.interaction]
    if args.insert:
        faulty = copy.deepcopy(target)
        document.interactions.insert(args.interaction, faulty)
    else:
        faulty = target
    faulty["response"] = {"error": error}
    faulty["response_hash"] = transcript.response_hash(faulty["response"])  # no hand edit
    faulty["meta"] = {**(faulty.get("meta") or {}), "fault": args.error}
    # The stored trace is the recording run's path, which the error sends a replay off:
    # kept, every replay would warn of a divergence. The next recording writes a new one.
    document.trace = None
    document.trace_digest = None
    storage.write_atomic(path, storage.dumps(document, fmt))
    where = "inserted before" if args.insert else "now raises"
    print(f"{path}: interaction {args.interaction} {where}: {error['type']}: {error['message']}")
    return 0
