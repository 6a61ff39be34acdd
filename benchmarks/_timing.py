"""Timing helpers shared by the benchmarks: medians of repeated runs, ratios, tables."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TypeVar


def median_seconds(fn: Callable[[], object], *, repeat: int = 7, number: int = 1) -> float:
    """Median wall time of ``number`` calls of ``fn``, over ``repeat`` rounds, per call."""
    fn()  # warm up: imports, caches, lazy loads
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return statistics.median(rounds)


def paired_ratios(rounds: Mapping[str, list[float]], base: str) -> dict[str, float]:
    """Each variant's median, over rounds, of its time over ``base``'s time in the same round
    (the machine's speed drifts between rounds more than between neighbours in one)."""
    return {
        name: statistics.median(v / b for v, b in zip(values, rounds[base], strict=True))
        for name, values in rounds.items()
    }


def fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


K = TypeVar("K")

#: A variant under test: entering it sets the variant up (untimed) and yields the call to time.
Variant = Callable[[], AbstractContextManager[Callable[[], object]]]


def interleaved_medians(
    variants: Mapping[K, Variant], *, repeat: int = 9, number: int = 200, warmup: bool = True
) -> dict[K, float]:
    """Median per-call time of each variant, measured round-robin in one run.

    Each round sets every variant up, warms it with one call (unless ``warmup`` is
    false: for calls that take seconds and warm nothing), times ``number`` calls and
    tears it down again, in a rotated order: load from other processes on a shared
    machine then hits all variants alike, and global patches one variant installs
    (e.g. the provider-boundary wrappers) never tax another.
    """
    names = list(variants)
    rounds: dict[K, list[float]] = {name: [] for name in names}
    for index in range(repeat):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            with variants[name]() as call:
                if warmup:
                    call()
                start = time.perf_counter()
                for _ in range(number):
                    call()
                rounds[name].append((time.perf_counter() - start) / number)
    return {name: statistics.median(times) for name, times in rounds.items()}
