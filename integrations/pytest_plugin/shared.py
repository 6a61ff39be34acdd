"""Cassettes several tests name (``@pytest.mark.cassette("shared/agent")``): recorded and
judged by all of them together. No pytest import: the summary, the usage record and an
xdist controller (strict mode's end-of-session check) judge from the session's data."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from chaincassette.modes import RecordMode

from .session import CassetteUse


def recording_mode(
    mode: RecordMode, name: str | None, path: Path, options: dict[str, Any]
) -> RecordMode:
    """``once``/``record`` for a cassette several tests name: the first test of the run writes
    it, the others record beside it (``new_episodes``), as if each had its own file, so a
    request an earlier one made gets the answer their replay will get: that recording."""
    if mode not in (RecordMode.ONCE, RecordMode.RECORD) or name is None or not path.exists():
        return mode
    from chaincassette import storage, store

    fmt = storage.detect_format(path, options.get("format"))
    return RecordMode.NEW_EPISODES if store.made_by_this_run(path, fmt) else mode


def rerecord_command(nodeids: Iterable[str]) -> str:
    """``pytest <tests> --cassette-mode={mode}``: one test alone in ``record`` mode would drop
    the calls of the others naming its cassette; a parametrized test is named once."""
    tests = dict.fromkeys(n.split("[", 1)[0] if n.endswith("]") else n for n in nodeids)
    return f"pytest {' '.join(map(shlex.quote, tests))} --cassette-mode={{mode}}"


def unplayed(uses: Iterable[CassetteUse]) -> dict[str, set[int]]:
    """Per cassette, the interactions no test of the run played (each test's unplayed ones,
    intersected: a cassette shared by tests counts once)."""
    found: dict[str, set[int]] = {}
    for use in uses:
        indexes = set(use.unused_indexes)
        found[use.path] = found[use.path] & indexes if use.path in found else indexes
    return found


def never_played(path: str, unused: list[int], total: int, tests: list[str], by: str = "") -> str:
    """Strict mode's problem with interactions of ``path`` never played (by ``tests``)."""
    return (
        f"--cassette-strict: {len(unused)} of {total} interactions in {path} were never "
        f"played{by} (indexes {', '.join(map(str, unused[:20]))}). The program no longer "
        "makes these calls: remove them with `chaincassette prune` (it reads this run's usage "
        f"record), or re-record the cassette: {rerecord_command(tests).format(mode='record')}"
    )


def session_problems(naming: dict[str, list[str]], uses: list[CassetteUse]) -> list[str]:
    """``--cassette-strict`` at the session's end: a problem per cassette several tests name
    (``naming``: path → their node ids) holding interactions none of them played, once every
    one of them ran and passed without a miss (a ``-k`` subset, a failed test: what they
    played is not the whole story). One test is never judged on the others' interactions."""
    problems = []
    for path, tests in sorted(naming.items()):
        used = [use for use in uses if use.path == path]
        if not set(tests) <= {u.nodeid for u in used} or not all(u.clean for u in used):
            continue
        left = sorted(unplayed(used)[path])
        if left:
            by = f" by any of the {len(tests)} tests naming it"
            problems.append(never_played(path, left, used[0].interactions, tests, by))
    return problems
