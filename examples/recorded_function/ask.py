"""The simplest use: a plain function around an SDK, recorded with ``@recorded``.

    python examples/recorded_function/ask.py            # replay, offline
    python examples/recorded_function/ask.py --record   # re-record against local Gemma

``ask()`` is an ordinary function that calls the ``openai`` SDK's
``chat.completions.create`` and returns plain JSON. ``@recorded`` keys each call on its
arguments (the client is left out with ``ignore_args``): inside ``use_cassette`` the
first call records the result, every later run gets it back without calling the SDK.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from openai import OpenAI

from chaincassette import recorded, use_cassette

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _live import OFFLINE_URL, example_main  # noqa: E402

CASSETTE = HERE / "cassette.yaml"
QUESTIONS = ["Name a colour of the sky.", "Say hello in French."]


@recorded(name="ask", ignore_args=["client"])
def ask(client: OpenAI, question: str, temperature: float = 0.9) -> dict[str, Any]:
    """One chat completion; returns what the caller needs as JSON (the answer and usage)."""
    response = client.chat.completions.create(
        model="gemma",
        messages=[{"role": "user", "content": question}],
        temperature=temperature,
        max_tokens=32,
    )
    return {
        "id": response.id,
        "answer": response.choices[0].message.content or "",
        "usage": response.usage.model_dump() if response.usage else None,
    }


def run(base_url: str = OFFLINE_URL, *, record: bool = False) -> dict[str, Any]:
    client = OpenAI(base_url=base_url, api_key="sk-local", max_retries=0)
    start = time.perf_counter()
    with use_cassette(CASSETTE, mode="record" if record else "replay") as cassette:
        started = time.perf_counter()
        answers = {question: ask(client, question) for question in QUESTIONS}
        seconds = time.perf_counter() - started
    return {
        "answers": answers,
        "replayed": cassette.stats.replayed,
        "live_calls": cassette.stats.recorded,
        "seconds": seconds,
        "total_seconds": time.perf_counter() - start,
    }


def report(result: dict[str, Any]) -> str:
    lines = [
        f"{question!r} -> {answer['answer'].strip()!r} ({answer['id']})"
        for question, answer in result["answers"].items()
    ]
    lines += [
        f"calls replayed: {result['replayed']}",
        f"live calls: {result['live_calls']}",
        f"time: {result['seconds']:.3f} s for the calls "
        f"({result['total_seconds']:.3f} s with use_cassette's setup)",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return example_main(__doc__, lambda url, record: report(run(url, record=record)), argv)


if __name__ == "__main__":
    sys.exit(main())
