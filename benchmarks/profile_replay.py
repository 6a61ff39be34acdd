"""Where a replayed LangChain ``invoke`` spends its time: a cProfile of CassetteCache replay.

The same replay as ``bench_langchain.py`` (``FixedChat`` answering from a cassette,
``allow_playback_repeats=True``), profiled over ``--calls`` calls per conversation size.
Prints, per size, the functions with the most own time (``tottime``) and their cumulative
time, both per call. cProfile slows every Python call, so compare functions with one
another, not with the benchmark's wall-clock figures. Any profile quoted in README.md must
be the output of this script, with its command.

Run: .venv/bin/python benchmarks/profile_replay.py [--calls 300] [--top 15] [--sizes 1 10 50]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, table
from bench_langchain import FixedChat, prompt

from chaincassette import Cassette
from chaincassette.integrations.langchain import CassetteCache


def profile(size: int, calls: int, top: int, path: Path) -> str:
    messages = prompt(size)
    cache = CassetteCache(Cassette(path, mode="replay", allow_playback_repeats=True))
    try:
        model = FixedChat(cache=cache)
        model.invoke(messages)  # warm: imports, parses, caches
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(calls):
            model.invoke(messages)
        profiler.disable()
    finally:
        cache.close()
    stats = pstats.Stats(profiler)
    entries = stats.stats  # type: ignore[attr-defined]
    rows = []
    for (file, line, name), (_cc, _nc, tottime, cumtime, _callers) in sorted(
        entries.items(), key=lambda item: item[1][2], reverse=True
    )[:top]:
        where = f"{Path(file).name}:{line}" if line else file
        rows.append([f"`{name}` ({where})", fmt(tottime / calls), fmt(cumtime / calls)])
    heading = f"### {size} message{'s' if size > 1 else ''}: top {top} by own time, per call"
    return f"{heading}\n\n{table(['function', 'own', 'cumulative'], rows)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 50])
    args = parser.parse_args()
    one, five, fifteen = os.getloadavg()
    print("## Profile of CassetteCache replay (`benchmarks/profile_replay.py`)\n")
    print(f"{args.calls} calls per size; load average {one:.2f} / {five:.2f} / {fifteen:.2f}\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "langchain.yaml"
        recorder = CassetteCache(path, mode="record")
        model = FixedChat(cache=recorder)
        for size in args.sizes:
            model.invoke(prompt(size))
        recorder.close()
        for size in args.sizes:
            print(profile(size, args.calls, args.top, path) + "\n")


if __name__ == "__main__":
    main()
