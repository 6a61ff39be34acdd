"""Run every benchmark in one go; print the tables and write them to ``benchmarks/results.md``.

Each benchmark runs in its own process (so one framework's imports and patches never
weigh on another), one after the other, under the same interpreter. The machine, the
package versions and the load average before and after are written with the tables:
on a shared machine the numbers mean little without them.

Run: make bench   (or: .venv/bin/python benchmarks/run_all.py)
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).parent
RESULTS = HERE / "results.md"
BENCHMARKS = (
    "bench_core.py",
    "bench_langchain.py",
    "bench_llama_index.py",
    "bench_supervisor.py",
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


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


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


def run(script: str) -> str:
    """Run one benchmark, echoing its output as it comes; returns that output."""
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
    return "".join(lines).rstrip()


def main() -> None:
    started = time.strftime("%Y-%m-%d %H:%M")
    before = load()
    head = [
        "# Benchmark results",
        "",
        f"- date: {started}; command: `make bench` (`python benchmarks/run_all.py`)",
        f"- machine: {os.cpu_count()} CPUs, {cpu_model()}, {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}; {versions()}",
        f"- load average (1 / 5 / 15 min) before: {before}",
        "",
    ]
    print("\n".join(head), flush=True)
    sections = []
    start = time.perf_counter()
    for script in BENCHMARKS:
        if (HERE / script).exists():
            sections.append(run(script))
            print(flush=True)
    after = f"- load average after: {load()}; total {time.perf_counter() - start:.0f} s"
    print(after)
    RESULTS.write_text("\n".join([*head[:-1], after, "", "\n\n".join(sections), ""]))
    print(f"\nwritten to {RESULTS}")


if __name__ == "__main__":
    main()
