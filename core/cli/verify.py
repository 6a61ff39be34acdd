"""``chaincassette verify``: every cassette readable, current, secret-free (and committed, with --strict).

Problems (non-zero exit): a file that does not load (corrupt, wrong or future
version), a secret (also the value of one of this process's secret environment
variables), an interaction whose key no longer matches its stored request or whose
response no longer matches its stored hash (edited by hand; ``chaincassette accept``
takes such an edit as intended), a stored error of a type replay refuses (a test's skip,
an exit), and with ``--strict`` a cassette with uncommitted changes. A version 1 file is
a warning (it has no response hashes), and so are recordings keyed by older key rules
(they replay by them; ``upgrade`` rekeys them). Staleness (recorded with other framework
versions, or long ago) is reported, not failed: it is a reason to re-record, not a
broken build.
"""

from __future__ import annotations

import argparse
import sys
from datetime import date
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import keyrules, statedir, storage, store
from ..canonical import canonical_json, key_of
from ..error_codec import stored_refusal
from ..provenance import library_version
from ..recovery import aside_line
from ..redact import Redactor
from ..transcript import response_hash
from ..wording import counted
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
        problems.extend(_interaction_problems(index, interaction, redactor, loaded))
    warnings.extend(_older_rules(document, loaded))
    if document.trace is not None:
        problems.extend(
            f"secret: {f.kind} at {f.path}"
            for f in redactor.find(document.trace, "trace", check_names=False)
        )
    warnings.extend(_stale_versions(document, installed))
    warnings.extend(_stale_dates(document))
    if not document.interactions:
        warnings.append("empty: no interactions")
    if document.version < storage.FORMAT_VERSION:
        warnings.append(
            f"format version {document.version}: no response hashes, so hand edits go unseen; "
            f"chaincassette upgrade {files.display(loaded.path)} rewrites it as version "
            f"{storage.FORMAT_VERSION}"
        )
    return problems, warnings


def _stale_versions(
    document: storage.CassetteDocument, installed: dict[str, str | None]
) -> list[str]:
    """Frameworks recorded at another minor version than installed: a reason to re-record."""
    warnings = []
    for name, version in sorted(document.recorded_with.items()):
        now = installed.get(name)
        if name != "python" and now is not None and _minor(now) != _minor(version):
            warnings.append(f"stale: recorded with {name} {version}, installed {now}")
    return warnings


def _stale_dates(document: storage.CassetteDocument) -> list[str]:
    """The oldest recording, when older than ``STALE_DAYS`` (an unreadable date is none)."""
    dates = [str((i.get("meta") or {}).get("recorded")) for i in document.interactions]
    dates = [d for d in dates if d and d != "None"]
    if not dates:
        return []
    try:
        age = (date.today() - date.fromisoformat(min(dates))).days
    except ValueError:
        return []
    if age > STALE_DAYS:
        return [f"stale: oldest interaction recorded {min(dates)} ({age} days ago)"]
    return []


def _interaction_problems(
    index: int, interaction: dict[str, Any], redactor: Redactor, loaded: files.Loaded
) -> list[str]:
    """Secrets, hand edits and refused errors of one interaction."""
    assert loaded.document is not None
    where = f"interactions[{index}]"
    findings = list(redactor.find(interaction["request"], f"{where}.request"))
    findings += list(redactor.find(interaction.get("meta") or {}, f"{where}.meta"))
    findings += list(redactor.find(interaction["response"], f"{where}.response", check_names=False))
    problems = [f"secret: {f.kind} at {f.path}" for f in findings]
    problems.extend(_response_problems(index, interaction, loaded.document.version, loaded))
    problems.extend(_error_problems(index, interaction["response"]))
    problems.extend(_key_problems(index, interaction))
    return problems


def _key_problems(index: int, interaction: dict[str, Any]) -> list[str]:
    """A key its stored request does not give by the key rules that keyed it.

    Rules 1 are every key made before rules had versions, some by rules since changed: the
    cassette rekeys such a recording from its stored request when it is asked for it, so
    that is no problem (``chaincassette upgrade`` writes the key); a key of later rules is
    exactly theirs, so a mismatch there is an edit.
    """
    request = interaction["request"]
    rules = storage.interaction_rules(interaction)
    if rules == 1 or "<redacted" in canonical_json(request):
        return []
    if key_of(request, rules) == interaction["key"]:
        return []
    return [
        f"interactions[{index}]: the key does not match the stored request (edited by hand?); "
        "it replays for the old request only: re-record the cassette"
    ]


def _older_rules(document: storage.CassetteDocument, loaded: files.Loaded) -> list[str]:
    """A warning for interactions keyed by older key rules: they replay by them."""
    older = [storage.interaction_rules(i) for i in document.interactions]
    older = [r for r in older if r != keyrules.KEY_RULES_VERSION]
    if not older:
        return []
    count = len(older)
    return [
        f"key rules {min(older)}: {count} interaction{'s' if count != 1 else ''} keyed by "
        f"older key rules than this chaincassette's ({keyrules.KEY_RULES_VERSION}); "
        f"{'they replay' if count != 1 else 'it replays'} by the rules that keyed "
        f"{'them' if count != 1 else 'it'}; chaincassette upgrade "
        f"{files.display(loaded.path)} rekeys what its stored requests allow"
    ]


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
        problems, warnings = check(item, redactor, installed)
        left, aside = unsaved(item.path)
        problems += left + _uncommitted_problems(item.path, uncommitted)
        warnings += aside
        total_problems += len(problems)
        total_warnings += len(warnings)
        if problems or warnings or args.verbose:
            _print_cassette(item.path, problems, warnings)
    total_problems += _report_deleted(paths, uncommitted)
    total_problems += _report_never_saved(root, paths)
    total_warnings += _report_leftovers(root)
    print(
        f"{counted(len(paths), 'cassette')} checked: {counted(total_problems, 'problem')}, "
        f"{counted(total_warnings, 'warning')}"
    )
    return 1 if total_problems else 0


def _uncommitted_problems(path: Path, uncommitted: dict[Path, str]) -> list[str]:
    """What git says is wrong with the file (``--strict``): not committed as it is."""
    state = uncommitted.get(path.resolve())
    return [f"uncommitted: {state} ({UNCOMMITTED_ADVICE.get(state, '')})"] if state else []


def _print_cassette(path: Path, problems: list[str], warnings: list[str]) -> None:
    print(f"{'FAIL' if problems else 'ok  '} {files.display(path)}")
    for line in problems:
        print(f"     problem: {line}")
    for line in warnings:
        print(f"     warning: {line}")


def _report_deleted(paths: list[Path], uncommitted: dict[Path, str]) -> int:
    """Print committed cassettes deleted from the work tree (no file to check): the count."""
    known = {p.resolve() for p in paths}
    deleted = [
        p for p, state in sorted(uncommitted.items()) if p not in known and state == "deleted"
    ]
    for path in deleted:
        print(
            f"FAIL {files.display(path)}\n     problem: uncommitted: deleted (commit the "
            "deletion, or restore it with git checkout -- FILE)"
        )
    return len(deleted)


def _report_never_saved(root: Path, paths: list[Path]) -> int:
    """Print cassettes under ``root`` that have no file but a journal a stopped process left
    (killed before its first save): the count. Their recordings are otherwise unseen."""
    known = {statedir.real_target(p) for p in paths}
    folders = statedir.state_dir() / statedir.CASSETTES
    top = statedir.real_target(root)
    named = [statedir.cassette_of(f) for f in (folders.iterdir() if folders.is_dir() else [])]
    missing = {
        c
        for c in named
        if c is not None and c not in known and c.is_relative_to(top) and not c.exists()
    }
    count = 0
    for cassette in sorted(missing):
        problems, _ = unsaved(cassette)
        if problems:
            count += 1
            _print_cassette(cassette, problems, [])
    return count


def _report_leftovers(root: Path) -> int:
    """Print temporary files an interrupted write left (warnings, not cassettes): the count."""
    leftovers = sorted(root.rglob(".*.tmp")) if root.is_dir() else []
    for leftover in leftovers:
        print(
            f"warn {files.display(leftover)}: a temporary file left by an interrupted write; delete it"
        )
    return len(leftovers)
