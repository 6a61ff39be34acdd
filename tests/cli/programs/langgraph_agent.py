"""A user's LangGraph agent, as they would write it (no chaincassette anywhere)."""

import os
import sys

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent


@tool
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"12C and sunny in {city}"


model = ChatOpenAI(
    model="gpt-4o-mini", temperature=0, base_url=os.environ["AGENT_BASE_URL"], max_retries=0
)
agent = create_react_agent(model, [get_weather])
question = sys.argv[1]
result = agent.invoke({"messages": [("user", question)]})
for message in result["messages"]:
    calls = [(c["name"], c["args"]) for c in getattr(message, "tool_calls", [])]
    print(f"{message.type}: {message.content} {calls if calls else ''}".rstrip())
# the streaming path too
for chunk, _ in agent.stream(
    {"messages": [("user", question + " (streamed)")]}, stream_mode="messages"
):
    if chunk.content:
        print("chunk:", chunk.content)
