"""``chaincassette prune``: drop what the last test run shows is dead weight.

Two kinds, both read from the usage record the pytest plugin writes at the end of a
run (``.chaincassette/usage.json``): interactions a cassette's tests never played
(only for cassettes whose tests all passed without a miss, or failed only because
``--cassette-strict`` found those very interactions unplayed, and only if the file has
not changed since; the others are named, so "nothing to prune" is never unexplained), and cassettes no test uses any more (in a module collected in
full by that run, or beside a test module that no longer exists). A folder that held only
cassettes prune removed goes with them (never a ``cassettes`` folder itself, the folder
pruned, or pytest's rootdir).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .. import storage
from ..errors import CassetteFormatError
from ..filelock import FileLock
from . import files


def find_record(start: Path) -> Path | None:
    from chaincassette.integrations.pytest_plugin.usage import USAGE_DIR, USAGE_FILE

    folder = start.resolve()
    if folder.is_file():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        path = candidate / USAGE_DIR / USAGE_FILE
        if path.is_file():
            return path
    return None


def run(args: argparse.Namespace) -> int:
    from chaincassette.integrations.pytest_plugin import usage

    root = Path(args.dir).resolve()
    record_path = Path(args.usage) if args.usage else find_record(root)
    if record_path is None:
        print(
            f"chaincassette prune: no usage record found from {args.dir} upwards; run the test "
            "suite (pytest) first so the chaincassette plugin writes .chaincassette/usage.json",
            file=sys.stderr,
        )
        return 1
    try:
        record = usage.read(record_path)
    except usage.UsageRecordError as error:
        print(f"chaincassette prune: {error}", file=sys.stderr)
        return 1
    verb = "would remove" if args.dry_run else "removed"
    actions = _drop_orphans(root, record, verb, args.dry_run)
    skipped: list[str] = []
    unclean: list[str] = []
    for relative, entry in sorted(record.cassettes.items()):
        path = record.resolve(relative)
        if not path.is_relative_to(root) or not path.exists():
            continue
        if not entry.clean:
            unclean.append(files.display(path))
        if entry.unused:
            actions += _drop_unused(path, entry, verb, args.dry_run, skipped)
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    _report_unclean(unclean)
    if actions == 0:
        print("nothing to prune" + (" (see above)" if unclean else ""))
    elif not args.dry_run:
        print("run the tests again to check, then review and commit the changes")
    return 0


def _drop_orphans(root: Path, record: Any, verb: str, dry_run: bool) -> int:
    """Remove the cassettes no test uses any more; how many."""
    from chaincassette.integrations.pytest_plugin.location import owner_module_exists

    expected = {record.resolve(p) for paths in record.modules.values() for p in paths}
    # the format may come from a cassette_config fixture, unknown before the tests run: a
    # test's cassette in the other format is that test's too
    expected |= {p.with_suffix(s) for p in expected for s in files.SUFFIXES}
    used = {record.resolve(p) for p in record.cassettes}
    complete_dirs = [record.resolve(d) for d in record.modules]
    removed: set[Path] = set()
    for found in files.find(root):
        path = found.resolve()
        if path in expected or path in used:
            continue
        in_complete = any(path.is_relative_to(d) for d in complete_dirs)
        if in_complete or not owner_module_exists(path, record.rootdir, record.cassette_dir):
            why = "no test uses it" if in_complete else "its test module no longer exists"
            print(f"{verb} {files.display(path)} ({why})")
            removed.add(path)
            if not dry_run:
                path.unlink()
    actions = len(removed)
    kept = {root, record.rootdir.resolve(), record.cassette_dir}  # the tops of the layout
    for path in sorted(removed):
        _drop_emptied(path.parent, root, kept, removed, verb, dry_run)
    return actions


def _drop_emptied(
    folder: Path, root: Path, kept: set[Path | None], removed: set[Path], verb: str, dry_run: bool
) -> None:
    """Remove ``folder`` and each folder above it that held only what prune removed
    (``removed``, which gets them too). Never ``root``, one in ``kept`` (pytest's rootdir,
    the configured cassette folder) or one named ``cassettes`` (the default layout's)."""
    while (
        folder.is_relative_to(root)
        and folder not in kept
        and folder.name != "cassettes"
        and folder not in removed
        and all(entry in removed for entry in folder.iterdir())
    ):
        if not dry_run:
            try:
                folder.rmdir()
            except OSError:  # something was written into it since
                return
        print(f"{verb} {files.display(folder)}/ (emptied)")
        removed.add(folder)
        folder = folder.parent


def _drop_unused(path: Path, entry: Any, verb: str, dry_run: bool, skipped: list[str]) -> int:
    """Remove the interactions of ``path`` the last run never played; 1 if there were any."""
    with FileLock(path):  # a process recording into it now saves before or after
        found = _unused_in(path, entry)
        if isinstance(found, str):
            skipped.append(found)
        if not isinstance(found, tuple):
            return 0
        document, drop = found
        kept = [i for n, i in enumerate(document.interactions) if n not in drop]
        count = len(document.interactions) - len(kept)
        print(
            f"{verb} {count} unused interaction{'s' if count != 1 else ''} from {files.display(path)}"
        )
        if not dry_run:
            document.interactions = kept
            storage.write_atomic(path, storage.dumps(document, storage.detect_format(path)))
    return 1


def _report_unclean(unclean: list[str]) -> None:
    if not unclean:
        return
    shown = ", ".join(unclean[:3]) + (f" and {len(unclean) - 3} more" if len(unclean) > 3 else "")
    print(
        f"not checked for unused interactions: {shown}: a test using "
        f"{'it' if len(unclean) == 1 else 'them'} failed, missed or was refused a write in "
        "the last run, so what it played is not the whole story; fix it and run the tests again",
        file=sys.stderr,
    )


def _unused_in(path: Path, entry: Any) -> tuple[storage.CassetteDocument, set[int]] | str | None:
    """The cassette and the indexes the last test run left unused (``entry``: its usage
    record), or why it is skipped (``None``: there is nothing in it)."""
    from chaincassette.integrations.pytest_plugin import usage

    if usage.file_sha256(path) != entry.sha256:
        return f"{files.display(path)}: changed since the last test run; run the tests again"
    try:
        document = storage.read(path, storage.detect_format(path))
    except CassetteFormatError as error:
        return str(error).splitlines()[0]
    if document is None:
        return None
    return document, set(entry.unused)
