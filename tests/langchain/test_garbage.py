"""A replay leaves nothing for the cyclic garbage collector.

An object in a reference cycle lives until a collection finds it; a cassette in one keeps
its whole loaded document alive that long, and each one that survives a collection is
moved to an older generation, which makes the next full collection (all the objects a
LangGraph program holds) come sooner. Measured on the 20-turn agent of
``benchmarks/bench_growth.py``: about 3 ms of GC per replay, against 0.2 ms for the same
graph run with no cassette. So the engine and the LangChain integration hold no cycles:
a replayed cassette goes when its last user lets go of it.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from lc_programs import run_gather, run_react

from chaincassette import Cassette, use_cassette

PROGRAMS = {"react agent": run_react, "asyncio.gather of chains": run_gather}


@pytest.fixture
def collector_held() -> Iterator[list[object]]:
    """The collector off for the test, what it finds afterwards kept (``DEBUG_SAVEALL``).

    Every object alive when the test starts is held until it ends: an earlier test's cycle
    that something (a pool thread's old context, a plugin's per-test state) lets go of
    during this test is that test's garbage, not this one's."""
    gc.collect()
    gc.disable()
    alive_before = gc.get_objects()
    gc.set_debug(gc.DEBUG_SAVEALL)
    found: list[object] = []
    try:
        yield found
    finally:
        gc.set_debug(0)
        gc.enable()
        gc.garbage.clear()
        del alive_before


def ours(garbage: list[object]) -> list[str]:
    """What the collector found that chaincassette made: its objects and functions."""
    names = []
    for thing in garbage:
        module = getattr(thing, "__module__", None) or type(thing).__module__
        if isinstance(module, str) and module.startswith("chaincassette"):
            names.append(getattr(thing, "__qualname__", type(thing).__qualname__))
    return names


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_replayed_cassette_goes_with_its_last_reference(
    tmp_path: Path, name: str, collector_held: list[object]
) -> None:
    program = PROGRAMS[name]
    path = tmp_path / "program.yaml"
    with use_cassette(path, mode="record"):
        expected = program()
    results = []
    for _ in range(2):
        cassette = Cassette(path, mode="replay")
        with use_cassette(cassette):
            results.append(program())
        assert cassette.stats.replayed == cassette.stats.interactions > 0
        assert cassette.trace_divergence is None
        gone = weakref.ref(cassette)
        del cassette
        assert gone() is None, "a reference cycle holds the cassette"
    assert results == [expected, expected]
    gc.collect()
    assert ours(gc.garbage) == []
