"""Real agent programs on real clients, recorded against the local Gemma server and replayed.

``python live_programs.py MODE CASSETTE_DIR BASE_URL`` runs every program with one cassette
each (``record`` rewrites them from the live server, ``replay`` must not touch the network)
and prints one JSON document: per program its full output, and the cassette's stats; in
replay mode also the connection attempts (the socket guard is installed before anything
else is imported).

The programs are shaped for a 270M model behind llama-cpp-python's
``chatml-function-calling`` template, which only calls a tool reliably when the tool is
forced by name (``tool_choice="auto"`` either never calls one or, with a tool result
already in the history, calls it again forever). So each agent forces its tool on the
first turn and answers without tools after the tool result. Streamed tool calls come back
garbled from this server (the name repeated in every chunk), so tool turns are not
streamed (``disable_streaming="tool_calling"`` in LangChain, a non-streamed call in the
LlamaIndex agent) and the final answer is.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

MODE, CASSETTE_DIR, BASE_URL = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import no_network  # noqa: E402

if MODE == "replay":
    no_network.install()

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, messages_to_dict  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode  # noqa: E402
from llama_index.core.agent.workflow import (  # noqa: E402
    AgentOutput,
    AgentStream,
    FunctionAgent,
    ToolCall,
    ToolCallResult,
)
from llama_index.core.llms import ChatMessage, ChatResponse  # noqa: E402
from llama_index.core.tools import AsyncBaseTool  # noqa: E402
from llama_index.core.workflow import Context  # noqa: E402
from llama_index.llms.openai import OpenAI  # noqa: E402

from chaincassette import Cassette, use_cassette  # noqa: E402
from chaincassette.integrations.llama_index import CassetteLLM  # noqa: E402

TEMPERATURE = 0.9
MAX_TOKENS = 64
QUESTION = "What is the weather in Paris right now?"


def weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"It is sunny and 21 C in {city}."


# -- LangGraph: forced tool -> ToolNode -> answer without tools ---------------------------


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return weather(city)


def langgraph_agent(asynchronous: bool) -> Any:
    """The graph; ``asynchronous`` nodes await the model (``ainvoke``), else call ``invoke``."""
    model = ChatOpenAI(
        base_url=BASE_URL,
        api_key="sk-local",  # type: ignore[arg-type]
        model="gemma",
        temperature=TEMPERATURE,
        max_tokens=MAX_TOKENS,  # type: ignore[call-arg]
        max_retries=0,
        disable_streaming="tool_calling",
    )
    with_tool = model.bind_tools([get_weather], tool_choice="get_weather")

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [with_tool.invoke(state["messages"])]}

    def answer(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    async def aagent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await with_tool.ainvoke(state["messages"])]}

    async def aanswer(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", aagent if asynchronous else agent)
    graph.add_node("tools", ToolNode([get_weather]))
    graph.add_node("answer", aanswer if asynchronous else answer)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "tools")
    graph.add_edge("tools", "answer")
    graph.add_edge("answer", END)
    return graph.compile()


def _stable(message: BaseMessage) -> dict[str, Any]:
    """The message as a dict, without the IDs the *frameworks* mint at random on every run.

    LangGraph's ``add_messages`` gives the human and tool messages ``uuid4`` IDs, and
    LangChain names the empty closing chunk of a stream (``chunk_position="last"``)
    after its random run ID (``lc_run--<uuid7>``). Neither comes from the model, so two
    live runs with identical answers differ there too; every other field, including the
    model's response and tool-call IDs, is compared as is.
    """
    data = messages_to_dict([message])[0]
    ident = data["data"].get("id")
    if not isinstance(message, AIMessage) or (
        isinstance(ident, str) and ident.startswith("lc_run-")
    ):
        data["data"]["id"] = "<framework-minted>" if ident else ident
    return data


def lg_invoke() -> dict[str, Any]:
    state = langgraph_agent(asynchronous=False).invoke({"messages": [HumanMessage(QUESTION)]})
    return {"messages": [_stable(m) for m in state["messages"]]}


async def lg_stream() -> dict[str, Any]:
    chunks = []
    async for message, meta in langgraph_agent(asynchronous=True).astream(
        {"messages": [HumanMessage(QUESTION)]}, stream_mode="messages"
    ):
        chunks.append(
            {
                "node": meta["langgraph_node"],
                "message": _stable(message),
                "is_ai": isinstance(message, AIMessage),
            }
        )
    return {"chunks": chunks}


# -- LlamaIndex: FunctionAgent, forced tool first, then an answer without tools ----------


class ToolThenAnswerAgent(FunctionAgent):
    """``FunctionAgent`` with ``initial_tool_choice``, adapted to a small local model.

    After a tool result the stock agent offers the tools again with ``tool_choice="auto"``,
    which this model answers by calling the tool again until max_iterations; here the
    answer turn gets no tools. The forced tool turn is never streamed (the server garbles
    streamed tool calls); the answer turn streams when ``streaming=True``.
    """

    async def _get_response(
        self, current_llm_input: list[ChatMessage], tools: Sequence[AsyncBaseTool]
    ) -> ChatResponse:
        if current_llm_input and current_llm_input[-1].role == "tool":
            tools = []
        return await super()._get_response(current_llm_input, tools)

    async def _get_streaming_response(
        self, ctx: Context, current_llm_input: list[ChatMessage], tools: Sequence[AsyncBaseTool]
    ) -> ChatResponse:
        if current_llm_input and current_llm_input[-1].role == "tool":
            return await super()._get_streaming_response(ctx, current_llm_input, [])
        return await self._get_response(current_llm_input, tools)


def _tool_calls(calls: Sequence[Any]) -> list[dict[str, Any]]:
    return [{"id": c.tool_id, "name": c.tool_name, "kwargs": c.tool_kwargs} for c in calls]


async def _li_agent(cassette: Cassette, streaming: bool) -> dict[str, Any]:
    llm = OpenAI(
        model="gpt-4o-mini",  # the class only accepts OpenAI names; the server ignores it
        api_base=BASE_URL,
        api_key="sk-local",
        temperature=TEMPERATURE,
        max_tokens=MAX_TOKENS,
        max_retries=0,
    )
    agent = ToolThenAnswerAgent(
        tools=[weather],
        llm=CassetteLLM(llm, cassette=cassette),
        initial_tool_choice="weather",
        streaming=streaming,
    )
    handler = agent.run(QUESTION)
    events: list[dict[str, Any]] = []
    async for event in handler.stream_events():
        if isinstance(event, AgentStream):
            events.append({"stream": event.delta, "raw": event.raw})
        elif isinstance(event, AgentOutput):
            events.append(
                {
                    "output": event.response.content,
                    "tool_calls": _tool_calls(event.tool_calls),
                    "raw": event.raw,
                }
            )
        elif isinstance(event, ToolCallResult):
            events.append(
                {
                    "tool_result": event.tool_output.content,
                    "tool_calls": _tool_calls([event]),
                }
            )
        elif isinstance(event, ToolCall):
            events.append({"tool_call": _tool_calls([event])})
    result = await handler
    return {
        "events": events,
        "response": result.response.content,
        "tool_calls": _tool_calls(result.tool_calls),
    }


async def li_agent(cassette: Cassette) -> dict[str, Any]:
    return await _li_agent(cassette, streaming=False)


async def li_agent_stream(cassette: Cassette) -> dict[str, Any]:
    return await _li_agent(cassette, streaming=True)


# -- running ---------------------------------------------------------------------------------

PROGRAMS: dict[str, Callable[..., Any]] = {
    "langgraph_invoke": lambda cassette: lg_invoke(),
    "langgraph_stream": lambda cassette: lg_stream(),
    "llamaindex_agent": li_agent,
    "llamaindex_agent_stream": li_agent_stream,
}


def run(name: str) -> dict[str, Any]:
    with use_cassette(CASSETTE_DIR / f"{name}.yaml", mode=MODE) as cassette:
        output = PROGRAMS[name](cassette)
        if asyncio.iscoroutine(output):
            output = asyncio.run(output)
    stats = cassette.stats
    return {
        "output": output,
        "stats": {"recorded": stats.recorded, "replayed": stats.replayed, "missed": stats.missed},
    }


def main() -> None:
    names = sys.argv[4].split(",") if len(sys.argv) > 4 else list(PROGRAMS)
    results = {name: run(name) for name in names}
    print(json.dumps({"programs": results, "connection_attempts": no_network.attempts()}))


if __name__ == "__main__":
    main()
