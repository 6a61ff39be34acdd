"""What the trace capture costs in a whole replay of the 20-turn agent (``bench_growth.py``).

One process, the variants interleaved round by round (CPU seconds, ``time.process_time``,
two runs per variant per round, medians of the rounds):

- replay: a fresh ``Cassette`` and ``use_cassette`` around the graph run, as in
  ``bench_growth.py`` (the YAML parsed before in the process);
- no trace capture: the same with ``trace.capturing`` replaced by a block that installs no
  callback handler;
- no-op handler: the handler installed, its ``_start``/``_set``/``link`` doing nothing (so
  LangChain still dispatches every callback to it, and the tree it builds is empty);
- no cassette: the graph run alone.

Run: .venv/bin/python benchmarks/whole_replay_parts.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import bench_growth
from _timing import fmt, table

from chaincassette import Cassette, use_cassette
from chaincassette.integrations.langchain import trace

TURNS = 20


@contextlib.contextmanager
def _no_capture(cassette: Cassette) -> Iterator[None]:
    yield None


def _patched(patches: dict[tuple[Any, str], Any], run: Callable[[], None]) -> Callable[[], None]:
    def variant() -> None:
        saved = {target: getattr(*target) for target in patches}
        for (owner, name), value in patches.items():
            setattr(owner, name, value)
        try:
            run()
        finally:
            for (owner, name), value in saved.items():
                setattr(owner, name, value)

    return variant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp:
        path = bench_growth.record(Path(tmp), TURNS)
        agent = bench_growth.build_agent(TURNS)
        expected = bench_growth.run_agent(agent, TURNS)

        def replay() -> None:
            with use_cassette(Cassette(path, mode="replay")):
                assert bench_growth.run_agent(agent, TURNS) == expected

        handler = trace.CassetteCallbackHandler
        noop = lambda self, *args, **kwargs: None  # noqa: E731
        variants: dict[str, Callable[[], None]] = {
            "no cassette": lambda: bench_growth.run_agent(agent, TURNS),
            "replay": replay,
            "replay, no trace capture": _patched({(trace, "capturing"): _no_capture}, replay),
            "replay, no-op handler": _patched(
                {(handler, "_start"): noop, (handler, "_set"): noop, (handler, "link"): noop},
                replay,
            ),
        }
        for run in variants.values():
            run()
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, run in variants.items():
                start = time.process_time()
                run()
                run()
                times[name].append((time.process_time() - start) / 2)
    medians = {name: statistics.median(values) for name, values in times.items()}
    base, replayed = medians["no cassette"], medians["replay"]
    rows = [
        [
            name,
            fmt(value),
            f"{value / base:.2f}x",
            fmt(replayed - value) if name != "replay" else "",
        ]
        for name, value in medians.items()
    ]
    print(f"## Whole replay of the {TURNS}-turn agent, by part ({rounds} rounds)\n")
    print(table(["variant", "median", "÷ no cassette", "replay minus this"], rows))
    print(f"\nload average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
