"""The usage record: what the last test run played, for ``chaincassette prune``.

``<rootdir>/.chaincassette/usage.json``, with paths relative to the rootdir so it reads the
same on every machine. Conservative: interactions count as unused only in cassettes whose
tests all passed without a miss, a cassette as orphaned only in a fully collected module,
and each carries its sha256, so prune leaves alone a file that changed since.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .session import SessionState
from .shared import unplayed

USAGE_VERSION = 1
USAGE_DIR = ".chaincassette"
USAGE_FILE = "usage.json"


def usage_path(rootdir: Path) -> Path:
    return rootdir / USAGE_DIR / USAGE_FILE


def file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


@dataclass
class CassetteUsage:
    """One cassette in the record."""

    tests: list[str] = field(default_factory=list)
    clean: bool = True
    unused: list[int] = field(default_factory=list)
    sha256: str | None = None


@dataclass
class UsageRecord:
    rootdir: Path
    cassette_dir: Path | None = None
    cassettes: dict[str, CassetteUsage] = field(default_factory=dict)
    """By path relative to rootdir."""
    modules: dict[str, list[str]] = field(default_factory=dict)
    """Fully collected test modules: cassette folder → cassettes their tests use."""

    def resolve(self, relative: str) -> Path:
        return (self.rootdir / relative).resolve()


def build(state: SessionState, rootdir: Path, cassette_dir: Path | None) -> UsageRecord:
    record = UsageRecord(rootdir=rootdir, cassette_dir=cassette_dir)
    for use in state.uses:
        entry = record.cassettes.setdefault(use.path, CassetteUsage())
        entry.tests.append(use.nodeid)
        entry.clean = entry.clean and use.clean
    left = unplayed(state.uses)
    for relative, entry in record.cassettes.items():
        elsewhere = state.unjudged.get(relative)
        entry.sha256 = file_sha256(record.resolve(relative))
        entry.tests = sorted({*entry.tests, *(elsewhere or [])})  # still known next run
        entry.unused = sorted(left[relative]) if entry.clean and elsewhere is None else []
    record.modules = {k: sorted(v) for k, v in sorted(state.expected.items())}
    return record


def _portable(path: Path, rootdir: Path) -> str:
    """``path`` relative to ``rootdir`` (POSIX) when inside it, else absolute."""
    try:
        return path.relative_to(rootdir).as_posix() or "."
    except ValueError:
        return str(path)


def to_plain(record: UsageRecord) -> dict[str, Any]:
    return {
        "version": USAGE_VERSION,
        "cassette_dir": _portable(record.cassette_dir, record.rootdir)
        if record.cassette_dir
        else None,
        "cassettes": {path: asdict(e) for path, e in sorted(record.cassettes.items())},
        "modules": record.modules,
    }


def write(record: UsageRecord) -> Path:
    """Replace the record atomically (a crash leaves the previous one); an unchanged record
    is left alone. The file gets ordinary permissions (0o666 minus the umask)."""
    path = usage_path(record.rootdir)
    text = json.dumps(to_plain(record), indent=1, sort_keys=True) + "\n"
    with contextlib.suppress(OSError):
        if path.read_text(encoding="utf-8") == text:
            return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".usage.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def used_elsewhere(rootdir: Path, collected: set[str]) -> dict[str, list[str]]:
    """Per cassette of the last run's record, its tests whose module exists but is not
    one this run ``collected`` (node id paths): they may use it in this run's stead."""
    try:
        record = read(usage_path(rootdir))
    except UsageRecordError:
        return {}
    found: dict[str, list[str]] = {}
    for path, entry in record.cassettes.items():
        for test in entry.tests:
            module = test.split("::")[0]
            if module not in collected and (rootdir / module).is_file():
                found.setdefault(path, []).append(test)
    return found


class UsageRecordError(Exception):
    """The usage record is missing or unreadable."""


def read(path: Path) -> UsageRecord:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageRecordError(
            f"no usage record at {path}: run the test suite once (pytest) so the chaincassette "
            "plugin can write it"
        ) from None
    except (OSError, ValueError) as exc:
        raise UsageRecordError(f"cannot read the usage record {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != USAGE_VERSION:
        raise UsageRecordError(f"{path} is not a usage record this chaincassette understands")
    # the record lives in <rootdir>/.chaincassette/; records before 0.1 stored it absolute
    rootdir = Path(data.get("rootdir") or path.resolve().parent.parent)
    cassette_dir = data.get("cassette_dir")
    return UsageRecord(
        rootdir=rootdir,
        cassette_dir=(rootdir / cassette_dir).resolve() if cassette_dir else None,
        cassettes={
            p: CassetteUsage(
                tests=list(e.get("tests", [])),
                clean=bool(e.get("clean")),
                unused=[int(i) for i in e.get("unused", [])],
                sha256=e.get("sha256"),
            )
            for p, e in (data.get("cassettes") or {}).items()
        },
        modules={k: list(v) for k, v in (data.get("modules") or {}).items()},
    )
