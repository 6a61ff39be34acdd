"""Instructions per replayed call, counted by callgrind: the per-call targets of
``bench_langchain.py`` and ``bench_llama_index.py`` without the machine's load in them.

Each (benchmark, size, variant) runs in its own process, built by the benchmark's own code
(the same models, cassettes and conversations), warmed with 20 calls, then 100 calls
counted. The ratios are the same ones the timed benchmarks report:

- LangChain: ``CassetteCache`` (the default, provider-boundary path) ÷ ``InMemoryCache``,
  both hit on every call (target ≤ 1.5x);
- LlamaIndex: ``CassetteLLM(MockLLM).chat`` replaying ÷ a bare ``MockLLM.chat`` (≤ 1.3x).

Both replay one conversation again and again, as the timed benchmarks do: a cassette that
has keyed a request before serves it from what it remembers (``request_keys``). The
"first time" column counts the same calls with the cassette's keyed requests forgotten
before each: what a request costs the first time a cassette meets it.

Run: .venv/bin/python benchmarks/instructions_per_call.py
Needs valgrind and a C compiler (``cc``); a few seconds per row.
"""

from __future__ import annotations

import argparse
import ctypes
import re
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import table
from instructions import counted, measuring_helper

from chaincassette import Cassette
from chaincassette.integrations.langchain import CassetteCache
from chaincassette.integrations.llama_index import CassetteLLM
from chaincassette.request_keys import RequestKeys

CALLS = 100
SIZES = (1, 10, 50)
#: benchmark: (base variant, replay variant, target)
PAIRS = {
    "langchain": ("InMemoryCache", "CassetteCache", 1.5),
    "llama_index": ("MockLLM.chat", "CassetteLLM.chat", 1.3),
}


def _setup(bench: str, variant: str, n: int, tmp: Path, stack: ExitStack) -> Callable[[], object]:
    """The benchmark's own call for ``variant``; "first time": its cassette forgets the
    requests it keyed before every call."""
    replay = variant.split(",")[0]
    cassette = None
    if bench == "langchain":
        import bench_langchain as lc
        from langchain_core.caches import InMemoryCache

        lc.record(tmp)
        messages = lc.prompt(n)
        if replay == "InMemoryCache":
            return stack.enter_context(lc._cached(InMemoryCache(), messages)())
        cassette = Cassette(tmp / "langchain.yaml", mode="replay", allow_playback_repeats=True)
        cache = CassetteCache(cassette)
        stack.callback(cache.close)
        call = lc._invoke(lc.FixedChat(cache=cache), messages)
    else:
        import bench_llama_index as li
        from llama_index.core.llms.mock import MockLLM

        path = tmp / "llama_index.yaml"
        recorder = CassetteLLM(MockLLM(max_tokens=li.ANSWER_WORDS), cassette=path, mode="record")
        recorder.chat(li.conversation(n))
        recorder.cassette.save()
        expected = str(MockLLM(max_tokens=li.ANSWER_WORDS).chat(li.conversation(1)).message.content)
        if replay == "MockLLM.chat":
            return li._chat(MockLLM(max_tokens=li.ANSWER_WORDS), li.conversation(n), expected)
        cassette = Cassette(path, mode="replay", allow_playback_repeats=True)
        llm = CassetteLLM(MockLLM(max_tokens=li.ANSWER_WORDS), cassette=cassette)
        call = li._chat(llm, li.conversation(n), expected)
    if not variant.endswith("first time"):
        return call

    def first_time() -> object:
        cassette._keys = RequestKeys(cassette.pipeline)  # what it keyed before, forgotten
        return call()

    return first_time


def child(bench: str, variant: str, n: int, helper: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        call = _setup(bench, variant, n, Path(tmp), stack)
        for _ in range(20):
            call()
        measure = ctypes.CDLL(str(helper))
        measure.measure_start()
        for _ in range(CALLS):
            call()
        measure.measure_stop()


def count(bench: str, variant: str, n: int, helper: Path, folder: Path) -> float:
    name = re.sub(r"\W+", "-", variant)
    out = folder / f"callgrind-{bench}-{n}-{name}.out"
    return counted(out, [__file__, "--child", bench, variant, str(n), str(helper)]) / CALLS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        bench, variant, n, helper = args.child
        child(bench, variant, int(n), Path(helper))
        return
    with measuring_helper() as (folder, helper):
        for bench, (base, replay, target) in PAIRS.items():
            rows = []
            for n in SIZES:
                b, r, first = (
                    count(bench, v, n, helper, folder)
                    for v in (base, replay, f"{replay}, first time")
                )
                rows.append(
                    [str(n), f"{b / 1e3:.0f} K", f"{r / 1e3:.0f} K", f"{r / b:.3f}x",
                     "met" if r / b <= target else "missed", f"{first / b:.3f}x"]
                )  # fmt: skip
            print(f"## {bench}: instructions per call ({CALLS} calls counted)\n")
            header = ["messages", base, f"{replay} (replay)", "ratio", f"target ≤ {target}x"]
            print(table([*header, "first time ÷ base"], rows))
            print()


if __name__ == "__main__":
    main()
