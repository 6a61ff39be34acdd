"""A user's LlamaIndex agent, as they would write it (no chaincassette anywhere)."""

import asyncio
import os
import sys

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.llms.openai import OpenAI


def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"12C and sunny in {city}"


llm = OpenAI(
    model="gpt-4o-mini", temperature=0, api_base=os.environ["AGENT_BASE_URL"], max_retries=0
)
agent = FunctionAgent(tools=[get_weather], llm=llm, system_prompt="You answer weather questions.")


async def main() -> None:
    response = await agent.run(sys.argv[1])
    print("answer:", str(response))
    print("direct:", llm.complete("Say hello in Rome").text)


asyncio.run(main())
