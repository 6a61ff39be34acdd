"""How often the random-token rule fires on real cassettes: its false-positive measurement.

``python benchmarks/secret_rule.py [FILE_OR_DIR ...]`` reads every cassette given (default:
the repository's committed ones, ``git ls-files '*.yaml' '*.json'``), walks every string of
every interaction (requests, responses, metadata) and of the trace, and counts the strings,
the tokens the rule looks at (runs of ``MIN_CHARS`` or more token characters) and the
tokens it calls random, printing each of those. On cassettes that hold no secret, every
token it calls random is a false positive.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from chaincassette import storage
from chaincassette.entropy import MIN_CHARS, random_tokens
from chaincassette.errors import CassetteFormatError

ROOT = Path(__file__).resolve().parent.parent
_CANDIDATE = re.compile(r"[A-Za-z0-9_+/\-]{" + str(MIN_CHARS) + r",}")


def committed() -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files", "*.yaml", "*.json"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    return [ROOT / name for name in names]


def cassettes(args: list[str]) -> list[Path]:
    if not args:
        return committed()
    found: list[Path] = []
    for arg in map(Path, args):
        found.extend(
            sorted(arg.rglob("*.y*ml")) + sorted(arg.rglob("*.json")) if arg.is_dir() else [arg]
        )
    return found


def strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def main(args: list[str]) -> int:
    files = texts = candidates = fired = 0
    for path in cassettes(args):
        try:
            document = storage.read(path, storage.detect_format(path))
        except CassetteFormatError:
            continue  # not a cassette (a config file, a fixture of a broken one)
        if document is None:
            continue
        files += 1
        for text in strings(storage.expanded(document)):
            texts += 1
            candidates += len(_CANDIDATE.findall(text))
            for start, end in random_tokens(text):
                fired += 1
                print(f"fires: {path}: {text[start:end]}")
    rate = fired / candidates if candidates else 0.0
    print(
        f"{files} cassettes, {texts:,} strings, {candidates:,} tokens of {MIN_CHARS}+ characters, "
        f"{fired} called random ({rate:.3%} of the tokens)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
