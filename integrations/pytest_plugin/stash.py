"""What a test's item carries between the plugin's hooks, and how a failure is traced to a
cassette error. Light (no engine import): every session loads it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
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
ATTEMPT = pytest.StashKey[list[tuple[Callable[[], Any], Any]]]()
"""The cassettes that existed when this attempt of the test began and those it opened (the
fixture's, its own), each with its ``replays()`` then: a rerun (pytest-rerunfailures) first
takes back what they recorded and replayed since. One that may not record is held by a weak
reference (it has nothing to take back from its file: only an object that outlives the
test needs it)."""

PER_ATTEMPT = (CALL_EXCEPTION, CALL_PASSED, REFUSAL, FIXTURE_CASSETTE, OWN_MISSES, UNUSED_ONLY)
PER_TEST = (*PER_ATTEMPT, UNSAVED_BEFORE, ATTEMPT)


def forget(item: pytest.Item, keys: tuple[pytest.StashKey[Any], ...] = PER_TEST) -> None:
    """Drop what the test carried once its reports are made: pytest keeps every item until
    the session ends, and a cassette (its recordings) or an exception (its frames) left in
    an item's stash would stay with it, a few kilobytes to megabytes per test."""
    for key in keys:
        if key in item.stash:
            del item.stash[key]


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    """``error`` and its causes (or contexts), each once."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def raised_by(error: BaseException | None, miss: BaseException) -> bool:
    """Whether ``miss`` is ``error`` or in its chain of causes."""
    return any(found is miss for found in _chain(error))


def same_problem(reported: BaseException | None, error: CassetteError) -> bool:
    """Whether the test's call already failed with ``error``'s problem (a corrupt file read
    again at teardown must not turn "1 failed" into "1 failed, 1 error")."""
    earlier = cassette_error_in_chain(reported)
    return earlier is not None and type(earlier) is type(error) and str(earlier) == str(error)


def cassette_error_in_chain(error: BaseException | None) -> CassetteError | None:
    """The ``CassetteMiss`` or other cassette error a failure came from, if any (a miss first)."""
    found = [e for e in _chain(error) if isinstance(e, CassetteError)]
    return next((e for e in found if isinstance(e, CassetteMiss)), found[0] if found else None)
