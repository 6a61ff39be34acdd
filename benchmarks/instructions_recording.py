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

``--part module:qualname`` (repeatable) also counts, in a recording process each, only the
instructions inside that function (callgrind collecting only while it runs, what it calls
included; a garbage collection counts where it was triggered): where a recorded call's
instructions go, e.g. ``--part chaincassette.cassette:Cassette.save``.

Run: .venv/bin/python benchmarks/instructions_recording.py [--calls 200] [--part M:F ...]
Needs valgrind and a C compiler (``cc``); about a minute, and half a minute per part.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import importlib
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import bench_recording
from _timing import table
from instructions import HELPER, counted, measuring_helper

VARIANTS = ("no cassette (floor)", "use_cassette, record")
TOGGLE = "void toggle(void) { CALLGRIND_TOGGLE_COLLECT; }\n"


def child(variant: str, calls: int, helper: Path) -> None:
    """The calls, warmed, then measured: ``variant`` is one of ``VARIANTS`` or a part."""
    from chaincassette import use_cassette

    bench_recording.CALLS = calls
    with bench_recording.serving() as base_url, tempfile.TemporaryDirectory() as tmp:
        run = bench_recording.calls(base_url)
        run()
        with use_cassette(Path(tmp) / "warm.yaml", mode="record"):
            run()
        measure = ctypes.CDLL(str(helper))
        if variant not in VARIANTS:
            _collect_inside(variant, measure.toggle)
        measure.measure_start()
        if variant == VARIANTS[0]:
            run()
        else:
            with use_cassette(Path(tmp) / "measured.yaml", mode="record"):
                run()
        measure.measure_stop()


def _collect_inside(part: str, toggle: Callable[[], None]) -> None:
    """Wrap ``part`` (``module:qualname``) so that callgrind collects only while it runs."""
    module, _, name = part.partition(":")
    owner: Any = importlib.import_module(module)
    *path, attribute = name.split(".")
    for step in path:
        owner = getattr(owner, step)
    original = getattr(owner, attribute)
    depth = [0]

    @functools.wraps(original)
    def collected(*args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        if depth[0] == 1:
            toggle()
        try:
            return original(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                toggle()

    setattr(owner, attribute, collected)


def _part(part: str, calls: int, folder: Path, index: int) -> float:
    """Instructions per call inside ``part``: callgrind collecting nothing but there."""
    helper = folder / "toggle.so"
    if not helper.exists():
        source = folder / "toggle.c"
        source.write_text(HELPER + TOGGLE)
        compiler = shutil.which("cc") or shutil.which("gcc") or "cc"
        subprocess.run([compiler, "-shared", "-fPIC", "-o", helper, source], check=True)
    out = folder / f"callgrind-part-{index}.out"
    command = ["valgrind", "--tool=callgrind", "--cache-sim=no", "--instr-atstart=no"]
    command += ["--collect-atstart=no", f"--callgrind-out-file={out}", sys.executable]
    command += [__file__, "--child", part, str(calls), str(helper)]
    subprocess.run(command, check=True, capture_output=True)
    match = re.search(r"^summary: (\d+)$", Path(f"{out}.1").read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit(f"no instruction count in {out}.1")
    return int(match.group(1)) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--part", action="append", default=[], metavar="MODULE:QUALNAME")
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
            child_args = [__file__, "--child", variant, str(args.calls), str(helper)]
            counts[variant] = counted(out, child_args)
        parts = {p: _part(p, args.calls, folder, n) for n, p in enumerate(args.part)}
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
    if parts:
        print("\n## Inside each part, per recorded call\n")
        counted_parts = [[f"`{p}`", f"{n / 1e3:,.1f} k"] for p, n in parts.items()]
        print(table(["part", "instructions per call"], counted_parts))
    print(f"\nPython {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
