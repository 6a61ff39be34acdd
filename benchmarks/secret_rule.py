"""How often the random-token rule fires on real cassettes: its false-positive measurement.

``python benchmarks/secret_rule.py [FILE_OR_DIR ...]`` reads every cassette given (default:
the repository's committed ones, ``git ls-files '*.yaml' '*.json'``) and walks every string
of every interaction and of the trace, as the redactor walks them (the values of opaque
provider fields, ``signature`` and the like, are never looked at): requests, metadata and
the trace, where the rule masks, and responses, where it never applies (a response is
stored as it replays) but is measured too. It counts the strings, the tokens the rule looks
at (runs of ``MIN_CHARS`` or more token characters) and the tokens it calls random,
printing each. On cassettes that hold no secret, every token it calls random is a false
positive.
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
from chaincassette.keyrules import OPAQUE_FIELDS

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
    """The strings of ``value`` the redactor reads (not under an opaque provider field)."""
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in OPAQUE_FIELDS for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def sections(document: storage.CassetteDocument) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"stored": [], "responses": []}
    for interaction in document.interactions:
        found["stored"] += strings(interaction["request"]) + strings(interaction.get("meta"))
        found["responses"] += strings(interaction["response"])
    found["stored"] += strings(document.trace)
    return found


def main(args: list[str]) -> int:
    files = 0
    counts = {name: [0, 0, 0] for name in ("stored", "responses")}  # strings, tokens, fired
    for path in cassettes(args):
        try:
            document = storage.read(path, storage.detect_format(path))
        except CassetteFormatError:
            continue  # not a cassette (a config file, a fixture of a broken one)
        if document is None:
            continue
        files += 1
        for name, texts in sections(document).items():
            for text in texts:
                count = counts[name]
                count[0] += 1
                count[1] += len(_CANDIDATE.findall(text))
                for start, end in random_tokens(text):
                    count[2] += 1
                    print(f"fires ({name}): {path}: {text[start:end]}")
    print(f"{files} cassettes")
    for name, (texts, tokens, fired) in counts.items():
        rate = fired / tokens if tokens else 0.0
        where = "requests, metadata, traces" if name == "stored" else "responses (not masked)"
        print(
            f"  {where}: {texts:,} strings, {tokens:,} tokens of {MIN_CHARS}+ characters, "
            f"{fired} called random ({rate:.3%} of the tokens)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
