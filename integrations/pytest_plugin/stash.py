"""What a test's item carries between the plugin's hooks, and how a failure is traced to a
cassette error. Light (no engine import): every session loads it."""

from __future__ import annotations

from typing import Any

import pytest

from chaincassette.errors import CassetteError, CassetteMiss

CALL_EXCEPTION = pytest.StashKey[BaseException | None]()
CALL_PASSED = pytest.StashKey[bool]()
REFUSAL = pytest.StashKey[str]()
FIXTURE_CASSETTE = pytest.StashKey[Any]()
"""The ``Cassette`` of the test's ``cassette`` fixture."""
OWN_MISSES = pytest.StashKey[list[Exception]]()
"""Misses of the cassettes the test opened itself (heard by the session's miss listener)."""
UNSAVED_BEFORE = pytest.StashKey[set[Any]]()
"""Strict mode: the cassettes holding unsaved recordings when the test began."""
UNUSED_ONLY = pytest.StashKey[bool]()
"""The test failed only because strict mode found interactions it never played: its
usage is still exact, so ``chaincassette prune`` may act on it."""


PER_TEST = (
    CALL_EXCEPTION,
    CALL_PASSED,
    REFUSAL,
    FIXTURE_CASSETTE,
    OWN_MISSES,
    UNSAVED_BEFORE,
    UNUSED_ONLY,
)


def forget(item: pytest.Item, keys: tuple[pytest.StashKey[Any], ...] = PER_TEST) -> None:
    """Drop what the test carried once its reports are made: pytest keeps every item until
    the session ends, and a cassette (its recordings) or an exception (its frames) left in
    an item's stash would stay with it, a few kilobytes to megabytes per test."""
    for key in keys:
        if key in item.stash:
            del item.stash[key]


def raised_by(error: BaseException | None, miss: BaseException) -> bool:
    """Whether ``miss`` is ``error`` or in its chain of causes."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if error is miss:
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def same_problem(reported: BaseException | None, error: CassetteError) -> bool:
    """Whether the test's call already failed with ``error``'s problem (a corrupt file read
    again at teardown must not turn "1 failed" into "1 failed, 1 error")."""
    earlier = cassette_error_in_chain(reported)
    return earlier is not None and type(earlier) is type(error) and str(earlier) == str(error)


def cassette_error_in_chain(error: BaseException | None) -> CassetteError | None:
    """The ``CassetteMiss`` or other cassette error a failure came from, if any (a miss first)."""
    seen: set[int] = set()
    found: CassetteError | None = None
    while error is not None and id(error) not in seen:
        if isinstance(error, CassetteMiss):
            return error
        if isinstance(error, CassetteError) and found is None:
            found = error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return found
