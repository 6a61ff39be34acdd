"""Counts in the words of a message, spelled one way in every message (``1 run``, ``2,000 recordings``)."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str = "") -> str:
    """``count`` and ``noun`` in its number (``plural`` where it is not ``noun`` + s)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
