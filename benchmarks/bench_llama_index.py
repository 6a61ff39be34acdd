"""Per-call replay time of LlamaIndex ``CassetteLLM.chat`` against a bare ``MockLLM.chat``.

Both answer the same conversations (1, 10 and 50 messages) with the same text: the
``CassetteLLM`` replays what it recorded from that very ``MockLLM``, so the difference
is what the cassette costs per call (request building, key, lookup, decoding).

Run: .venv/bin/python benchmarks/bench_llama_index.py
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM
from llama_index.core.llms.mock import MockLLM

sys.path.insert(0, str(Path(__file__).parent))
from _timing import Variant, fmt, interleaved_medians, table

from chaincassette import Cassette
from chaincassette.integrations.llama_index import CassetteLLM

SIZES = (1, 10, 50)
#: Issue 9: replay within 1.3x of the bare ``MockLLM.chat`` (it was 1.5x before).
TARGET = 1.3
#: MockLLM answers ``max_tokens`` words: a fixed answer whatever the prompt size.
ANSWER_WORDS = 16


def conversation(n: int) -> list[ChatMessage]:
    """``n`` messages: a system prompt, then turns, ending with the user (as in LangChain's)."""
    if n == 1:
        return [ChatMessage(role=MessageRole.USER, content="What is the weather in Paris today?")]
    messages = [ChatMessage(role=MessageRole.SYSTEM, content="You are a concise travel assistant.")]
    for i in range(1, n):
        if (n - i) % 2:
            text = f"Question {i}: what should I see in Paris on day {i}?"
            messages.append(ChatMessage(role=MessageRole.USER, content=text))
        else:
            text = f"On day {i}, visit the Louvre, then walk along the Seine."
            messages.append(ChatMessage(role=MessageRole.ASSISTANT, content=text))
    return messages


def _chat(llm: LLM, messages: list[ChatMessage], expected: str) -> Callable[[], object]:
    def call() -> object:
        answer = llm.chat(messages)
        assert answer.message.content == expected, answer.message.content
        return answer

    return call


def measure(*, repeat: int = 21, number: int = 100) -> dict[int, dict[str, float]]:
    """Median seconds per ``chat`` for the bare mock and the replaying wrapper, per size."""
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        path = Path(tmp_name) / "llama_index.yaml"
        recorder = CassetteLLM(MockLLM(max_tokens=ANSWER_WORDS), cassette=path, mode="record")
        for n in SIZES:
            recorder.chat(conversation(n))
        recorder.cassette.save()
        mock = MockLLM(max_tokens=ANSWER_WORDS)
        expected = str(mock.chat(conversation(1)).message.content)
        for n in SIZES:
            messages = conversation(n)

            @contextmanager
            def bare(messages: list[ChatMessage] = messages) -> Iterator[Callable[[], object]]:
                yield _chat(mock, messages, expected)

            @contextmanager
            def replay(messages: list[ChatMessage] = messages) -> Iterator[Callable[[], object]]:
                cassette = Cassette(path, mode="replay", allow_playback_repeats=True)
                yield _chat(
                    CassetteLLM(MockLLM(max_tokens=ANSWER_WORDS), cassette=cassette),
                    messages,
                    expected,
                )

            variants: dict[str, Variant] = {"mock": bare, "cassette": replay}
            results[n] = interleaved_medians(variants, repeat=repeat, number=number)
    return results


def report(results: dict[int, dict[str, float]]) -> str:
    rows = []
    for n in SIZES:
        r = results[n]
        ratio = r["cassette"] / r["mock"]
        rows.append(
            [
                f"{n}",
                fmt(r["mock"]),
                fmt(r["cassette"]),
                f"{ratio:.2f}x",
                "met" if ratio <= TARGET else "missed",
            ]
        )
    header = [
        "messages",
        "MockLLM.chat",
        "CassetteLLM.chat (replay)",
        "ratio",
        f"target ≤ {TARGET}x",
    ]
    return table(header, rows)


def main() -> None:
    print("## LlamaIndex `chat`, per call\n")
    print(report(measure()))


if __name__ == "__main__":
    main()
