"""The ``chaincassette`` command: review cassettes like code, and record or replay whole programs.

Standard library and the engine only: no framework is imported here (``run`` starts
the program in its own interpreter, where the integrations load). Exit status: 0
when all is well, 1 when the command found problems or differences, 2 for a usage
error, so a CI log and a shell script can both tell what happened.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from ..packages import adopt

adopt(__name__)  # its submodules come from sys.modules (chaincassette.packages)

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2

EPILOG = """examples:
  chaincassette ls tests/
  chaincassette show tests/cassettes/test_agent/test_weather_agent.yaml
  chaincassette diff tests/cassettes/test_agent/test_weather_agent.yaml  (against git HEAD)
  chaincassette verify --strict tests/
  chaincassette accept tests/cassettes/test_agent/test_fault.yaml   (after editing a response)
  chaincassette upgrade tests/                 (rewrite cassettes in the current format and key rules)
  chaincassette prune --dry-run
  chaincassette fault tests/cassettes/test_agent/test_weather_agent.yaml --interaction 1 --error rate_limit
  chaincassette run --record bug.yaml -- python my_agent.py "What is Docker?"
  chaincassette run --replay bug.yaml -- python my_agent.py "What is Docker?"
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chaincassette",
        description="Review, check and prune LLM cassettes; record or replay a whole Python program.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"chaincassette {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    ls = commands.add_parser("ls", help="list cassettes: interactions, models, tokens, size, date")
    ls.add_argument("dir", nargs="?", default=".", help="folder (or file) to search (default: .)")

    show = commands.add_parser("show", help="print a cassette as a readable transcript")
    show.add_argument("file", help="the cassette file")
    show.add_argument("--json", action="store_true", help="print the cassette as JSON instead")
    show.add_argument(
        "--key",
        nargs="?",
        type=int,
        const=-1,
        metavar="N",
        help="for interaction N (default: every one), which stored fields are in its key "
        "and which the key rules leave out, and why",
    )

    diff = commands.add_parser(
        "diff",
        help="compare two cassettes, or a cassette with its committed version",
        description="What changed in meaning: added, removed and changed interactions, by "
        "message and answer, and the agent steps that changed. With one FILE, compare it with "
        "the version committed in git. Exit 0 when the meaning is the same, 1 when it differs, "
        "2 on error.",
    )
    diff.add_argument("old", metavar="OLD|FILE")
    diff.add_argument("new", metavar="NEW", nargs="?", default=None)
    diff.add_argument(
        "--rev", default="HEAD", help="git revision to compare FILE with (default: HEAD)"
    )
    diff.add_argument(
        "--all",
        action="store_true",
        help="also list differences in provider ids, fingerprints, usage and timestamps",
    )

    verify = commands.add_parser(
        "verify",
        help="check format, version, secrets and staleness (exit 1 on any problem)",
        description="Check every cassette under DIR: it loads (format, version), holds no secret, "
        "its keys match its requests; staleness is reported. Exit 1 on any problem.",
    )
    verify.add_argument(
        "dir", nargs="?", default=".", help="folder (or file) to check (default: .)"
    )
    verify.add_argument(
        "--strict", action="store_true", help="also fail on cassettes with uncommitted git changes"
    )
    verify.add_argument(
        "-v", "--verbose", action="store_true", help="list cassettes without findings too"
    )

    accept = commands.add_parser(
        "accept",
        help="accept responses (and requests) edited or written by hand, so verify passes",
        description="Store the current hash of every response, and the current key of every "
        "request edited by hand, in each FILE (rewritten in the current format).",
    )
    accept.add_argument("files", nargs="+", metavar="FILE", help="cassette file(s)")

    upgrade = commands.add_parser(
        "upgrade",
        help="rewrite every cassette under DIR in the current format and key rules",
        description="Rewrite each cassette under DIR in the current file format, in place, "
        "keyed by the current key rules where a stored request allows (the others keep the "
        "key rules that keyed them, and replay by them): the same interactions and responses. "
        "Running it twice changes nothing.",
    )
    upgrade.add_argument(
        "dir", nargs="?", default=".", help="folder (or file) to upgrade (default: .)"
    )
    upgrade.add_argument(
        "--dry-run", action="store_true", help="list what would be rewritten, change nothing"
    )

    prune = commands.add_parser(
        "prune",
        help="remove interactions and cassettes the last test run did not use",
        description="Reads .chaincassette/usage.json, written by the pytest plugin at the end of "
        "a run, and removes interactions that run never played and cassettes no test uses.",
    )
    prune.add_argument(
        "dir", nargs="?", default=".", help="only prune under this folder (default: .)"
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="list what would be removed, change nothing"
    )
    prune.add_argument(
        "--usage", metavar="FILE", help="the usage record (default: found from DIR upwards)"
    )

    journals = commands.add_parser(
        "journal",
        help="show, write into the cassette, or drop recordings a stopped process left unsaved",
        description="Recordings are journaled as they complete. A process killed before it "
        "saved leaves them in its journal; the next program that opens the cassette applies "
        "them as that run meant (a record run's replace what was older). A journal that must "
        "not be merged (the cassette was deleted or changed since, a later record run replaces "
        "it, a save refused it for a secret) is set aside, masked if it held a secret. This "
        "shows both (exit 1 if any); --finalize writes them into the cassette without calling "
        "a model again (set-aside ones after what it holds); --drop removes them.",
    )
    journals.add_argument("file", help="the cassette file")
    journals.add_argument("--finalize", action="store_true", help="write them into the cassette")
    journals.add_argument("--drop", action="store_true", help="remove them, unsaved")
    journals.add_argument(
        "--allow-secret",
        action="append",
        metavar="REGEX",
        help="with --finalize: a secret-looking string to keep as is (an example key)",
    )
    journals.add_argument(
        "--redact-secrets",
        action="store_true",
        help="with --finalize: replace secret-looking strings in the stored responses",
    )
    from .fault import add_parser as add_fault

    add_fault(commands)

    run = commands.add_parser(
        "run",
        help="record or replay a whole Python program: run --record NAME -- python app.py ...",
        description="Run an unmodified Python program inside a cassette from its first import. "
        "--record calls the live models and writes the cassette; --replay serves every call from "
        "it (no API key, no network) and exits non-zero if the program asked anything new.",
        usage="chaincassette run (--record NAME | --replay FILE) [--mode MODE] [--quiet] -- "
        "COMMAND...",
    )
    run.add_argument(
        "--record", metavar="NAME", help="cassette to write (.yaml added when no suffix)"
    )
    run.add_argument("--replay", metavar="FILE", help="cassette to replay")
    run.add_argument(
        "--mode",
        metavar="MODE",
        help="with --record: record (default, from scratch), new_episodes (keep what matches, "
        "record what is new) or once (record only if the cassette does not exist)",
    )
    run.add_argument("--quiet", action="store_true", help="no summary line on stderr")
    run.add_argument("command", nargs=argparse.REMAINDER, help="the program, after --")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script and of ``python -m chaincassette``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    if args.command == "ls":
        from .listing import run as handler
    elif args.command == "show":
        from .show import run as handler
    elif args.command == "diff":
        from .compare import run as handler
    elif args.command == "verify":
        from .verify import run as handler
    elif args.command == "prune":
        from .prune import run as handler
    elif args.command == "journal":
        from .journals import run as handler
    elif args.command == "accept":
        from .rewrite import run_accept as handler
    elif args.command == "upgrade":
        from .rewrite import run_upgrade as handler
    elif args.command == "fault":
        from .fault import run as handler
    else:
        from .runner import run as handler
    try:
        return handler(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `chaincassette show x | head`
        sys.stderr.close()
        return EXIT_OK


__all__ = ["EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE", "build_parser", "main"]
