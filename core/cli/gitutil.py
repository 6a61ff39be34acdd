"""The little git the CLI needs: the committed version of a file and uncommitted changes."""

from __future__ import annotations

import subprocess
from pathlib import Path


class GitError(Exception):
    """git is missing or the path is not in a repository."""


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise GitError("git is not installed") from None


def toplevel(path: Path) -> Path:
    folder = path if path.is_dir() else path.parent
    result = _git(["rev-parse", "--show-toplevel"], folder.resolve())
    if result.returncode != 0:
        raise GitError(f"{path} is not inside a git repository")
    return Path(result.stdout.decode().strip()).resolve()


def committed(path: Path, revision: str = "HEAD") -> bytes | None:
    """The file as committed at ``revision``; ``None`` when it is not in that commit."""
    top = toplevel(path)
    relative = path.resolve().relative_to(top).as_posix()
    result = _git(["show", f"{revision}:{relative}"], top)
    return result.stdout if result.returncode == 0 else None


def uncommitted(paths: list[Path], root: Path) -> dict[Path, str]:
    """Each path with uncommitted changes (staged, unstaged or untracked) → its git status."""
    if not paths:
        return {}
    top = toplevel(root)
    result = _git(
        ["status", "--porcelain", "--untracked-files=all", "--", str(root.resolve())], top
    )
    if result.returncode != 0:
        raise GitError(result.stderr.decode().strip() or "git status failed")
    wanted = {p.resolve() for p in paths}
    changed = {}
    for line in result.stdout.decode().splitlines():
        status, name = line[:2], line[3:]
        if " -> " in name:
            name = name.split(" -> ", 1)[1]
        path = (top / name.strip('"')).resolve()
        if path in wanted or path.suffix in (".yaml", ".yml", ".json"):
            changed[path] = {"??": "untracked", " D": "deleted", "D ": "deleted"}.get(
                status, "modified"
            )
    return changed
