"""A user's LangGraph agent whose tool calls the OpenAI SDK itself (no chaincassette anywhere).

The agent's model is ``ChatOpenAI``; its ``summarise`` tool asks
``openai.OpenAI().chat.completions.create`` for a summary, then streams a title with
``chat.completions.stream(...)``. Both reach ``OPENAI_BASE_URL``.
"""

import json
import sys

import openai
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent

sdk = openai.OpenAI(max_retries=0)


@tool
def summarise(topic: str) -> str:
    """Summarise what is known about a topic."""
    completion = sdk.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "system", "content": "You summarise in one line."},
            {"role": "user", "content": f"Summarise {topic}"},
        ],
        temperature=0,
    )
    with sdk.chat.completions.stream(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": f"A title for {topic}"}],
        stream_options={"include_usage": True},
    ) as stream:
        title = stream.get_final_completion()
    tokens = title.usage.total_tokens if title.usage else None
    print(f"tool saw {completion.id} and {title.id} ({tokens} tokens)")  # ids: not for the model
    return json.dumps(
        {
            "summary": completion.choices[0].message.content,
            "title": title.choices[0].message.content,
        }
    )


model = ChatOpenAI(model="gpt-4o-mini", temperature=0, max_retries=0)
agent = create_react_agent(model, [summarise])
result = agent.invoke({"messages": [("user", sys.argv[1])]})
for message in result["messages"]:
    calls = [(c["name"], c["args"]) for c in getattr(message, "tool_calls", [])]
    print(f"{message.type}: {message.content} {calls if calls else ''}".rstrip())
