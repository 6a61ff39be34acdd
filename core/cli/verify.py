"""``chaincassette verify``: every cassette readable, current, secret-free (and committed, with --strict).

Problems (non-zero exit): a file that does not load (corrupt, wrong or future
version), a secret (also the value of one of this process's secret environment
variables), an interaction whose key no longer matches its stored request or whose
response no longer matches its stored hash (edited by hand; ``chaincassette accept``
takes such an edit as intended), a stored error of a type replay refuses (a test's skip,
an exit), and with ``--strict`` a cassette with uncommitted changes. A version 1 file is a warning (it has no response hashes). Staleness
(recorded with other framework versions, or long ago) is reported, not failed: it is
a reason to re-record, not a broken build.
"""

from __future__ import annotations

import argparse
import sys
from datetime import date
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import storage, store
from ..canonical import canonical_json, key_of
from ..error_codec import stored_refusal
from ..provenance import library_version
from ..recovery import aside_line
from ..redact import Redactor
from ..transcript import response_hash
from . import files, gitutil

STALE_DAYS = 180
UNCOMMITTED_ADVICE = {
    "untracked": "a new cassette git does not know yet: review and commit it, or delete it "
    "if no test needs it",
    "modified": "review and commit it, or restore it with git checkout -- FILE",
}


def check(
    loaded: files.Loaded, redactor: Redactor, installed: dict[str, str | None]
) -> tuple[list[str], list[str]]:
    """(problems, warnings) for one cassette."""
    if loaded.document is None:
        return [str(loaded.error).splitlines()[0]], []
    problems: list[str] = []
    warnings: list[str] = []
    document = loaded.document
    for index, interaction in enumerate(document.interactions):
        where = f"interactions[{index}]"
        findings = list(redactor.find(interaction["request"], f"{where}.request"))
        findings += list(redactor.find(interaction.get("meta") or {}, f"{where}.meta"))
        findings += list(
            redactor.find(interaction["response"], f"{where}.response", check_names=False)
        )
        problems.extend(f"secret: {f.kind} at {f.path}" for f in findings)
        problems.extend(_response_problems(index, interaction, document.version, loaded))
        problems.extend(_error_problems(index, interaction["response"]))
        request_text = canonical_json(interaction["request"])
        if "<redacted" not in request_text and key_of(interaction["request"]) != interaction["key"]:
            problems.append(
                f"{where}: the key does not match the stored request (edited by hand?); "
                "it replays for the old request only: re-record the cassette"
            )
    if document.trace is not None:
        problems.extend(
            f"secret: {f.kind} at {f.path}"
            for f in redactor.find(document.trace, "trace", check_names=False)
        )
    for name, version in sorted(document.recorded_with.items()):
        if name == "python":
            continue
        now = installed.get(name)
        if now is not None and _minor(now) != _minor(version):
            warnings.append(f"stale: recorded with {name} {version}, installed {now}")
    dates = [str((i.get("meta") or {}).get("recorded")) for i in document.interactions]
    dates = [d for d in dates if d and d != "None"]
    if dates:
        try:
            age = (date.today() - date.fromisoformat(min(dates))).days
        except ValueError:
            age = 0
        if age > STALE_DAYS:
            warnings.append(f"stale: oldest interaction recorded {min(dates)} ({age} days ago)")
    if not document.interactions:
        warnings.append("empty: no interactions")
    if document.version < storage.FORMAT_VERSION:
        warnings.append(
            f"format version {document.version}: no response hashes, so hand edits go unseen; "
            f"chaincassette upgrade {files.display(loaded.path)} rewrites it as version "
            f"{storage.FORMAT_VERSION}"
        )
    return problems, warnings


def unsaved(path: Path) -> tuple[list[str], list[str]]:
    """(problems, warnings) for what stopped processes left of ``path`` in the state folder:
    recordings the next open applies (a problem: the file is not what a replay serves), and
    journals set aside (a warning each: what, why, and what to do)."""
    found = store.journals(path)
    problems = []
    count = found.pending_count
    if count:
        runs = sorted({f"{j.run} ({j.mode})" for j in found.pending})
        problems.append(
            f"unsaved: {count} recording{'s' if count != 1 else ''} left in a journal by a "
            f"process that stopped before saving (run {', '.join(runs)}); opening the cassette "
            "applies them as that run meant (a record run's replace what was older), or to "
            f"write them now: chaincassette journal {files.display(path)} --finalize"
        )
    warnings = [
        aside_line(files.display(path), j, j.aside or {}, j.path).removeprefix(
            f"chaincassette: {files.display(path)}: "
        )
        for j in found.aside
    ]
    return problems, warnings


def _response_problems(
    index: int, interaction: dict[str, Any], version: int, loaded: files.Loaded
) -> list[str]:
    """A response edited or written by hand: its stored hash is wrong or missing."""
    if version < 2:  # version 1 stored no hashes (the loader fills them in from the file)
        return []
    stored = interaction.get("response_hash")
    accept = f"if that is intended, accept it: chaincassette accept {files.display(loaded.path)}"
    if stored is None:
        return [
            f"interactions[{index}]: the response has no response_hash (written by hand?); {accept}"
        ]
    if stored != response_hash(interaction["response"]):
        return [
            f"interactions[{index}]: the response was edited by hand (it no longer matches its "
            f"response_hash); it replays as edited. Re-record the cassette, or {accept}"
        ]
    return []


def _error_problems(index: int, response: Any) -> list[str]:
    """A stored error of a type a cassette may not raise (a skip, an exit): replay refuses it."""
    error = response.get("error") if isinstance(response, dict) else None
    if not isinstance(error, dict):
        return []
    why = stored_refusal(error)
    if why is None:
        return []
    return [
        f"interactions[{index}]: the response raises {error.get('type')!r}, which replay "
        f"refuses ({why}); make it a provider error: chaincassette fault FILE -n {index} "
        "--error rate_limit"
    ]


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def installed_versions(names: set[str]) -> dict[str, str | None]:
    versions: dict[str, str | None] = {"chaincassette": library_version()}
    for name in names - {"chaincassette", "python"}:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def report(
    item: files.Loaded,
    redactor: Redactor,
    installed: dict[str, str | None],
    uncommitted: dict[Path, str],
    verbose: bool,
) -> tuple[int, int]:
    """Print what is wrong with one cassette; returns (problems, warnings)."""
    problems, warnings = check(item, redactor, installed)
    left, aside = unsaved(item.path)
    problems += left
    warnings += aside
    state = uncommitted.get(item.path.resolve())
    if state:
        problems.append(f"uncommitted: {state} ({UNCOMMITTED_ADVICE.get(state, '')})")
    if problems or warnings or verbose:
        print(f"{'FAIL' if problems else 'ok  '} {files.display(item.path)}")
        for line in problems:
            print(f"     problem: {line}")
        for line in warnings:
            print(f"     warning: {line}")
    return len(problems), len(warnings)


def run(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    paths = list(files.find(root))
    loaded = [files.load(p) for p in paths]
    names = {n for item in loaded if item.document for n in item.document.recorded_with}
    installed = installed_versions(names)
    redactor = Redactor()
    uncommitted: dict[Path, str] = {}
    if args.strict:
        try:
            uncommitted = gitutil.uncommitted(paths, root)
        except gitutil.GitError as error:
            print(f"chaincassette verify --strict: {error}", file=sys.stderr)
            return 2
    total_problems = total_warnings = 0
    for item in loaded:
        problems, warnings = report(item, redactor, installed, uncommitted, args.verbose)
        total_problems += problems
        total_warnings += warnings
    known = {p.resolve() for p in paths}
    for path, state in sorted(uncommitted.items()):
        if path not in known and state == "deleted":
            total_problems += 1
            print(
                f"FAIL {files.display(path)}\n     problem: uncommitted: deleted (commit the "
                "deletion, or restore it with git checkout -- FILE)"
            )
    for leftover in sorted(root.rglob(".*.tmp")) if root.is_dir() else []:
        total_warnings += 1
        print(
            f"warn {files.display(leftover)}: a temporary file left by an interrupted write; delete it"
        )
    print(
        f"{len(paths)} cassette{'s' if len(paths) != 1 else ''} checked: "
        f"{total_problems} problem{'s' if total_problems != 1 else ''}, "
        f"{total_warnings} warning{'s' if total_warnings != 1 else ''}"
    )
    return 1 if total_problems else 0
