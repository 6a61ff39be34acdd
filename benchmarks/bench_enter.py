"""Entering and leaving ``use_cassette``: what a block costs around the calls it replays.

Every integration is imported first (LangChain, LangGraph, LlamaIndex, the OpenAI and
Anthropic SDKs, httpx), so every adapter activates in each block: the worst case. The
class patches are installed by the first block (once per process); what is timed is what
each later block costs:

- ``use_cassette(path)``: a fresh ``Cassette`` of a recorded one-call cassette, entered and
  left with no call (the file is read on the first call, so not here);
- ``use_cassette(path)``, the call replayed: the same block replaying its call, against that
  call replayed inside an already open block (the difference is what the block's entry,
  the file's load, the trace's comparison and the exit cost);
- ``use_cassette(path)`` in replay mode with no key set (the placeholder keys are set
  and unset around the block, as outside a pytest session).

Median of interleaved rounds (``_timing.interleaved_medians``), CPU time of this process.
Target (issue 28): entering and leaving ``use_cassette`` ≤ 2 ms.

Run: .venv/bin/python benchmarks/bench_enter.py
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, interleaved_medians, table

FRAMEWORKS = ("langchain_core", "langgraph", "llama_index.core", "openai", "anthropic", "httpx")
TARGET_MS = 2.0


def record(folder: Path) -> tuple[Path, Any, Any]:
    """A cassette of one ``ChatOpenAI`` call (the suite's system prompt and question), recorded
    against the fake server; the model and its input."""
    import suite_project
    from fake_openai import serving
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI

    from chaincassette import use_cassette

    app: dict[str, Any] = {}
    exec(compile(suite_project.APP, "app.py", "exec"), app)  # the suite's prompt and question
    path = folder / "call.yaml"
    messages = [SystemMessage(app["SYSTEM"]), HumanMessage(app["question"](1))]
    with serving() as url:
        model = ChatOpenAI(model="gpt-4o-mini", temperature=0, base_url=url, api_key="sk-x")
        with use_cassette(path, mode="record"):
            model.invoke(messages)
    return path, model, messages


def main() -> None:
    # the open block replays its one call again and again: its trace diverges, by design
    warnings.filterwarnings("ignore", message=".*replay diverged from the recording")
    for name in FRAMEWORKS:
        importlib.import_module(name)
    from chaincassette import Cassette, use_cassette

    with tempfile.TemporaryDirectory() as tmp:
        path, model, first = record(Path(tmp))
        with use_cassette(Cassette(path, mode="replay")):  # the patches, installed once
            model.invoke(first)
        os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-real-key-0"

        def block(call: Callable[[], object] | None = None) -> Callable[[], object]:
            def run() -> None:
                with use_cassette(Cassette(path, mode="replay", allow_playback_repeats=True)):
                    if call is not None:
                        call()

            return run

        @contextlib.contextmanager
        def variant(run: Callable[[], object]) -> Iterator[Callable[[], object]]:
            yield run

        @contextlib.contextmanager
        def in_open_block() -> Iterator[Callable[[], object]]:
            with use_cassette(Cassette(path, mode="replay", allow_playback_repeats=True)):
                yield lambda: model.invoke(first)

        @contextlib.contextmanager
        def without_key() -> Iterator[Callable[[], object]]:
            key = os.environ.pop("OPENAI_API_KEY")
            try:
                yield block()
            finally:
                os.environ["OPENAI_API_KEY"] = key

        times = interleaved_medians(
            {
                "enter + leave": lambda: variant(block()),
                "enter + first call + leave": lambda: variant(block(lambda: model.invoke(first))),
                "the first call, in an open block": in_open_block,
                "enter + leave, no key set": without_key,
            },
            repeat=9,
            number=200,
        )
    entry = times["enter + leave"]
    around = times["enter + first call + leave"] - times["the first call, in an open block"]
    rows = [[name, fmt(seconds)] for name, seconds in times.items()]
    rows.append(["block + load around one call (difference of the two rows above)", fmt(around)])
    verdict = (
        "met" if max(entry, times["enter + leave, no key set"]) <= TARGET_MS / 1e3 else "missed"
    )
    print("## Entering and leaving `use_cassette` (every integration imported)\n")
    print(table(["what", "per block"], rows))
    print()
    print(table(["target", "verdict"], [[f"enter + leave ≤ {TARGET_MS:g} ms", verdict]]))


if __name__ == "__main__":
    main()
