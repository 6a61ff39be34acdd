"""Engine benchmarks: cassette load time against the bare parsers, lookup time against size.

Run: .venv/bin/python benchmarks/bench_core.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from _timing import Variant, fmt, interleaved_medians, table

from chaincassette import Cassette


def chat_request(i: int) -> dict[str, Any]:
    return {
        "kind": "chat",
        "model": "gpt-4o-mini",
        "params": {"temperature": 0.2},
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": "You are a helpful research assistant."},
            {"role": "user", "content": f"Question number {i}: what is the weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": f"call_{i}", "name": "get_weather", "args": {"city": "Paris"}}
                ],
            },
            {"role": "tool", "content": "Sunny, 21 C", "tool_call_id": f"call_{i}"},
        ],
    }


def response(i: int) -> dict[str, Any]:
    return {
        "generations": [
            {
                "text": f"It is sunny in Paris ({i}).\nEnjoy the day!",
                "message": {
                    "type": "ai",
                    "content": f"It is sunny in Paris ({i}).\nEnjoy the day!",
                    "usage_metadata": {"input_tokens": 60, "output_tokens": 12, "total_tokens": 72},
                    "response_metadata": {"model_name": "gpt-4o-mini", "finish_reason": "stop"},
                },
            }
        ]
    }


def build(path: Path, n: int) -> None:
    cassette = Cassette(path, mode="record")
    for i in range(n):
        cassette.begin(chat_request(i)).answer(lambda i=i: response(i))
    cassette.save()


def load_rows(tmp: Path) -> list[list[str]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    rows = []
    for n in (50, 1000, 10000):
        for fmt_name, suffix in (("YAML", "yaml"), ("JSON", "json")):
            path = tmp / f"c{n}.{suffix}"
            build(path, n)
            repeat = 3 if n == 10000 and suffix == "yaml" else 7

            def ours(path: Path = path) -> Iterator[Callable[[], object]]:
                yield lambda: Cassette(path).load()

            def bare(path: Path = path, suffix: str = suffix) -> Iterator[Callable[[], object]]:
                if suffix == "yaml":
                    yield lambda: yaml.load(path.read_text(), Loader=loader)
                else:
                    yield lambda: json.loads(path.read_text())

            # alternated in one run, so that load from other processes hits both alike
            times = interleaved_medians(
                {"ours": contextmanager(ours), "bare": contextmanager(bare)},
                repeat=repeat,
                number=1,
                warmup=n < 10000,
            )
            t_ours, t_bare = times["ours"], times["bare"]
            size = path.stat().st_size / 1024
            rows.append(
                [
                    f"{n:,}",
                    fmt_name,
                    f"{size:,.0f} KiB",
                    fmt(t_ours),
                    fmt(t_bare),
                    f"{t_ours / t_bare:.2f}x",
                ]
            )
    return rows


def lookup_rows(tmp: Path) -> list[list[str]]:
    """Both cassettes are loaded before either is timed, and timed in alternation.

    Timing the small one before the large one is even loaded would charge the large
    one for the bigger heap the garbage collector then walks, not for the lookup.
    """
    cassettes = {}
    for n in (10, 10000):
        path = tmp / f"lookup{n}.json"
        build(path, n)
        cassettes[n] = Cassette(path, allow_playback_repeats=True)
        cassettes[n].load()

    def variant(n: int) -> Variant:
        probe = chat_request(n // 2)

        @contextmanager
        def lookup() -> Iterator[Callable[[], object]]:
            yield lambda: cassettes[n].begin(probe)

        return lookup

    times = interleaved_medians({n: variant(n) for n in cassettes}, repeat=7, number=2000)
    rows = [[f"{n:,}", fmt(t)] for n, t in times.items()]
    rows.append(["ratio 10,000 / 10", f"{times[10000] / times[10]:.2f}x"])
    return rows


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        print("## Load time (cassette file → ready to replay)\n")
        header = ["interactions", "format", "size", "chaincassette", "bare parser", "ratio"]
        print(table(header, load_rows(tmp)))
        print("\n## Lookup time against cassette size (normalize + key + FIFO pop)\n")
        print(table(["interactions", "per lookup"], lookup_rows(tmp)))


if __name__ == "__main__":
    main()
