"""A recorded response that does not decode is a broken cassette, and is reported as one.

A response edited by hand, or written by something else, would fail deep inside a
framework's validator with a bare ``KeyError`` or ``ValidationError``; ``decoded`` turns
that into ``CassetteFormatError`` naming the file and the interaction to restore or re-record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .errors import CassetteError, CassetteFormatError

T = TypeVar("T")


class _Recordings(Protocol):
    path: Path

    @property
    def interactions(self) -> Sequence[Any]: ...


class Replayed(Protocol):
    """What ``decoded`` asks of a call (``chaincassette.Call`` is one): which recording it
    replays, and from which cassette."""

    key: str
    occurrence: int

    @property
    def cassette(self) -> _Recordings: ...


#: What a decoder raises on data of the wrong shape (pydantic's ``ValidationError``,
#: ``json.JSONDecodeError`` and ``binascii.Error`` are ``ValueError``s; ``KeyError`` and
#: ``IndexError`` are ``LookupError``s).
MALFORMED: tuple[type[Exception], ...] = (ValueError, TypeError, LookupError, AttributeError)

_DETAIL_CHARS = 300


def decoded(call: Replayed, decode: Callable[..., T], *args: Any) -> T:
    """``decode(*args)`` for the recorded answer of ``call``; a failure of the data's shape
    raises ``CassetteFormatError`` naming the file and the interaction instead."""
    try:
        return decode(*args)
    except CassetteError:
        raise
    except MALFORMED as error:
        raise malformed(call, error) from error


def malformed(call: Replayed, error: BaseException) -> CassetteFormatError:
    """The error for a recorded response of ``call`` that ``error`` kept from decoding."""
    cassette = call.cassette
    index = interaction_index(call)
    which = f"interaction {index}" if index is not None else "an interaction"
    detail = f"{type(error).__name__}: {error}".replace("\n", " ")
    if len(detail) > _DETAIL_CHARS:
        detail = detail[: _DETAIL_CHARS - 1] + "…"
    return CassetteFormatError(
        cassette.path,
        f"{which} (key {call.key[:12]}) has a response that does not decode: {detail}",
        hint="the response was edited by hand or written by another tool; restore the file "
        "from git (git checkout -- FILE), or re-record it (mode='record')",
    )


def interaction_index(call: Replayed) -> int | None:
    """The index in its file of the interaction ``call`` replays (only asked for errors:
    it copies the cassette's interactions)."""
    positions = [n for n, x in enumerate(call.cassette.interactions) if x.key == call.key]
    if not positions:
        return None
    return positions[min(call.occurrence, len(positions)) - 1]
