"""Instructions per recorded call, counted by callgrind: ``bench_recording.py``'s ratio without
the machine's load in it.

Two processes, each under ``valgrind --tool=callgrind`` with instrumentation off until the
measured part, both running ``bench_recording.py``'s own calls (distinct one-message
``ChatOpenAI.invoke`` calls to ``fake_openai.py``'s server, in a process of its own and not
counted) after the same warm-up (the calls once with no cassette, once recorded):

- **no cassette (floor)**: the calls alone;
- **use_cassette, record**: the same calls inside one ``use_cassette(mode="record")`` block
  on a fresh cassette, its save at the block's exit included.

What recording adds per call is the difference. It counts work, not time: an ``fsync`` or a
``write`` is a system call callgrind does not see, so the figure of record stays the timed
ratio.

Run: .venv/bin/python benchmarks/instructions_recording.py [--calls 200]
Needs valgrind and a C compiler (``cc``); about a minute.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import bench_recording
from _timing import table
from instructions import counted, measuring_helper

VARIANTS = ("no cassette (floor)", "use_cassette, record")


def child(variant: str, calls: int, helper: Path) -> None:
    from chaincassette import use_cassette

    bench_recording.CALLS = calls
    with bench_recording.serving() as base_url, tempfile.TemporaryDirectory() as tmp:
        run = bench_recording.calls(base_url)
        run()
        with use_cassette(Path(tmp) / "warm.yaml", mode="record"):
            run()
        measure = ctypes.CDLL(str(helper))
        measure.measure_start()
        if variant == VARIANTS[0]:
            run()
        else:
            with use_cassette(Path(tmp) / "measured.yaml", mode="record"):
                run()
        measure.measure_stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        variant, calls, helper = args.child
        child(variant, int(calls), Path(helper))
        return
    with measuring_helper() as (folder, helper):
        counts = {}
        for index, variant in enumerate(VARIANTS):
            out = folder / f"callgrind-{index}.out"
            counts[variant] = counted(
                out, [__file__, "--child", variant, str(args.calls), str(helper)]
            )
    floor, record = (counts[v] / args.calls for v in VARIANTS)
    rows = [
        [VARIANTS[0], f"{floor / 1e6:.3f} M", "1.000x", ""],
        [
            VARIANTS[1],
            f"{record / 1e6:.3f} M",
            f"{record / floor:.3f}x",
            f"{(record - floor) / 1e6:.3f} M",
        ],
    ]
    print(f"## Instructions per call, {args.calls} recorded calls\n")
    print(table(["variant", "instructions per call", "÷ floor", "recording adds"], rows))
    print(f"\nPython {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
