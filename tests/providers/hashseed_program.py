"""A LangGraph agent whose tools come from a set, so their order follows ``PYTHONHASHSEED``.

``python hashseed_program.py MODE CASSETTE URL``: frameworks (langgraph-supervisor's
handoff tools, for one) build tool lists from sets; the order of the schemas sent to the
model then differs between processes. Prints the tool order this process used and what
the agent answered, as one JSON object.
"""

from __future__ import annotations

import json
import sys
import warnings

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent

from chaincassette import use_cassette

warnings.filterwarnings("ignore")


@tool
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"{city}: 12C and sunny"


@tool
def get_time(city: str) -> str:
    """The local time in a city."""
    return f"{city}: 12:00"


@tool
def get_population(city: str) -> str:
    """How many people live in a city."""
    return f"{city}: 2 million"


@tool
def get_mayor(city: str) -> str:
    """Who runs a city."""
    return f"{city}: someone"


BY_NAME = {t.name: t for t in (get_weather, get_time, get_population, get_mayor)}


def main() -> None:
    mode, cassette, url = sys.argv[1:4]
    names = set(BY_NAME)  # iteration order depends on the process's string hash seed
    tools = [BY_NAME[name] for name in names]
    model = ChatOpenAI(model="gpt-4o-mini", base_url=f"{url}/v1", api_key="sk-test", max_retries=0)
    with use_cassette(cassette, mode=mode):
        result = create_react_agent(model, tools).invoke(
            {"messages": [("user", "Weather and time in Paris, then the weather in Lyon?")]}
        )
    seen = [
        [m.type, m.content, [(c["name"], c["args"]) for c in getattr(m, "tool_calls", [])]]
        for m in result["messages"]
    ]
    print(json.dumps({"order": [t.name for t in tools], "messages": seen}))


if __name__ == "__main__":
    main()
