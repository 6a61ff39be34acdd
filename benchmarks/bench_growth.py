"""How a tool agent's cassette grows with its turns, and what loading and replaying it cost.

The agent is LangGraph's ``create_react_agent`` over ``ScriptedProvider``, a chat model with
a provider's habits (random ``chatcmpl-…`` and ``call_…`` ids, timestamps, a fingerprint,
usage), three tools and a system prompt of a few lines. It calls one tool per turn until it
has made ``turns - 1`` calls, then answers: ``turns`` model calls in all. Each size is
recorded once (mode ``record``) into a temporary folder; the JSON file is the same recording
written as JSON; "v1" is the same recording in format version 1 (every request in full),
written by the version-1 layout kept below for comparison.

Measured, in one run:

- bytes and lines of each cassette, and the ratio of the 200-turn size to the 10-turn size;
- load: ``storage.read`` of each file (parse, validate, rebuild requests), median of 15
  rounds, every file loaded once per round after all are recorded (the v1 layout at 100
  and 200 turns: one round of its own, it takes seconds);
- whole replay of the 20-turn agent: a fresh ``Cassette`` object (read the file, keys,
  decode, the graph run) against the same graph run on ``ScriptedProvider`` with no
  cassette, from the YAML file and from the JSON one. A process keeps nothing between
  cassettes, so every run is what a fresh CI process meets.
  Each round runs every variant in turn (the order rotating between rounds),
  a warm call then ``REPLAY_RUNS`` timed ones. The ratio is paired: each round's time
  over the same round's run with no cassette, the median over rounds (the machine's speed
  drifts between rounds more than between neighbours in one).

Times are CPU seconds of the benchmark process (``time.process_time``), medians of rounds.

Run: .venv/bin/python benchmarks/bench_growth.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

warnings.filterwarnings("ignore", message=".*create_react_agent.*")
from langgraph.prebuilt import create_react_agent  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _timing import fmt, paired_ratios, table  # noqa: E402

from chaincassette import Cassette, storage, use_cassette  # noqa: E402

TURNS = (10, 20, 50, 100, 200)
SYSTEM = (
    "You are a careful research assistant for a logistics company.\n"
    "Look every figure up with the tools before you answer; never guess a number.\n"
    "When you have all the figures, answer in one short paragraph and name your sources."
)
QUESTION = "Collect the shipment records one by one and tell me which one was the heaviest."
LOAD_ROUNDS = 15
REPLAY_ROUNDS = 15
REPLAY_RUNS = 5
#: CPU seconds of this process: the shared 2-core machine ran at load average 10 to 27 while
#: this was measured, and wall time then mostly measures waiting for a core.
CLOCK = time.process_time


@tool
def lookup_shipment(number: int) -> str:
    """Look a shipment record up by its number."""
    return f"Shipment {number}: {40 + (number * 37) % 60} kg, from Rotterdam to Lyon."


@tool
def convert_units(value: float, unit: str) -> str:
    """Convert a weight to another unit (lb or t)."""
    return f"{value} kg is {value * 2.2046:.1f} lb" if unit == "lb" else f"{value / 1000} t"


@tool
def find_route(origin: str, destination: str) -> str:
    """Find the road route between two cities."""
    return f"{origin} to {destination}: 1,050 km by road."


TOOLS = [lookup_shipment, convert_units, find_route]


class ScriptedProvider(BaseChatModel):
    """Calls ``lookup_shipment`` once per turn, then answers; a provider's random ids and usage."""

    model: str = "gpt-4o-mini"
    temperature: float = 0.0
    turns: int = 10

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        return ["benchmarks", "bench_growth"]

    @property
    def _llm_type(self) -> str:
        return "scripted-provider"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "temperature": self.temperature}

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        calls = []
        text = ""
        if done < self.turns - 1:
            ident = f"call_{uuid.uuid4().hex[:24]}"
            calls = [{"name": "lookup_shipment", "args": {"number": done + 1}, "id": ident}]
        else:
            text = f"I looked up {done} shipments; the heaviest weighs 99 kg."
        usage = {"input_tokens": 40 * len(messages), "output_tokens": 12, "total_tokens": 0}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        response_id = f"chatcmpl-{uuid.uuid4().hex[:20]}"
        fingerprint = f"fp_{uuid.uuid4().hex[:8]}"
        message = AIMessage(
            content=text,
            tool_calls=calls,
            id=response_id,
            usage_metadata=usage,  # type: ignore[arg-type]
            response_metadata={
                "model_name": f"{self.model}-2024-07-18",
                "system_fingerprint": fingerprint,
                "created": int(time.time()),
                "finish_reason": "tool_calls" if calls else "stop",
            },
        )
        return ChatResult(
            generations=[ChatGeneration(message=message)],
            llm_output={"token_usage": usage, "model_name": self.model, "id": response_id},
        )


def build_agent(turns: int) -> Any:
    return create_react_agent(ScriptedProvider(turns=turns), TOOLS, prompt=SYSTEM)


def run_agent(agent: Any, turns: int) -> str:
    result = agent.invoke(
        {"messages": [("user", QUESTION)]}, config={"recursion_limit": 2 * turns + 10}
    )
    return str(result["messages"][-1].content)


def record(folder: Path, turns: int) -> Path:
    path = folder / f"agent_{turns}.yaml"
    agent = build_agent(turns)
    with use_cassette(path, mode="record") as cassette:
        run_agent(agent, turns)
    assert cassette.stats.recorded == turns, cassette.stats
    return path


class V1Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Version 1's style: block style everywhere, multi-line strings as literal blocks."""


V1Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
    ),
)


def v1_text(document: storage.CassetteDocument) -> str:
    """The same document in format version 1, laid out as version 1 wrote it (block style)."""
    plain = storage.expanded(document)
    plain["version"] = 1
    for item in plain["interactions"]:
        item.pop("response_hash", None)
    text = yaml.dump(
        plain,
        Dumper=V1Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000,
        default_flow_style=False,
        explicit_end=True,
    )
    return str(text)


def median_load(path: Path, fmt_name: str, rounds: int = LOAD_ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        start = CLOCK()
        storage.read(path, fmt_name)
        times.append(CLOCK() - start)
    return statistics.median(times)


def interleaved_loads(files: dict[str, tuple[Path, str]]) -> dict[str, float]:
    """Median load time of each file, the files loaded in turn in every round (the order
    rotating between rounds), so that a busy spell of the shared machine weighs on every
    size alike instead of on whichever size was being measured then."""
    times: dict[str, list[float]] = {name: [] for name in files}
    names = list(files)
    for index in range(LOAD_ROUNDS):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            path, fmt_name = files[name]
            start = CLOCK()
            storage.read(path, fmt_name)
            times[name].append(CLOCK() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def sizes_and_loads(folder: Path) -> tuple[list[list[str]], dict[str, float], dict[str, float]]:
    rows = []
    size: dict[str, float] = {}
    files: dict[str, tuple[Path, str]] = {}
    slow: dict[str, float] = {}
    for turns in TURNS:
        path = record(folder, turns)
        document = storage.read(path, "yaml")
        assert document is not None
        json_path = path.with_suffix(".json")
        json_path.write_text(storage.dumps(document, "json"))
        v1_path = folder / f"agent_{turns}.v1.yaml"
        v1_path.write_text(v1_text(document))
        for name, file in (("yaml", path), ("json", json_path), ("v1", v1_path)):
            size[f"{name}{turns}"] = file.stat().st_size
        files[f"yaml{turns}"] = (path, "yaml")
        files[f"json{turns}"] = (json_path, "json")
        if turns <= 50:
            files[f"v1{turns}"] = (v1_path, "yaml")
        else:
            slow[f"v1{turns}"] = median_load(v1_path, "yaml", 1)
    load = {**interleaved_loads(files), **slow}
    for turns in TURNS:
        path = folder / f"agent_{turns}.yaml"
        v1_path = folder / f"agent_{turns}.v1.yaml"
        rows.append(
            [
                str(turns),
                f"{size[f'yaml{turns}'] / 1024:,.1f} KB ({len(path.read_text().splitlines()):,} lines)",
                f"{size[f'json{turns}'] / 1024:,.1f} KB",
                f"{size[f'v1{turns}'] / 1024:,.1f} KB ({len(v1_path.read_text().splitlines()):,} lines)",
                fmt(load[f"yaml{turns}"]),
                fmt(load[f"json{turns}"]),
                fmt(load[f"v1{turns}"]),
            ]
        )
    return rows, size, load


def whole_replay(folder: Path, turns: int = 20) -> dict[str, dict[str, float]]:
    path = folder / f"agent_{turns}.yaml"
    agent = build_agent(turns)
    expected = run_agent(agent, turns)

    def no_cassette() -> None:
        run_agent(agent, turns)

    def replayed(source: Path) -> Callable[[], None]:
        def call() -> None:
            cassette = Cassette(source, mode="replay")  # fresh: load, keys, decode, run
            with use_cassette(cassette):
                assert run_agent(agent, turns) == expected
            assert cassette.stats.replayed == turns and cassette.stats.recorded == 0

        return call

    variants: dict[str, Callable[[], None]] = {
        "no cassette": no_cassette,
        "replay": replayed(path),
        "replay json": replayed(path.with_suffix(".json")),
    }
    rounds: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for index in range(REPLAY_ROUNDS):  # interleaved, the order rotating between rounds
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            call = variants[name]
            call()  # warm
            start = CLOCK()
            for _ in range(REPLAY_RUNS):
                call()
            rounds[name].append((CLOCK() - start) / REPLAY_RUNS)
    times = {name: statistics.median(values) for name, values in rounds.items()}
    return {"times": times, "ratios": paired_ratios(rounds, "no cassette")}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows, size, load = sizes_and_loads(folder)
        replay = whole_replay(folder)
        lines_20 = len((folder / "agent_20.yaml").read_text().splitlines())
    print("## Cassette growth with agent turns (format version 2)\n")
    print(
        table(
            [
                "turns",
                "YAML (v2)",
                "JSON (v2)",
                "YAML (v1 layout)",
                "load YAML",
                "load JSON",
                "load v1 YAML",
            ],
            rows,
        )
    )
    first, last = TURNS[0], TURNS[-1]
    ratio_rows = [
        [
            name,
            f"{size[f'{key}{last}'] / size[f'{key}{first}']:.1f}x",
            f"{load[f'{key}{last}'] / load[f'{key}{first}']:.1f}x",
        ]
        for name, key in (("YAML v2", "yaml"), ("JSON v2", "json"), ("YAML v1", "v1"))
    ]
    print()
    print(
        table(["file", f"size {last} ÷ {first} turns", f"load {last} ÷ {first} turns"], ratio_rows)
    )
    print()
    times, ratios = replay["times"], replay["ratios"]
    labels = {
        "no cassette": "ScriptedProvider, no cassette",
        "replay": "fresh Cassette, YAML file: read + keys + decode + run",
        "replay json": "the same, the JSON file",
    }
    print(
        table(
            ["20-turn agent, graph run", "time", "÷ no cassette"],
            [[label, fmt(times[name]), f"{ratios[name]:.2f}x"] for name, label in labels.items()],
        )
    )
    print(f"\n20-turn agent cassette: {lines_20} lines of YAML")


if __name__ == "__main__":
    main()
