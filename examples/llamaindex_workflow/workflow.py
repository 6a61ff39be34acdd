"""A LlamaIndex ``AgentWorkflow`` with a handoff between two agents, on a ``CassetteLLM``.

    python examples/llamaindex_workflow/workflow.py            # replay, offline
    python examples/llamaindex_workflow/workflow.py --record   # re-record against local Gemma

A ``concierge`` agent takes the question and hands it off to a ``weather_agent``, which
calls its tool and answers. Both agents share one LLM: llama-index's ``OpenAI`` client
wrapped in ``CassetteLLM``, which records each call into ``cassette.yaml`` once and
replays it afterwards; the workflow, the handoff and the tool calls run for real.

Shaped for the small local model it was recorded with (Gemma 3 270M behind
llama-cpp-python): tools are forced by name on an agent's first turn, the handoff tool's
``to_agent`` is an enum of the valid agents (the server turns the schema into a grammar),
and after a tool result the agent answers without tools.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from llama_index.core.agent.workflow import (
    AgentWorkflow,
    BaseWorkflowAgent,
    FunctionAgent,
    ToolCallResult,
)
from llama_index.core.agent.workflow.multi_agent_workflow import handoff
from llama_index.core.llms import ChatMessage, ChatResponse
from llama_index.core.tools import AsyncBaseTool, FunctionTool
from llama_index.llms.openai import OpenAI
from pydantic import Field, create_model

from chaincassette import Cassette
from chaincassette.integrations.llama_index import CassetteLLM

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _live import OFFLINE_URL, example_main  # noqa: E402

CASSETTE = HERE / "cassette.yaml"
QUESTION = "Should I pack an umbrella for London today?"

WEATHER = {"paris": "sunny, 21 C", "london": "light rain, 14 C", "berlin": "cloudy, 17 C"}


def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"Weather in {city}: {WEATHER.get(city.strip().lower(), 'partly cloudy, 18 C')}."


class ForcedToolAgent(FunctionAgent):
    """A ``FunctionAgent`` that forces one tool on its turn, then answers without tools.

    Stock ``FunctionAgent`` forces ``initial_tool_choice`` only right after the user's
    message, and afterwards offers every tool with ``tool_choice="auto"``, which a 270M
    model answers by calling the tool again and again. Here the agent forces
    ``forced_tool`` until it has a result of it (so also right after a handoff, whose
    result ends the input too), and then answers with no tools.
    """

    forced_tool: str = Field(description="The tool this agent calls first on each turn.")

    def _has_own_result(self, messages: list[ChatMessage]) -> bool:
        """Whether the input ends in results of a call to ``forced_tool``."""
        if not messages or messages[-1].role != "tool":
            return False
        calls = next((m for m in reversed(messages) if m.role == "assistant"), None)
        if calls is None:
            return False
        selections = self.llm.get_tool_calls_from_response(  # type: ignore[attr-defined]
            ChatResponse(message=calls), error_on_no_tool_call=False
        )
        return any(s.tool_name == self.forced_tool for s in selections)

    async def _get_response(
        self, current_llm_input: list[ChatMessage], tools: Sequence[AsyncBaseTool]
    ) -> ChatResponse:
        if self._has_own_result(current_llm_input):
            return await self.llm.achat_with_tools(tools=[], chat_history=current_llm_input)  # type: ignore[attr-defined]
        return await self.llm.achat_with_tools(  # type: ignore[attr-defined]
            tools=tools, chat_history=current_llm_input, tool_choice=self.forced_tool
        )


class EnumHandoffWorkflow(AgentWorkflow):
    """``AgentWorkflow`` whose handoff tool only accepts the names of valid target agents."""

    def _get_handoff_tool(self, current_agent: BaseWorkflowAgent) -> AsyncBaseTool | None:
        stock = super()._get_handoff_tool(current_agent)
        if stock is None:
            return None
        targets = tuple(
            name
            for name in self.agents
            if name != current_agent.name
            and (current_agent.can_handoff_to is None or name in current_agent.can_handoff_to)
        )
        schema = create_model(
            "Handoff",
            to_agent=(Literal[targets], ...),  # type: ignore[valid-type]
            reason=(str, Field(max_length=80)),
        )
        return FunctionTool.from_defaults(
            async_fn=handoff,
            name="handoff",
            description=stock.metadata.description,
            fn_schema=schema,
            return_direct=True,
        )


def build_workflow(llm: Any) -> AgentWorkflow:
    concierge = ForcedToolAgent(
        name="concierge",
        description="Greets the user and routes the question to the right agent.",
        system_prompt="You are a concierge. Hand weather questions to weather_agent.",
        llm=llm,
        tools=[],
        can_handoff_to=["weather_agent"],
        forced_tool="handoff",
        streaming=False,
    )
    weather_agent = ForcedToolAgent(
        name="weather_agent",
        description="Knows the current weather in any city.",
        system_prompt="You answer weather questions. Look the weather up with the tool.",
        llm=llm,
        tools=[get_weather],
        can_handoff_to=[],
        forced_tool="get_weather",
        streaming=False,
    )
    return EnumHandoffWorkflow(agents=[concierge, weather_agent], root_agent="concierge")


def make_llm(base_url: str, cassette: Cassette) -> CassetteLLM:
    real = OpenAI(
        model="gpt-4o-mini",  # the class only accepts OpenAI names; the local server ignores it
        api_base=base_url,
        api_key="sk-local",  # never stored: secrets are not part of the request
        temperature=0.7,
        max_tokens=96,
        max_retries=0,
    )
    return CassetteLLM(real, cassette=cassette)


async def run(base_url: str = OFFLINE_URL, *, record: bool = False) -> dict[str, Any]:
    """Run the workflow on its cassette: replay (default), or record against ``base_url``."""
    cassette = Cassette(CASSETTE, mode="record" if record else "replay")
    start = time.perf_counter()
    handler = build_workflow(make_llm(base_url, cassette)).run(user_msg=QUESTION)
    steps = []
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            steps.append(f"{event.tool_name}({event.tool_kwargs}) -> {event.tool_output.content}")
    result = await handler
    seconds = time.perf_counter() - start
    cassette.save()
    return {
        "agent": result.current_agent_name,
        "steps": steps,
        "answer": str(result.response.content or ""),
        "replayed": cassette.stats.replayed,
        "live_calls": cassette.stats.recorded,
        "seconds": seconds,
    }


def report(result: dict[str, Any]) -> str:
    steps = "\n".join(f"  {step}" for step in result["steps"])
    return (
        f"question: {QUESTION}\n"
        f"tool calls:\n{steps}\n"
        f"answered by: {result['agent']}\n"
        f"answer: {result['answer'].strip()!r}\n"
        f"model calls replayed: {result['replayed']}\n"
        f"live model calls: {result['live_calls']}\n"
        f"time: {result['seconds']:.3f} s"
    )


def main(argv: list[str] | None = None) -> int:
    return example_main(
        __doc__, lambda url, record: report(asyncio.run(run(url, record=record))), argv
    )


if __name__ == "__main__":
    sys.exit(main())
