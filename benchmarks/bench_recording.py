"""What recording costs: 1,000 ``ChatOpenAI`` calls to a loopback server, recorded or not.

Both variants make the same 1,000 calls (distinct one-message prompts) through
``ChatOpenAI.invoke`` to ``fake_openai.py``'s server on 127.0.0.1 (in a process of its own),
in one run, rounds interleaved:

- **no cassette (floor)**: the calls alone;
- **use_cassette, record**: the same calls inside one ``use_cassette(mode="record")`` block
  on a fresh cassette: each call keyed, journaled (one ``write`` each, an ``fsync`` every
  ``journal.SYNC_EVERY`` entries) and, at the block's exit, the 1,000 interactions merged
  and written (YAML, atomic rename).

Reported: the median time per round of each, their paired ratio (each round's recording
over the same round's floor; target ≤ 1.2x, issue 28), the part of a recording round spent
in the save at the block's exit, and the ``fsync`` calls one recording round makes. Wall
time (``time.perf_counter``): an ``fsync`` is time spent waiting, not CPU. The client's CPU
time per call is reported beside it (on a loaded machine, wall time stretches CPU work).

Then the save's own cost against the parse (target: the YAML dump at a block's exit costs no
more than the parse of the same file): ``storage.dumps`` against ``storage.loads`` of the
20-turn LangGraph agent cassette ``bench_growth.py`` records, CPU time, median of 41
interleaved rounds.

Run: .venv/bin/python benchmarks/bench_recording.py [--rounds N] [--store]   (``--store``
also writes the output to ``benchmarks/results/<date>-<time>-recording.md``)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from langchain_openai import ChatOpenAI

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, paired_ratios, table
from fake_openai import ANSWER

from chaincassette import Cassette, journal, storage, use_cassette

CALLS = 1000
MODEL = "gpt-4o-mini"
TARGET = 1.2


SERVER = """
import sys
from http.server import ThreadingHTTPServer
sys.path.insert(0, sys.argv[1])
from fake_openai import _Handler
server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@contextmanager
def serving() -> Iterator[str]:
    """``fake_openai``'s server in a process of its own (a provider is not a thread of the
    program: in one process the two would take turns on the GIL); yields its ``base_url``."""
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(Path(__file__).parent)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
    finally:
        server.terminate()
        server.wait()


def calls(base_url: str) -> Callable[[], None]:
    model = ChatOpenAI(model=MODEL, temperature=0.0, base_url=base_url, api_key="sk-bench")

    def run() -> None:
        for n in range(CALLS):
            assert model.invoke(f"Question {n}: what is the weather in Paris?").content == ANSWER

    return run


class _Counted:
    """``os.fsync`` counted, and the time the save at the block's exit takes."""

    def __init__(self) -> None:
        self.fsyncs = 0
        self._real = os.fsync

    def __enter__(self) -> _Counted:
        def fsync(fd: int) -> None:
            self.fsyncs += 1
            self._real(fd)

        os.fsync = fsync
        return self

    def __exit__(self, *exc: object) -> None:
        os.fsync = self._real


def measure(rounds: int) -> dict[str, object]:
    times: dict[str, list[float]] = {"floor": [], "record": []}
    cpu: dict[str, list[float]] = {"floor": [], "record": []}
    saves: list[float] = []
    fsyncs: list[int] = []
    with serving() as base_url, tempfile.TemporaryDirectory() as tmp:
        run = calls(base_url)
        run()  # warm: imports, the client's connection pool
        for index in range(rounds):
            order = ["floor", "record"] if index % 2 == 0 else ["record", "floor"]
            for name in order:
                path = Path(tmp) / f"c{index}.yaml"
                start, started_cpu = time.perf_counter(), time.process_time()
                if name == "floor":
                    run()
                else:
                    with _Counted() as counted, use_cassette(path, mode="record") as cassette:
                        run()
                        before_save = time.perf_counter()
                    saves.append(time.perf_counter() - before_save)
                    fsyncs.append(counted.fsyncs)
                    assert cassette.stats.recorded == CALLS
                times[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - started_cpu)
            assert len(Cassette(Path(tmp) / f"c{index}.yaml").interactions) == CALLS
    return {"times": times, "cpu": cpu, "saves": saves, "fsyncs": fsyncs}


def dump_against_parse(rounds: int = 41) -> tuple[int, float, float]:
    """(bytes, median loads, median dumps) of the 20-turn agent cassette, CPU seconds."""
    from bench_growth import record  # LangGraph: imported for this measure only

    with tempfile.TemporaryDirectory() as tmp:
        path = record(Path(tmp), 20)
        text = path.read_text()
        document = storage.loads(text, "yaml", path)
        assert storage.dumps(document, "yaml") == text  # the same bytes
        loads: list[float] = []
        dumps: list[float] = []
        for index in range(rounds):
            order = ("loads", "dumps") if index % 2 else ("dumps", "loads")
            for name in order:
                start = time.process_time()
                if name == "loads":
                    storage.loads(text, "yaml", path)
                else:
                    storage.dumps(document, "yaml")
                (loads if name == "loads" else dumps).append(time.process_time() - start)
    return len(text.encode()), statistics.median(loads), statistics.median(dumps)


def report(results: dict[str, object]) -> str:
    times, cpu = results["times"], results["cpu"]
    assert isinstance(times, dict) and isinstance(cpu, dict)
    ratio = paired_ratios(times, "floor")["record"]
    cpu_ratio = paired_ratios(cpu, "floor")["record"]
    cpu_floor, cpu_record = statistics.median(cpu["floor"]), statistics.median(cpu["record"])
    floor, record = statistics.median(times["floor"]), statistics.median(times["record"])
    saves = results["saves"]
    fsyncs = results["fsyncs"]
    assert isinstance(saves, list) and isinstance(fsyncs, list)
    rows = [
        ["no cassette (floor)", fmt(floor), fmt(floor / CALLS), fmt(cpu_floor / CALLS), "", ""],
        [
            "use_cassette, record",
            fmt(record),
            fmt(record / CALLS),
            fmt(cpu_record / CALLS),
            fmt(statistics.median(saves)),
            f"{statistics.median(fsyncs):.0f}",
        ],
    ]
    header = [
        f"{CALLS} calls",
        "per round",
        "per call",
        "client CPU per call",
        "of which the save",
        "fsync calls",
    ]
    met = _met(ratio <= TARGET)
    extra = (record - floor) / CALLS
    targets = [
        [
            f"{ratio:.2f}x",
            met,
            fmt(extra),
            f"{cpu_ratio:.2f}x",
            fmt((cpu_record - cpu_floor) / CALLS),
        ]
    ]
    target_header = [
        f"recording ÷ no cassette, wall (target ≤ {TARGET}x)",
        "",
        "recording's cost per call, wall",
        "client CPU ratio",
        "recording's CPU per call",
    ]
    every = getattr(journal, "SYNC_EVERY", None)  # chaincassette before 0.2: one per entry
    sync = (
        f"journal: an fsync every {every} entries or {journal.SYNC_SECONDS:g} s"
        if every
        else "journal: an fsync per entry"
    )
    dumped = results["dump"]
    assert isinstance(dumped, tuple)
    size, loads, dumps = dumped
    dump_rows = [
        [f"{size:,}", fmt(loads), fmt(dumps), f"{dumps / loads:.2f}x", _met(dumps <= loads)]
    ]
    dump_header = [
        "20-turn agent cassette, bytes",
        "storage.loads",
        "storage.dumps",
        "dump ÷ parse (target ≤ 1x)",
        "",
    ]
    return "\n".join(
        [
            table(header, rows),
            "",
            table(target_header, targets),
            "",
            sync,
            "",
            table(dump_header, dump_rows),
        ]
    )


def _met(ok: bool) -> str:
    return "met" if ok else "missed"


def store(output: str) -> Path:
    """Write ``output`` as a results file, headed like the other stored runs."""
    here = Path(__file__).parent
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True
    ).stdout.strip()
    stamp = time.strftime("%Y-%m-%d-%H%M")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    path = here / "results" / f"{stamp}-recording.md"
    path.write_text(
        f"# bench_recording.py, {time.strftime('%Y-%m-%d %H:%M')}\n\n"
        f"commit {commit}; load average after the run: {load}; {os.cpu_count()} cores\n\n"
        f"Run: `.venv/bin/python benchmarks/bench_recording.py --store`\n\n{output}\n"
    )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--store", action="store_true")
    args = parser.parse_args()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results = measure(args.rounds)
    results["dump"] = dump_against_parse()
    after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    output = report(results) + f"\n\nload average before the run: {load}; after: {after}"
    print(output)
    if args.store:
        print(f"\nstored in {store(output)}")


if __name__ == "__main__":
    main()
