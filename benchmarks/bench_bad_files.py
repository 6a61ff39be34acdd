"""How long a hostile cassette keeps each entry point busy: the YAML alias bomb, levels 1-8.

A "billion laughs" file is small (the bomb below adds ~0.6 KB to the 17 KB supervisor
example cassette) but expands to 9^(level+1) strings wherever something walks the loaded
data (replaying a response copies it, ``verify`` scans it for secrets, ``show`` renders
it). Each cell runs in a fresh process capped at 1 GB of address space and 20 s; it shows
the wall time and the peak resident memory of that process, and how it ended
(``CassetteFormatError`` is the expected answer, ``ok`` means the bomb was expanded).

Run: .venv/bin/python benchmarks/bench_bad_files.py [max_level]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

HERE = Path(__file__).parent
SOURCE = HERE.parent / "examples" / "supervisor" / "cassette.yaml"
LIMIT_SECONDS = 20.0
LIMIT_BYTES = 1024**3

CHILD = textwrap.dedent(
    """
    import contextlib, io, resource, sys, time
    limit = int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from chaincassette import Cassette, CassetteFormatError
    from chaincassette.cli import main
    import chaincassette.cli.compare, chaincassette.cli.listing, chaincassette.cli.show
    import chaincassette.cli.verify
    what, path = sys.argv[1], sys.argv[2]
    out = io.StringIO()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"start {rss}", file=sys.__stdout__, flush=True)
    started = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            if what == "replay":
                cassette = Cassette(path)
                for interaction in cassette.interactions:
                    with contextlib.suppress(Exception):
                        cassette.begin(interaction.request)
                result = "ok"
            elif what == "record-load":
                Cassette(path, mode="record").load()
                result = "ok"
            else:
                args = {"diff": ["diff", sys.argv[4], path]}.get(what, [what, path])
                code = main(args)
                text = out.getvalue()
                refused = "alias" in text or "anchor" in text
                result = f"exit {code}" + (" (refused)" if refused else "")
    except CassetteFormatError:
        result = "CassetteFormatError"
    except MemoryError:
        result = "MemoryError"
    except BaseException as exc:
        result = type(exc).__name__
    seconds = time.perf_counter() - started
    print(f"end {seconds} {result}", file=sys.__stdout__)
    """
)


def bomb(level: int) -> str:
    """The example cassette with its first response replaced by a ``level``-deep alias bomb."""
    text = SOURCE.read_text()
    start = text.index("\n  response:\n") + 1
    end = text.index("\n  meta:\n", start) + 1
    lines = ["  response:", "    l0: &l0 [" + ", ".join(["lol"] * 9) + "]"]
    for n in range(1, level + 1):
        lines.append(f"    l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]")
    return text[:start] + "\n".join(lines) + "\n" + text[end:]


def measure(what: str, path: Path) -> tuple[str, float, str]:
    """(time, peak memory growth in MB, outcome) of one entry point on one file, in a fresh
    process; the time is that of the operation alone (imports done), the memory is the
    growth of the peak resident set over what the process held before it."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, what, str(path), str(LIMIT_BYTES), str(SOURCE)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    start = child.stdout.readline().split()
    timer = threading.Timer(LIMIT_SECONDS, child.kill)
    timer.start()
    end = child.stdout.read().split(maxsplit=2)
    _, status, usage = os.wait4(child.pid, 0)
    timer.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)
    growth = (usage.ru_maxrss - int(start[1])) / 1024 if start else float("nan")
    if len(end) == 3:
        return _seconds(float(end[1])), growth, end[2].strip()
    if child.returncode == -9:
        return f"> {LIMIT_SECONDS:.0f} s", growth, "killed"
    return "?", growth, f"exit {child.returncode}"


def _seconds(value: float) -> str:
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def main() -> None:
    max_level = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    entry_points = ("replay", "record-load", "show", "verify", "ls", "diff")
    clean = [measure(what, SOURCE) for what in ("replay", "show", "verify")]
    print(f"{SOURCE.name} ({SOURCE.stat().st_size / 1024:.1f} KB) as it is: replay ", end="")
    print(", show ".join(f"{t} (+{m:.0f} MB)" for t, m, _ in clean[:2]), end="")
    print(f", verify {clean[2][0]} (+{clean[2][1]:.0f} MB)")
    print("| level | size | " + " | ".join(entry_points) + " |")
    print("|---" * (len(entry_points) + 2) + "|")
    with tempfile.TemporaryDirectory() as folder:
        for level in range(1, max_level + 1):
            path = Path(folder) / f"bomb{level}.yaml"
            path.write_text(bomb(level))
            cells = []
            for what in entry_points:
                seconds, growth, outcome = measure(what, path)
                cells.append(f"{seconds}, +{growth:.0f} MB, {outcome}")
            size = f"{path.stat().st_size / 1024:.1f} KB"
            print(f"| {level} | {size} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
