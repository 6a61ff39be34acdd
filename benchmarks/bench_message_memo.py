"""Per call: the canonical forms of a 50-message agent conversation when every message is
already kept (``integrations/langchain/messages.canonical_message``, all memo hits), and
the same computed afresh (LangChain's ``dumps``, then ``message_from_lc``) for scale.

Run: .venv/bin/python benchmarks/bench_message_memo.py
"""

from __future__ import annotations

import json
import statistics
import timeit
from collections.abc import Callable

from langchain_core.load import dumps
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from chaincassette.integrations.langchain.messages import canonical_message
from chaincassette.integrations.langchain.requests import message_from_lc


def conversation(size: int = 50) -> list[BaseMessage]:
    """An agent's history: a question, a tool call, its result, an answer, again and again."""
    messages: list[BaseMessage] = [SystemMessage("You are a helpful assistant. Be brief.")]
    for turn in range(size):
        messages += [
            HumanMessage(f"Question {turn}: what is the weather in city {turn}?"),
            AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "get_weather",
                        "args": {"city": f"c{turn}", "days": 3},
                        "id": f"c{turn}",
                    }
                ],
                response_metadata={"model_name": "gpt-4o", "finish_reason": "tool_calls"},
                id=f"run-{turn}",
                usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
            ),
            ToolMessage(f"Sunny {turn}", tool_call_id=f"c{turn}"),
            AIMessage(
                f"It is sunny in c{turn}.",
                response_metadata={"model_name": "gpt-4o", "finish_reason": "stop"},
                id=f"run-{turn}b",
            ),
        ]
    return messages[:size]


def per_call(work: Callable[[], object], number: int) -> float:
    runs = [timeit.timeit(work, number=number) / number for _ in range(7)]
    return statistics.median(runs) * 1e6


def main() -> None:
    messages = conversation()
    for message in messages:
        canonical_message(message)
    kept = per_call(lambda: [canonical_message(m) for m in messages], 500)
    fresh = per_call(lambda: [message_from_lc(json.loads(dumps(m))) for m in messages], 20)
    print(f"{len(messages)} messages, all kept: {kept:.1f} us per call (median of 7)")
    print(f"{len(messages)} messages, computed afresh: {fresh:.1f} us per call (median of 7)")


if __name__ == "__main__":
    main()
