"""Memory of a long suite: RSS after 1,000 and 2,000 replayed cassettes in one pytest process.

The suite (``suite_project.py``, ``kind="single"``): ``--tests`` tests (2,000), each asking
``ChatOpenAI`` one question (a small cassette: one interaction), in two variants:

- **chaincassette**: the ``cassette`` fixture replays each test's cassette (recorded once
  against the local fake OpenAI server), no server and no key;
- **floor** (``live``): the same tests calling the fake server live, no cassette, no chaincassette
  plugin (``-p no:chaincassette``): the same client objects and pytest's own records.

The RSS (``VmRSS``, after ``gc.collect()``) is read inside the session after the first
test (imports done, every class built), after 1,000 and after 2,000 tests; what a variant
remembers across tests is its growth from the first reading. The variants run one after
the other, in alternating order over ``--rounds`` rounds; each figure is the median.

Target (issue 28): the growth after 2,000 replayed cassettes ≤ the floor's + 25 MB.

Run: .venv/bin/python benchmarks/bench_suite_memory.py [--tests 2000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import suite_project
from _timing import table
from bench_suite import environment, run_pytest
from fake_openai import serving

PYTEST_ARGS = {
    "live": ["-p", "no:chaincassette", "-p", "no:recording"],
    "chaincassette": ["-p", "no:recording"],
}
LABELS = {
    "live": "ChatOpenAI against the fake server, no cassette (floor)",
    "chaincassette": "chaincassette `cassette` fixture, replayed",
}
TARGET_MB = 25


def readings(
    project: Path, variant: str, state: Path, at: list[int], url: str | None
) -> dict[int, float]:
    """RSS in MB after each number of tests in ``at``, from one session."""
    out = project / "rss.txt"
    out.unlink(missing_ok=True)
    env = environment(variant, state, url)
    env.update(BENCH_RSS_FILE=str(out), BENCH_RSS_AT=",".join(map(str, at)))
    run_pytest(project, PYTEST_ARGS[variant], env)
    found = {}
    for line in out.read_text().splitlines():
        count, kib = line.split()
        found[int(count)] = int(kib) / 1024
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    at = [1, args.tests // 2, args.tests]
    results: dict[str, list[dict[int, float]]] = {name: [] for name in LABELS}
    with tempfile.TemporaryDirectory() as tmp, serving() as url:
        root, state = Path(tmp), Path(tmp) / "state"
        projects = {}
        for name in LABELS:
            projects[name] = suite_project.write(root, name, args.tests, kind="single")
        run_pytest(  # record once, with the server up
            projects["chaincassette"],
            [*PYTEST_ARGS["chaincassette"], "--cassette-mode=once"],
            environment("chaincassette", state, url),
        )
        for index in range(args.rounds):
            order = list(LABELS) if index % 2 == 0 else list(reversed(LABELS))
            for name in order:
                served = url if name == "live" else None
                results[name].append(readings(projects[name], name, state, at, served))
    print(report(results, at))


def report(results: dict[str, list[dict[int, float]]], at: list[int]) -> str:
    def median(name: str, count: int) -> float:
        return statistics.median(r[count] for r in results[name])

    def growth(name: str, count: int) -> float:
        return statistics.median(r[count] - r[at[0]] for r in results[name])

    rows = []
    for name, label in LABELS.items():
        rows.append(
            [label]
            + [f"{median(name, n):.1f} MB" for n in at]
            + [f"+{growth(name, n):.1f} MB" for n in at[1:]]
        )
    extra = growth("chaincassette", at[-1]) - growth("live", at[-1])
    header = ["variant", *(f"RSS after {n:,}" for n in at), *(f"growth to {n:,}" for n in at[1:])]
    verdict = [
        [
            f"chaincassette's growth to {at[-1]:,} − the floor's",
            f"{extra:+.1f} MB",
            f"≤ +{TARGET_MB} MB",
            "met" if extra <= TARGET_MB else "missed",
        ]
    ]
    rounds = len(results["live"])
    return "\n".join(
        [
            f"## RSS of one pytest process replaying {at[-1]:,} small cassettes "
            f"(median of {rounds} rounds)",
            "",
            table(header, rows),
            "",
            table(["what", "figure", "target", "verdict"], verdict),
            "",
            f"load average at the end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}",
        ]
    )


if __name__ == "__main__":
    main()
