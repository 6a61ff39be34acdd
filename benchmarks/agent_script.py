"""The script of the benchmark agents' model: a few tool calls, then an answer.

One pure function, so the fake OpenAI server (``fake_openai.py``) and the scripted chat
model of the suite's floor (``suite_project.py``) take exactly the same steps: each tool is
called in turn with the city of the user's question until ``TOOL_CALLS`` results are in the
conversation, then the model answers with what the tools said.
"""

from __future__ import annotations

import re
from typing import Any

ANSWER = "Paris is sunny today, 21 °C, with a light breeze from the west."
"""The answer to a request that offers no tools."""
TOOL_CALLS = 4
"""Tool calls before the answer: an agent run makes ``TOOL_CALLS + 1`` model calls."""


def city_in(text: str) -> str:
    found = re.search(r"in ([A-Z][a-z]+)", text)
    return found.group(1) if found else "Paris"


def next_step(
    user_text: str, tool_results: list[str], tool_names: list[str]
) -> tuple[str, dict[str, Any]] | str:
    """``(tool name, arguments)`` for the next tool call, or the answer's text."""
    if not tool_names:
        return ANSWER
    if tool_names and len(tool_results) < TOOL_CALLS:
        return tool_names[len(tool_results) % len(tool_names)], {"city": city_in(user_text)}
    return "Here is what I found: " + " ".join(tool_results)
