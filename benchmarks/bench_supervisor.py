"""The whole example supervisor graph: replayed from its cassette versus run on the real model.

Replay: ``examples/supervisor/supervisor.py``'s own ``run()`` (its committed cassette,
offline), repeated in one process, plus the whole program in fresh processes (imports
and cassette load included, what ``make demo`` costs). Live: the same graph, built by
the example's ``build_graph``, without any cassette, against Gemma 3 270M served by
llama-cpp-python on 127.0.0.1 (``tests/live/gemma_server.py``, started from the first
interpreter found that has llama-cpp-python: this one after ``make live``, or ``.venv-live``)
behind the live tier's proxy, at the example's temperature 0.

Run: .venv/bin/python benchmarks/bench_supervisor.py
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, table

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "supervisor" / "supervisor.py"


def _live_python() -> Path | None:
    """An interpreter with llama-cpp-python (``make live`` installs it into ``.venv``)."""
    if importlib.util.find_spec("llama_cpp") is not None:
        return Path(sys.executable)
    legacy = ROOT / ".venv-live" / "bin" / "python"
    return legacy if legacy.exists() else None


LIVE_PYTHON = _live_python()
LIVE_TIER = ROOT / "tests" / "live"
REPLAYS = 15
FRESH_PROCESSES = 3
LIVE_RUNS = 5
#: Runs in ``.venv-live``: starts the server, prints its URL, stops it when stdin closes.
SERVER_SCRIPT = f"""
import sys
sys.path.insert(0, {str(LIVE_TIER)!r})
from gemma_server import running_server
with running_server() as url:
    print(url, flush=True)
    sys.stdin.read()
"""


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("supervisor_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


class CountCalls(BaseCallbackHandler):
    """Counts chat-model calls of a live run."""

    def __init__(self) -> None:
        self.calls = 0

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1


def replay(example: ModuleType) -> tuple[list[float], int]:
    """Graph-run seconds of repeated replays in this process, and the calls each replays."""
    example.run()  # first use: imports and wrapping
    results = [example.run() for _ in range(REPLAYS)]
    assert all(r.live_calls == 0 for r in results)
    return [r.seconds for r in results], results[0].replayed


def fresh_processes() -> list[float]:
    """Wall time of the whole example program (``make demo``), each in a new process."""
    times = []
    for _ in range(FRESH_PROCESSES):
        start = time.perf_counter()
        subprocess.run([sys.executable, str(EXAMPLE)], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


@contextmanager
def gemma() -> Iterator[str]:
    """The local Gemma server (behind the live tier's proxy) for the block."""
    server = subprocess.Popen(
        [str(LIVE_PYTHON), "-c", SERVER_SCRIPT],  # only called when it was found
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        url = server.stdout.readline().strip()
        if not url:
            raise RuntimeError("the Gemma server did not start (see the log it names)")
        sys.path.insert(0, str(LIVE_TIER))
        from null_content_proxy import proxied

        with proxied(url) as base_url:
            yield base_url
    finally:
        server.stdin.close()
        server.wait(timeout=60)


def live(example: ModuleType) -> tuple[list[float], list[int]]:
    """Seconds and model calls of the graph run live against Gemma, no cassette anywhere."""
    times, calls = [], []
    with gemma() as base_url:
        graph = example.build_graph(base_url)
        for index in range(LIVE_RUNS + 1):
            counter = CountCalls()
            start = time.perf_counter()
            graph.invoke(
                {"messages": [HumanMessage(example.QUESTION)]}, config={"callbacks": [counter]}
            )
            if index:  # the first run warms the server's prompt cache and our imports
                times.append(time.perf_counter() - start)
                calls.append(counter.calls)
    return times, calls


def main() -> None:
    print("## The example supervisor graph, whole run\n")
    if not EXAMPLE.exists():
        print(f"(no {EXAMPLE.relative_to(ROOT)} yet: not measured)")
        return
    example = load_example()
    replay_times, replayed = replay(example)
    fresh = fresh_processes()
    t_replay = statistics.median(replay_times)
    rows = [
        [
            f"replay from cassette (graph run, median of {REPLAYS})",
            fmt(t_replay),
            f"{replayed} replayed, 0 live",
            "",
        ],
        [
            f"replay, whole program in a fresh process (median of {FRESH_PROCESSES})",
            fmt(statistics.median(fresh)),
            "imports + load + run",
            "",
        ],
    ]
    if LIVE_PYTHON is not None:
        live_times, calls = live(example)
        t_live = statistics.median(live_times)
        rows.append(
            [
                f"live against local Gemma 3 270M (graph run, median of {LIVE_RUNS})",
                fmt(t_live),
                f"{min(calls)}-{max(calls)} live model calls",
                f"{t_live / t_replay:,.0f}x",
            ]
        )
        rows[0][3] = "1x"
    else:
        rows.append(["live against local Gemma", "not measured", "no llama-cpp-python", ""])
    print(table(["run", "time", "model calls", "live ÷ replay"], rows))


if __name__ == "__main__":
    main()
