"""Errors that name the file, the problem and what to do about it."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any


def describe_os_error(exc: BaseException, where: Path | str, *, named: bool = False) -> str:
    """An ``OSError`` as one clear phrase that names the path (disk full, read-only, …):
    the file the error names, or ``where`` (always, when ``named``)."""
    if not isinstance(exc, OSError):
        return f"{exc} ({where})"
    name = where if named else exc.filename or where
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk is full ({exc.strerror}: {name})"
    if exc.errno == errno.EROFS:
        return f"the file system is read-only ({name})"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"no permission to write ({exc.strerror}: {name})"
    return f"{exc.strerror or exc} ({name})"


class CassetteError(Exception):
    """Base class of every chaincassette error."""


class CassetteFormatError(CassetteError):
    """A cassette file cannot be read: corrupt, hand-broken, unsafe or from a newer version."""

    def __init__(self, path: str | Path, problem: str, *, line: int | None = None, hint: str = ""):
        self.path = Path(path)
        self.problem = problem
        self.line = line
        self.hint = hint or (
            "fix the file by hand, restore it from git (git checkout -- FILE), "
            "or delete it and re-record"
        )
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        super().__init__(f"cannot read cassette {where}: {problem}\n  what to do: {self.hint}")


class CassetteWriteError(CassetteError):
    """A cassette could not be written; the previous file on disk is untouched.
    ``whereabouts`` says where the unwritten recordings are and what to do."""

    def __init__(self, path: str | Path, problem: str, *, whereabouts: str = ""):
        self.path = Path(path)
        self.problem = problem
        self.whereabouts = whereabouts
        where = f"; {whereabouts}" if whereabouts else ""
        left = "the file on disk is unchanged" if self.path.exists() else "no file was written"
        super().__init__(f"cannot write cassette {self.path}: {problem} ({left}){where}")


class CassetteSecretError(CassetteWriteError):
    """A secret survived redaction; nothing was written."""

    def __init__(self, path: str | Path, findings: list[Any], *, aside: Path | None = None):
        self.findings = findings
        self.aside = aside
        lines = "\n".join(f"    - {f.kind} at {f.path}" for f in findings[:10])
        more = f"\n    … and {len(findings) - 10} more" if len(findings) > 10 else ""
        hints = []
        if any(".response" in f.path or f.path.startswith("trace") for f in findings):
            hints.append(
                "a recorded response holds what looks like a credential; responses are stored "
                "exactly as they replay, so they are never redacted. If it is not a real secret "
                "(an example key, a slug), allow it: Cassette(..., allow_secrets=[r'<regex>'])"
            )
            kept = (
                f"set aside in {aside}, with the secret masked"
                if aside is not None
                else "kept in this process's memory"
            )
            hints.append(
                f"nothing is lost: the recordings are {kept}. To store them masked without "
                f"calling the model again: chaincassette journal {path} --finalize (a replay "
                "then shows the masked text); to drop them: --drop; to keep the string (an "
                "example key), allow it and record again"
            )
        if any(".response" not in f.path and not f.path.startswith("trace") for f in findings):
            hints.append(
                "remove the secret from the request, or add a pattern that redacts it: "
                "Cassette(..., redact_patterns=[r'<regex>'])"
            )
        CassetteError.__init__(
            self,
            f"refusing to write cassette {path}: it would contain a secret\n{lines}{more}\n"
            + "\n".join(f"  what to do: {hint}" for hint in hints),
        )
        self.path = Path(path)
        self.problem = "secret detected"


class CassetteMiss(CassetteError):
    """No recording answers a request and the record mode forbids calling the live model.
    Carries the data behind the message (the error's own copies)."""

    def __init__(
        self,
        message: str,
        *,
        path: Path,
        mode: str,
        request: dict[str, Any],
        key: str,
        nearest: dict[str, Any] | None = None,
        diff: list[str] | None = None,
        played: int = 0,
        cause: str = "",
    ) -> None:
        super().__init__(message)
        self.path = path
        self.mode = mode
        self.request = request
        self.key = key
        self.nearest = nearest
        self.diff = diff or []
        self.played = played
        self.cause = cause
        """Why it missed: ``missing`` (no file), ``exhausted``, or a cause from
        ``chaincassette.miss`` (``changed``, ``tool_result``, ``parameter``, ``new_call``,
        ``hand_edited``, ``not_cancelled``); each miss message ends with the hint that
        fixes its cause."""
