"""Per-call replay time of a LangChain chat-model ``invoke``: CassetteCache against its peers.

Every variant answers the same prompts (1, 10 and 50 messages) with the same message:

- no cache: a chat model that returns a fixed ``AIMessage`` at once (the floor);
- ``InMemoryCache`` and langchain-community ``SQLiteCache`` (temp file) on that model;
- ``CassetteCache`` replaying that model's calls from a cassette (the default, served at
  the provider boundary, and ``stream_replay=False``, served through LangChain's cache hook);
- ``ChatOpenAI`` replayed from HTTP by vcrpy, recorded once against a local fake
  OpenAI-compatible server that is stopped before the replay.

Run: .venv/bin/python benchmarks/bench_langchain.py
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import vcr
from langchain_community.cache import SQLiteCache
from langchain_core.caches import BaseCache, InMemoryCache
from langchain_core.globals import set_llm_cache
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_openai import ChatOpenAI

sys.path.insert(0, str(Path(__file__).parent))
from _timing import Variant, fmt, interleaved_medians, table
from fake_openai import ANSWER, serving

from chaincassette import Cassette
from chaincassette.integrations.langchain import CassetteCache

SIZES = (1, 10, 50)
MODEL = "gpt-4o-mini"
#: vcrpy matches on the body too: without it every prompt would replay the first recording.
VCR_MATCH_ON = ("method", "scheme", "host", "port", "path", "query", "body")


class FixedChat(BaseChatModel):
    """Answers every prompt at once with the same message: no provider, no I/O."""

    model_name: str = MODEL
    temperature: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "fixed-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature}

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        message = AIMessage(
            content=ANSWER,
            response_metadata={"model_name": self.model_name, "finish_reason": "stop"},
            usage_metadata={"input_tokens": 40, "output_tokens": 14, "total_tokens": 54},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def prompt(n: int) -> list[BaseMessage]:
    """A conversation of ``n`` messages: a system prompt, then turns, ending with the user."""
    if n == 1:
        return [HumanMessage("What is the weather in Paris today?")]
    messages: list[BaseMessage] = [SystemMessage("You are a concise travel assistant.")]
    for i in range(1, n):
        if (n - i) % 2:
            messages.append(HumanMessage(f"Question {i}: what should I see in Paris on day {i}?"))
        else:
            messages.append(AIMessage(f"On day {i}, visit the Louvre, then walk along the Seine."))
    return messages


def _invoke(model: BaseChatModel, messages: list[BaseMessage]) -> Callable[[], object]:
    def call() -> object:
        answer = model.invoke(messages)
        assert answer.content == ANSWER, answer.content
        return answer

    return call


def _cached(cache: BaseCache | bool, messages: list[BaseMessage]) -> Variant:
    model = FixedChat(cache=cache)

    @contextmanager
    def variant() -> Iterator[Callable[[], object]]:
        yield _invoke(model, messages)

    return variant


def _cassette_cache(path: Path, messages: list[BaseMessage], stream_replay: bool) -> Variant:
    @contextmanager
    def variant() -> Iterator[Callable[[], object]]:
        cache = CassetteCache(
            Cassette(path, mode="replay", allow_playback_repeats=True), stream_replay=stream_replay
        )
        try:
            yield _invoke(FixedChat(cache=cache), messages)
        finally:
            cache.close()

    return variant


def _vcr_openai(path: Path, base_url: str, messages: list[BaseMessage]) -> Variant:
    model = ChatOpenAI(model=MODEL, temperature=0.0, base_url=base_url, api_key="sk-bench")

    @contextmanager
    def variant() -> Iterator[Callable[[], object]]:
        with vcr.use_cassette(
            str(path), record_mode="none", match_on=VCR_MATCH_ON, allow_playback_repeats=True
        ):
            yield _invoke(model, messages)

    return variant


def record(tmp: Path) -> str:
    """Record the CassetteCache and vcrpy cassettes once; returns the (now dead) server URL."""
    cache = CassetteCache(tmp / "langchain.yaml", mode="record")
    model = FixedChat(cache=cache)
    for n in SIZES:
        model.invoke(prompt(n))
    cache.close()
    with serving() as base_url:
        client = ChatOpenAI(model=MODEL, temperature=0.0, base_url=base_url, api_key="sk-bench")
        with vcr.use_cassette(str(tmp / "openai.yaml"), record_mode="all", match_on=VCR_MATCH_ON):
            for n in SIZES:
                assert client.invoke(prompt(n)).content == ANSWER
    return base_url


NAMES = {
    "floor": "no cache (floor)",
    "memory": "InMemoryCache",
    "sqlite": "SQLiteCache",
    "cassette": "CassetteCache",
    "cassette_hook": "CassetteCache(stream_replay=False)",
    "vcr": "ChatOpenAI + vcrpy",
}


def measure(*, repeat: int = 9, number: int = 100) -> dict[int, dict[str, float]]:
    """Median seconds per ``invoke`` for each variant and prompt size."""
    set_llm_cache(None)
    # SQLiteCache warns on every hit that a default of ``loads`` will change
    warnings.filterwarnings("ignore", message="The default value of `allowed_objects`")
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        base_url = record(tmp)
        sqlite = SQLiteCache(database_path=str(tmp / "langchain.db"))
        for n in SIZES:
            messages = prompt(n)
            variants = {
                "floor": _cached(False, messages),
                "memory": _cached(InMemoryCache(), messages),
                "sqlite": _cached(sqlite, messages),
                "cassette": _cassette_cache(tmp / "langchain.yaml", messages, True),
                "cassette_hook": _cassette_cache(tmp / "langchain.yaml", messages, False),
                "vcr": _vcr_openai(tmp / "openai.yaml", base_url, messages),
            }
            results[n] = interleaved_medians(variants, repeat=repeat, number=number)
    return results


def report(results: dict[int, dict[str, float]]) -> str:
    header = ["variant", *(f"{n} msg" for n in SIZES), *(f"÷ floor ({n})" for n in SIZES)]
    rows = []
    for key, name in NAMES.items():
        times = [results[n][key] for n in SIZES]
        ratios = [f"{results[n][key] / results[n]['floor']:.2f}x" for n in SIZES]
        rows.append([name, *(fmt(t) for t in times), *ratios])
    lines = [table(header, rows), ""]
    targets = []
    for n in SIZES:
        r = results[n]
        vs_memory = r["cassette"] / r["memory"]
        vs_vcr = r["vcr"] / r["cassette"]
        targets.append(
            [
                f"{n}",
                f"{vs_memory:.2f}x",
                "met" if vs_memory <= 1.5 else "missed",
                f"{r['cassette_hook'] / r['memory']:.2f}x",
                f"{r['sqlite'] / r['cassette']:.2f}x",
                f"{vs_vcr:.1f}x",
                "met" if vs_vcr >= 5 else "missed",
            ]
        )
    header = [
        "messages",
        "CassetteCache ÷ InMemoryCache",
        "target ≤ 1.5x",
        "(stream_replay=False) ÷ InMemoryCache",
        "SQLiteCache ÷ CassetteCache",
        "vcrpy ÷ CassetteCache",
        "target ≥ 5x",
    ]
    lines.append(table(header, targets))
    return "\n".join(lines)


def main() -> None:
    print("## LangChain chat model `invoke`, per call\n")
    print(report(measure()))


if __name__ == "__main__":
    main()
