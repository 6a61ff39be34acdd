"""What the trace capture costs in a whole replay of the 20-turn agent (``bench_growth.py``).

One process, the variants interleaved round by round (CPU seconds, ``time.process_time``,
two runs per variant per round, medians of the rounds):

- replay: a fresh ``Cassette`` and ``use_cassette`` around the graph run, as in
  ``bench_growth.py`` (the file read before in the process: its document kept);
- no trace capture: the same with ``trace.capturing`` replaced by a block that installs no
  callback handler;
- no-op handler: the handler installed, its ``_start``/``_set``/``link`` doing nothing (so
  LangChain still dispatches every callback to it, and the tree it builds is empty);
- keys as recorded: the cassette's key memo hands back, in call order, what it computed in
  a first replay (an oracle: what the keys cost is the difference);
- canonical messages as recorded: the same for the boundary's canonical messages;
- no cassette: the graph run alone.

Each round runs every variant (the order rotating); the ratio is paired, each round's time
over the same round's no-cassette run, the median over rounds. GC time per run (from
``gc.callbacks``) is measured apart, for the replay and the run with no cassette.

Run: .venv/bin/python benchmarks/whole_replay_parts.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
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
from _timing import fmt, paired_ratios, table

from chaincassette import Cassette, key_memo, use_cassette
from chaincassette.integrations.langchain import boundary, trace

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


class _AsRecorded:
    """Replaces a pure function: records its results in a first run, then hands them back
    in call order (the run is deterministic, so each call gets what it computed)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.results: list[Any] = []
        self.position = 0
        self.recording = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.recording:
            result = self.function(*args, **kwargs)
            self.results.append(result)
            return result
        result = self.results[self.position % len(self.results)]
        self.position += 1
        return result


def _gc_per_run(run: Callable[[], None], runs: int) -> float:
    spent = [0.0, 0.0]

    def watch(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            spent[1] = time.perf_counter()
        else:
            spent[0] += time.perf_counter() - spent[1]

    gc.callbacks.append(watch)
    try:
        for _ in range(runs):
            run()
    finally:
        gc.callbacks.remove(watch)
    return spent[0] / runs


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
        keys = _AsRecorded(key_memo.KeyMemo.keyed)
        keyed = lambda memo, *args, **kwargs: keys(memo, *args, **kwargs)  # noqa: E731
        canonical = _AsRecorded(boundary._canonical_messages)
        _patched({(key_memo.KeyMemo, "keyed"): keyed}, replay)()
        _patched({(boundary, "_canonical_messages"): canonical}, replay)()
        keys.recording = canonical.recording = False
        bare = lambda: bench_growth.run_agent(agent, TURNS)  # noqa: E731
        variants: dict[str, Callable[[], None]] = {
            "no cassette": bare,
            "replay": replay,
            "replay, no trace capture": _patched({(trace, "capturing"): _no_capture}, replay),
            "replay, no-op handler": _patched(
                {(handler, "_start"): noop, (handler, "_set"): noop, (handler, "link"): noop},
                replay,
            ),
            "replay, keys as recorded": _patched({(key_memo.KeyMemo, "keyed"): keyed}, replay),
            "replay, canonical messages as recorded": _patched(
                {(boundary, "_canonical_messages"): canonical}, replay
            ),
        }
        for run in variants.values():
            run()
        times: dict[str, list[float]] = {name: [] for name in variants}
        names = list(variants)
        for index in range(rounds):
            shift = index % len(names)
            for name in names[shift:] + names[:shift]:
                start = time.process_time()
                variants[name]()
                variants[name]()
                times[name].append((time.process_time() - start) / 2)
        collected = {"no cassette": _gc_per_run(bare, 100), "replay": _gc_per_run(replay, 100)}
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratios = paired_ratios(times, "no cassette")
    rows = [
        [
            name,
            fmt(medians[name]),
            f"{ratios[name]:.3f}x",
            f"{ratios['replay'] - ratios[name]:+.3f}x" if name != "replay" else "",
        ]
        for name in variants
    ]
    print(f"## Whole replay of the {TURNS}-turn agent, by part ({rounds} rounds)\n")
    print(table(["variant", "median", "÷ no cassette (paired)", "replay minus this"], rows))
    print("\n| run | GC time per run (100 runs) |\n|---|---|")
    for name, value in collected.items():
        print(f"| {name} | {fmt(value)} |")
    print(f"\nload average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
