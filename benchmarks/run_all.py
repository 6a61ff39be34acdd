"""Run every benchmark N times, store every run with its load, and regenerate the README tables.

On a shared machine one run proves little: other processes slow some variants more than
others. So each benchmark runs ``--runs`` times (default 3), each run in its own process
(one framework's imports and patches never weigh on another), and the load average is
taken before and after every run. One results file keeps all of it:

- ``benchmarks/results/<date>-<time>.md``: the machine, the package versions, the commit,
  a load table (one row per benchmark run), the spread tables (every figure as
  ``min – max`` over the runs; a target is "met" only when every run met it), and the
  raw output of every run;
- ``benchmarks/README.md``: the block between the ``results`` markers is replaced by the
  spread tables and the load table of that file, so every figure there has a stored run.

Run: make bench   (or: .venv/bin/python benchmarks/run_all.py [--runs N] [--only bench_x.py])
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, table

HERE = Path(__file__).parent
RESULTS = HERE / "results"
README = HERE / "README.md"
BEGIN = "<!-- results: begin (written by run_all.py; edit the results file's run, not this) -->"
END = "<!-- results: end -->"
BENCHMARKS = (
    "bench_core.py",
    "bench_langchain.py",
    "bench_llama_index.py",
    "bench_supervisor.py",
    "bench_growth.py",
    "bench_embeddings.py",
)
PACKAGES = (
    "langchain-core",
    "langchain-community",
    "langchain-openai",
    "openai",
    "vcrpy",
    "llama-index-core",
    "PyYAML",
)
TIME_UNITS = {"µs": 1e-6, "ms": 1e-3, "s": 1.0}
QUANTITY = re.compile(r"^(\d[\d,]*(?:\.\d+)?)\s*(µs|ms|s|x)?$")


@dataclass
class Run:
    """One run of one benchmark: its output and the load around it."""

    script: str
    index: int
    output: str
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    seconds: float


def load_text(load: Sequence[float]) -> str:
    return " / ".join(f"{x:.2f}" for x in load)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def versions() -> str:
    found = []
    for name in PACKAGES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" (with uncommitted changes)" if git("status", "--porcelain") else "")


def run_once(script: str, index: int) -> Run:
    """Run one benchmark, echoing its output as it comes."""
    before = os.getloadavg()
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, str(HERE / script)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    if process.wait():
        raise SystemExit(f"{script} failed with exit code {process.returncode}")
    seconds = time.perf_counter() - start
    return Run(script, index, "".join(lines).rstrip(), before, os.getloadavg(), seconds)


# -- merging the runs of one benchmark -----------------------------------------------------------


def blocks(output: str) -> list[tuple[str, list[str]]]:
    """The output as ("table", rows) and ("text", [line]) blocks; blank lines dropped."""
    out: list[tuple[str, list[str]]] = []
    in_table = False
    for line in output.splitlines():
        if line.startswith("|"):
            if in_table:
                out[-1][1].append(line)
            else:
                out.append(("table", [line]))
            in_table = True
            continue
        in_table = False
        if line.strip():
            out.append(("text", [line]))
    return out


def cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _quantity(cell: str) -> tuple[float, str] | None:
    found = QUANTITY.match(cell)
    if not found:
        return None
    return float(found.group(1).replace(",", "")), found.group(2) or ""


def _decimals(cell: str) -> int:
    number = cell.rstrip("xµms ").split(".")
    return len(number[1]) if len(number) == 2 else 0


def merge_cell(values: list[str]) -> str:
    """One cell over all runs: a target's verdict, the spread of a figure, or the text."""
    if set(values) <= {"met", "missed"}:
        met = values.count("met")
        return "met" if met == len(values) else f"missed ({met} of {len(values)} runs met it)"
    if len(set(values)) == 1:
        return values[0]
    parsed = [_quantity(v) for v in values]
    if all(p is not None for p in parsed):
        numbers = [p for p in parsed if p is not None]
        units = {u for _, u in numbers}
        if units <= set(TIME_UNITS):
            seconds = [n * TIME_UNITS[u] for n, u in numbers]
            return f"{fmt(min(seconds))} – {fmt(max(seconds))}"
        if len(units) == 1:
            unit = units.pop()
            places = max(_decimals(v) for v in values)
            low, high = min(n for n, _ in numbers), max(n for n, _ in numbers)
            return f"{low:,.{places}f}{unit} – {high:,.{places}f}{unit}"
    return " / ".join(dict.fromkeys(values))


def merge(outputs: list[str]) -> str:
    """The outputs of several runs of one benchmark as one set of spread tables."""
    shapes = [blocks(o) for o in outputs]
    first = shapes[0]
    same_shape = all(
        len(s) == len(first)
        and all(
            k == k0 and len(rows) == len(rows0)
            for (k, rows), (k0, rows0) in zip(s, first, strict=True)
        )
        for s in shapes
    )
    if not same_shape:
        return "(the runs printed differently shaped tables: see each run's output below)"
    out: list[str] = []
    for position, (kind, rows) in enumerate(first):
        if kind == "text":  # headings and notes: the same in every run, or each one once
            out += [*dict.fromkeys(s[position][1][0] for s in shapes), ""]
            continue
        header = cells(rows[0])
        merged_rows = []
        for r in range(2, len(rows)):
            per_run = [cells(s[position][1][r]) for s in shapes]
            merged_rows.append(
                [merge_cell([row[c] for row in per_run]) for c in range(len(header))]
            )
        out += [table(header, merged_rows), ""]
    return "\n".join(out).strip()


# -- writing ---------------------------------------------------------------------------------


def load_table(runs: list[Run]) -> str:
    rows = [
        [
            str(run.index),
            run.script,
            load_text(run.load_before),
            load_text(run.load_after),
            f"{run.seconds:.0f} s",
        ]
        for run in runs
    ]
    header = ["run", "benchmark", "load before (1 / 5 / 15 min)", "load after", "took"]
    return table(header, rows)


def spread(runs: list[Run], scripts: Sequence[str]) -> str:
    parts = []
    for script in scripts:
        outputs = [r.output for r in runs if r.script == script]
        if outputs:
            parts.append(merge(outputs))
    return "\n\n".join(parts)


def write_results(runs: list[Run], scripts: Sequence[str], head: list[str], path: Path) -> str:
    count = max(r.index for r in runs)
    summary = "\n".join(
        [
            f"### Spread over {count} runs",
            "",
            f"Each figure is the lowest – highest of the {count} runs (one value: every run gave "
            "it); a target is **met** only when every run met it.",
            "",
            re.sub(r"^## ", "#### ", spread(runs, scripts), flags=re.M),
            "",
            "### Load of each run",
            "",
            load_table(runs),
        ]
    )
    raw = [f"## Run {r.index}: {r.script}\n\n{r.output}" for r in runs]
    path.write_text("\n".join([*head, "", summary, "", *raw, ""]))
    return summary


def update_readme(summary: str, path: Path, command: str) -> None:
    text = README.read_text()
    if BEGIN not in text or END not in text:
        print(f"{README} has no results markers: not updated")
        return
    before, _, rest = text.partition(BEGIN)
    _, _, after = rest.partition(END)
    source = f"From [`results/{path.name}`](results/{path.name}), {command}."
    README.write_text(f"{before}{BEGIN}\n{source}\n\n{summary}\n{END}{after}")
    print(f"updated {README}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", action="append", help="one benchmark script (repeatable)")
    parser.add_argument("--no-readme", action="store_true", help="leave README.md alone")
    args = parser.parse_args()
    scripts = [s for s in (args.only or BENCHMARKS) if (HERE / s).exists()]
    started = time.strftime("%Y-%m-%d %H:%M")
    head = [
        f"# Benchmark results, {started}: {args.runs} runs",
        "",
        "- command: `python benchmarks/run_all.py --runs "
        + str(args.runs)
        + "".join(f" --only {s}" for s in args.only or ())
        + "`"
        + ("" if args.only else f" (`make bench BENCH_RUNS={args.runs}`)"),
        f"- commit: {commit()}",
        f"- machine: {os.cpu_count()} CPUs, {cpu_model()}, {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}; {versions()}",
    ]
    print("\n".join(head), flush=True)
    runs = []
    for index in range(1, args.runs + 1):
        for script in scripts:
            print(f"\n# run {index} of {args.runs}: {script}", flush=True)
            runs.append(run_once(script, index))
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{time.strftime('%Y-%m-%d-%H%M')}.md"
    summary = write_results(runs, scripts, head, path)
    print(f"\n{summary}\n\nwritten to {path}")
    if not args.no_readme:
        update_readme(summary, path, head[2].removeprefix("- "))


if __name__ == "__main__":
    main()
