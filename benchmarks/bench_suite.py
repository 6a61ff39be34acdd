"""A whole pytest suite of agent tests, replayed: chaincassette against the floor and vcrpy.

The suite (``suite_project.py``): ``--tests`` tests (200), each a LangGraph ReAct agent
making 5 model calls through ``ChatOpenAI`` (4 tool calls, then the answer), written into
a temporary folder in three variants:

- **floor**: the same tests on a scripted fake chat model, no cassette, no chaincassette
  plugin (``-p no:chaincassette -p no:recording``): what the suite costs without any
  recording library;
- **chaincassette**: the ``cassette`` fixture, recorded once against the local fake OpenAI
  server (``fake_openai.py``, ``--cassette-mode=once``), then replayed by plain ``pytest``
  with the server gone and no ``OPENAI_API_KEY`` (``-p no:recording``);
- **pytest-recording/vcrpy**: ``@pytest.mark.vcr`` matching on method, path and body,
  recorded once (``--record-mode=once``), replayed with ``--record-mode=none``
  (``-p no:chaincassette``).

Each variant is one ``pytest -q`` process over all the tests; a round runs every variant
once, the order rotating between rounds, after one warm run of each (bytecode compiled and
written, with pytest's assertion rewrites of plugin packages, as on a developer's machine
or a CI cache; files in the page cache). Times: the wall time of the process and its CPU time (user +
system, from ``wait4``); ratios are paired within a round, medians over rounds.

Run: .venv/bin/python benchmarks/bench_suite.py [--tests 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import suite_project
from _timing import table
from fake_openai import serving

PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
DISABLE = {
    "floor": ["-p", "no:chaincassette", "-p", "no:recording"],
    "floor-app": ["-p", "no:chaincassette", "-p", "no:recording"],
    "chaincassette": ["-p", "no:recording"],
    "vcrpy": ["-p", "no:chaincassette", "--record-mode=none"],
    "live": ["-p", "no:chaincassette", "-p", "no:recording"],
}
LABELS = {
    "floor": "fake chat model, no cassette (floor)",
    "floor-app": "the same, the app's ChatOpenAI imported and built (floor + the app's imports)",
    "chaincassette": "chaincassette `cassette` fixture",
    "vcrpy": "pytest-recording/vcrpy",
}
FAKE_KEY = "sk-bench-not-a-real-key-0"


@dataclass
class Timing:
    wall: float
    cpu: float


def environment(variant: str, state: Path, url: str | None = None) -> dict[str, str]:
    """The variant's environment: no key for chaincassette's replay, a fake one otherwise."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHAINCASSETTE_"))}
    env.update(BENCH_VARIANT=variant, CHAINCASSETTE_STATE_DIR=str(state), PYTHONWARNINGS="ignore")
    env.pop("CI", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's suite keeps its bytecode and pytest's
    if url is not None:
        env.update(BENCH_OPENAI_URL=url, OPENAI_API_KEY=FAKE_KEY)
    elif variant != "chaincassette":  # floor-app builds its ChatOpenAI with a key, as the app
        env["OPENAI_API_KEY"] = FAKE_KEY
    return env


def run_pytest(project: Path, args: list[str], env: dict[str, str]) -> Timing:
    """One pytest process in ``project``; raises when a test failed."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [*PYTEST, *args], cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        tail = output.decode(errors="replace")[-3000:]
        raise SystemExit(f"pytest {' '.join(args)} failed in {project}:\n{tail}")
    return Timing(wall, usage.ru_utime + usage.ru_stime)


def record(projects: dict[str, Path], state: Path) -> None:
    """Record the chaincassette and vcrpy cassettes once, against the fake server."""
    with serving() as url:
        run_pytest(
            projects["chaincassette"],
            [*DISABLE["chaincassette"], "--cassette-mode=once"],
            environment("chaincassette", state, url),
        )
        vcr_args = [a for a in DISABLE["vcrpy"] if not a.startswith("--record-mode")]
        run_pytest(
            projects["vcrpy"], [*vcr_args, "--record-mode=once"], environment("vcrpy", state, url)
        )


def measure(projects: dict[str, Path], state: Path, rounds: int) -> dict[str, list[Timing]]:
    names = list(projects)
    for name in names:  # warm: bytecode, page cache
        run_pytest(projects[name], DISABLE[name], environment(name, state))
    results: dict[str, list[Timing]] = {name: [] for name in names}
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            results[name].append(
                run_pytest(projects[name], DISABLE[name], environment(name, state))
            )
    return results


def paired(results: dict[str, list[Timing]], over: str, base: str, clock: str) -> float:
    return statistics.median(
        getattr(a, clock) / getattr(b, clock)
        for a, b in zip(results[over], results[base], strict=True)
    )


def report(results: dict[str, list[Timing]], tests: int, load: tuple[float, ...]) -> str:
    rows = []
    for name, timings in results.items():
        wall = statistics.median(t.wall for t in timings)
        cpu = statistics.median(t.cpu for t in timings)
        rows.append(
            [
                LABELS[name],
                f"{wall:.2f} s",
                f"{cpu:.2f} s",
                f"{cpu / tests * 1e3:.1f} ms",
                f"{paired(results, name, 'floor', 'wall'):.2f}x",
                f"{paired(results, name, 'floor', 'cpu'):.2f}x",
            ]
        )
    over_floor = {c: paired(results, "chaincassette", "floor", c) for c in ("wall", "cpu")}
    vs_vcr = {c: paired(results, "vcrpy", "chaincassette", c) for c in ("wall", "cpu")}
    rounds = len(results["floor"])
    header = ["variant", "wall", "CPU", "CPU per test", "÷ floor (wall)", "÷ floor (CPU)"]
    targets = [
        [
            "chaincassette ÷ floor",
            f"{over_floor['wall']:.2f}x",
            f"{over_floor['cpu']:.2f}x",
            "≤ 1.25x",
            "met" if max(over_floor.values()) <= 1.25 else "missed",
        ],
        [
            "vcrpy ÷ chaincassette",
            f"{vs_vcr['wall']:.2f}x",
            f"{vs_vcr['cpu']:.2f}x",
            "≥ 3x",
            "met" if min(vs_vcr.values()) >= 3 else "missed",
        ],
    ]
    if "floor-app" in results:  # what the library itself adds, and what any one could reach
        app = {c: paired(results, "chaincassette", "floor-app", c) for c in ("wall", "cpu")}
        ceiling = {c: paired(results, "vcrpy", "floor-app", c) for c in ("wall", "cpu")}
        targets += [
            ["chaincassette ÷ floor-app", f"{app['wall']:.2f}x", f"{app['cpu']:.2f}x", "-", ""],
            [
                "vcrpy ÷ floor-app (a library costing nothing)",
                f"{ceiling['wall']:.2f}x",
                f"{ceiling['cpu']:.2f}x",
                "-",
                "",
            ],
        ]
    return "\n".join(
        [
            f"## The {tests}-test agent suite, replayed (median of {rounds} interleaved rounds)",
            "",
            table(header, rows),
            "",
            table(["ratio", "wall", "CPU", "target", "verdict (both clocks)"], targets),
            "",
            f"load average before the rounds: {' / '.join(f'{x:.2f}' for x in load)}",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the projects here and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        state = root / "state"
        projects = {
            name: suite_project.write(root, name, args.tests) for name in ("floor", *LABELS)
        }
        projects = {name: projects[name] for name in LABELS}
        record(projects, state)
        load = os.getloadavg()
        results = measure(projects, state, args.rounds)
    print(report(results, args.tests, load))


if __name__ == "__main__":
    main()
