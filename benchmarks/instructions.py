"""Instructions per whole replay of the 20-turn agent (``bench_growth.py``), counted by callgrind.

Wall-clock ratios on a shared machine move by ±15% between minutes; an instruction count
does not (±0.5%, from hash seeds and random IDs), so it shows what a change saves even
when timings cannot. It counts work, not time: cache misses and system calls are not in
it, so the figure of record stays ``bench_growth.py``'s timed ratio.

Each variant runs in its own process under ``valgrind --tool=callgrind`` with
instrumentation off until the measured runs (a small helper, compiled here, switches it
on and off through callgrind's client requests), after two warm runs:

- no cassette: the graph run on the scripted provider;
- replay: a fresh ``Cassette`` and ``use_cassette`` around the graph run (read the YAML
  file, keys, decode, run, the trace compared); a process keeps nothing between cassettes,
  so this is what a fresh CI process meets;
- replay, no trace capture: the same with ``trace.capturing`` installing no handler;
- replay, trace handler doing nothing: the handler installed (LangChain dispatches every
  event to it) but building no node;
- load: ``Cassette(path).load()`` alone (read, parse, validate, rebuild the requests);
- keys of the run's requests: the 20 requests of a replayed run keyed by a fresh
  ``RequestKeys`` (what a cassette pays for its keys).

Run: .venv/bin/python benchmarks/instructions.py [--runs 4]
Needs valgrind and a C compiler (``cc``); about a minute per variant.
The replay variants' differences are what each part costs.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import bench_growth
from _timing import table

TURNS = 20
VARIANTS = (
    "no cassette",
    "replay",
    "replay, no trace capture",
    "replay, trace handler doing nothing",
    "load",
    "keys of the run's requests",
)
HELPER = """
#include <valgrind/callgrind.h>
void measure_start(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_ZERO_STATS; }
void measure_stop(void) { CALLGRIND_DUMP_STATS; CALLGRIND_STOP_INSTRUMENTATION; }
"""


def child(variant: str, runs: int, cassette: Path, helper: Path) -> None:
    from chaincassette import Cassette, request_keys, use_cassette
    from chaincassette.integrations.langchain import trace

    agent = bench_growth.build_agent(TURNS)
    expected = bench_growth.run_agent(agent, TURNS)

    def replay() -> None:
        with use_cassette(Cassette(cassette, mode="replay")):
            assert bench_growth.run_agent(agent, TURNS) == expected

    if variant == "replay, no trace capture":
        trace.capturing = _capturing_nothing
    if variant == "replay, trace handler doing nothing":
        handler = trace.CassetteCallbackHandler
        handler.start_run = handler._set = handler.link = _nothing

    run = {
        "no cassette": lambda: bench_growth.run_agent(agent, TURNS),
        "load": lambda: Cassette(cassette, mode="replay").load(),
        "keys of the run's requests": _keys_of(request_keys, replay),
    }.get(variant, replay)
    run()
    run()
    measure = ctypes.CDLL(str(helper))
    measure.measure_start()
    for _ in range(runs):
        run()
    measure.measure_stop()


@contextlib.contextmanager
def _capturing_nothing(cassette: Any) -> Iterator[None]:
    yield None


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _keys_of(request_keys: Any, replay: Callable[[], None]) -> Callable[[], None]:
    """The requests of one replayed run, keyed again by a fresh ``RequestKeys`` per run (what
    a fresh cassette pays), so no other work is counted."""
    requests: list[Any] = []
    keyed = request_keys.RequestKeys.keyed

    def seen(self: Any, request: Any) -> Any:
        requests.append(request)
        return keyed(self, request)

    request_keys.RequestKeys.keyed = seen
    replay()
    request_keys.RequestKeys.keyed = keyed

    def run() -> None:
        keys = request_keys.RequestKeys(request_keys.DEFAULT_PIPELINE)
        for request in requests:
            keys.keyed(request)

    return run


def count(variant: str, runs: int, cassette: Path, helper: Path, folder: Path) -> float:
    out = folder / f"callgrind-{variant.replace(' ', '-')}.out"
    child_args = [__file__, "--child", variant, str(runs), str(cassette), str(helper)]
    return counted(out, child_args) / runs


def counted(out: Path, child_args: list[str]) -> int:
    """The instructions a child (``python *child_args``) counts between its ``measure_start``
    and ``measure_stop``, under callgrind with instrumentation off until then."""
    command = ["valgrind", "--tool=callgrind", "--cache-sim=no", "--instr-atstart=no"]
    command += [f"--callgrind-out-file={out}", sys.executable, *child_args]
    subprocess.run(command, check=True, capture_output=True)
    dumped = Path(f"{out}.1").read_text()  # part 1: the measured runs (the dump request)
    match = re.search(r"^summary: (\d+)$", dumped, re.MULTILINE)
    if match is None:
        raise SystemExit(f"no instruction count in {out}.1")
    return int(match.group(1))


@contextlib.contextmanager
def measuring_helper() -> Iterator[tuple[Path, Path]]:
    """(a scratch folder, the compiled start/stop helper in it); needs valgrind and ``cc``."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if shutil.which("valgrind") is None or compiler is None:
        raise SystemExit("needs valgrind and a C compiler (cc) on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        source, helper = folder / "measure.c", folder / "measure.so"
        source.write_text(HELPER)
        subprocess.run([compiler, "-shared", "-fPIC", "-o", helper, source], check=True)
        yield folder, helper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        variant, runs, cassette, helper = args.child
        child(variant, int(runs), Path(cassette), Path(helper))
        return
    with measuring_helper() as (folder, helper):
        cassette = bench_growth.record(folder, TURNS)
        counts = {v: count(v, args.runs, cassette, helper, folder) for v in VARIANTS}
    base = counts["no cassette"]
    rows = [[v, f"{n / 1e6:.2f} M", f"{n / base:.3f}x"] for v, n in counts.items()]
    print(f"## Instructions per run, {TURNS}-turn agent ({args.runs} measured runs each)\n")
    print(table(["variant", "instructions per run", "÷ no cassette"], rows))
    print(f"\nPython {sys.version.split()[0]}, PYTHONHASHSEED={os.environ.get('PYTHONHASHSEED')}")


if __name__ == "__main__":
    main()
