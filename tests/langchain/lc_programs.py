"""The LangChain/LangGraph programs the replay tests run, in-process or as fresh processes.

``python tests/langchain/programs.py DIR MODE`` runs every program against cassettes in
DIR with record mode MODE and prints one JSON document: each program's result (final
state and messages, chunks, token events), the provider call count, cassette statistics,
the recorded keys and any trace divergence. One process runs them all, so the suite
starts few interpreters (the CI machine has two cores).
"""

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).parent))
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*create_react_agent.*")

from fake_provider import PROVIDER_CALLS, FakeProviderChat, FakeProviderLLM  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.globals import set_llm_cache  # noqa: E402
from langchain_core.messages import BaseMessage, ToolMessage  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.tools import InjectedToolCallId, tool  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import InjectedState, create_react_agent  # noqa: E402
from langgraph.types import Command  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from chaincassette import Cassette, use_cassette  # noqa: E402
from chaincassette.integrations.langchain import CassetteCache  # noqa: E402

QUESTION = "Weather and time in Paris?"
TOOL_RUNS: list[str] = []


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    TOOL_RUNS.append(f"get_weather({city})")
    return f"Sunny in {city}"


@tool
def get_time(tz: str) -> str:
    """Get the current time in a timezone."""
    TOOL_RUNS.append(f"get_time({tz})")
    return f"12:00 {tz}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    TOOL_RUNS.append(f"add({a},{b})")
    return a + b


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    TOOL_RUNS.append(f"multiply({a},{b})")
    return a * b


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    temperature_c: int


# -- summaries: what "identical" means -----------------------------------------------------------


def message_summary(message: BaseMessage) -> dict[str, Any]:
    """Everything about a message except the random IDs LangGraph gives non-model messages."""
    out: dict[str, Any] = {"type": message.type, "content": message.content, "name": message.name}
    if message.type == "ai":
        out["id"] = message.id
        out["tool_calls"] = getattr(message, "tool_calls", [])
        out["usage_metadata"] = getattr(message, "usage_metadata", None)
        out["response_metadata"] = message.response_metadata
    if isinstance(message, ToolMessage):
        out["tool_call_id"] = message.tool_call_id
        out["status"] = message.status
    return json.loads(json.dumps(out, default=str))


def messages_summary(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    return [message_summary(m) for m in messages]


class TokenEvents(BaseCallbackHandler):
    """Counts what a streaming consumer's callbacks see."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.ends = 0

    def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        self.tokens.append(token if isinstance(token, str) else json.dumps(token))

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.ends += 1


def chunk_summary(chunk: Any) -> dict[str, Any]:
    return json.loads(
        json.dumps(
            {
                "content": chunk.content,
                "id": chunk.id,
                "tool_call_chunks": getattr(chunk, "tool_call_chunks", []),
                "usage": getattr(chunk, "usage_metadata", None),
            },
            default=str,
        )
    )


# -- the programs ---------------------------------------------------------------------------------


def react_agent(scenario: str = "react") -> Any:
    return create_react_agent(FakeProviderChat(scenario=scenario), [get_weather, get_time])


def make_handoff(agent: str) -> Any:
    @tool(f"transfer_to_{agent}", description=f"Hand the conversation to the {agent}.")
    def handoff(
        state: Annotated[dict[str, Any], InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> Command:
        note = ToolMessage(
            f"Transferred to {agent}", name=f"transfer_to_{agent}", tool_call_id=tool_call_id
        )
        return Command(
            goto=agent, graph=Command.PARENT, update={"messages": [*state["messages"], note]}
        )

    return handoff


def supervisor_graph() -> Any:
    supervisor = create_react_agent(
        FakeProviderChat(scenario="supervisor"),
        [make_handoff("researcher"), make_handoff("mathematician")],
        name="supervisor",
    )
    researcher = create_react_agent(
        FakeProviderChat(scenario="researcher"), [get_weather, get_time], name="researcher"
    )
    mathematician = create_react_agent(
        FakeProviderChat(scenario="mathematician"), [add, multiply], name="mathematician"
    )
    graph = StateGraph(MessagesState)
    graph.add_node(supervisor, destinations=("researcher", "mathematician", END))
    graph.add_node(researcher)
    graph.add_node(mathematician)
    graph.add_edge(START, "supervisor")
    graph.add_edge("researcher", "supervisor")
    graph.add_edge("mathematician", "supervisor")
    return graph.compile()


def run_react() -> Any:
    return messages_summary(react_agent().invoke({"messages": [("user", QUESTION)]})["messages"])


def run_supervisor() -> Any:
    state = supervisor_graph().invoke(
        {"messages": [("user", "Research Paris, then do some math.")]}
    )
    return messages_summary(state["messages"])


def run_structured() -> Any:
    model = FakeProviderChat(scenario="structured").with_structured_output(Weather)
    return model.invoke("What is the weather in Paris?").model_dump()  # type: ignore[union-attr]


def run_chain() -> Any:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), ("user", "Capital of {country}?")]
    )
    chain = prompt | FakeProviderChat(scenario="chat") | StrOutputParser()
    return [chain.invoke({"country": "France"}), chain.invoke({"country": "Peru"})]


def run_completion() -> Any:
    llm = FakeProviderLLM()
    return [
        llm.invoke("Write a haiku"),
        llm.invoke("Write a haiku"),
        llm.invoke("Write a limerick"),
    ]


def run_streaming() -> Any:
    model = FakeProviderChat(scenario="react").bind_tools([get_weather, get_time])
    out: dict[str, Any] = {}
    events = TokenEvents()
    out["stream"] = [
        chunk_summary(c) for c in model.stream(QUESTION, config={"callbacks": [events]})
    ]
    out["stream_tokens"] = [events.tokens, events.ends]

    async def astreams() -> None:
        events = TokenEvents()
        chunks = [
            c
            async for c in model.astream("Weather in Paris, async?", config={"callbacks": [events]})
        ]
        out["astream"] = [chunk_summary(c) for c in chunks]
        out["astream_tokens"] = [events.tokens, events.ends]
        plain = FakeProviderChat(scenario="chat")
        kinds = []
        async for event in plain.astream_events("Tell me about events", version="v2"):
            if event["event"] == "on_chat_model_stream":
                kinds.append(chunk_summary(event["data"]["chunk"]))
            elif event["event"] in ("on_chat_model_start", "on_chat_model_end"):
                kinds.append(event["event"])
        out["astream_events"] = kinds

    asyncio.run(astreams())
    graph_chunks = []
    for chunk, metadata in react_agent().stream(
        {"messages": [("user", QUESTION)]}, stream_mode="messages"
    ):
        graph_chunks.append(
            [type(chunk).__name__, metadata.get("langgraph_node"), message_summary(chunk)]
        )
    out["graph_messages"] = graph_chunks
    return out


def run_gather() -> Any:
    model = FakeProviderChat(scenario="chat")

    async def main() -> list[Any]:
        questions = [f"Question number {i % 7}" for i in range(10)]
        answers = await asyncio.gather(*(model.ainvoke(q) for q in questions))
        return [message_summary(a) for a in answers]

    return asyncio.run(main())


def run_global_cache(path: Path, mode: str) -> tuple[Any, Cassette]:
    """``set_llm_cache(CassetteCache(...))`` with no ``use_cassette`` anywhere."""
    cache = CassetteCache(path, mode=mode)
    set_llm_cache(cache)
    try:
        state = react_agent("parallel").invoke({"messages": [("user", QUESTION)]})
        return messages_summary(state["messages"]), cache.cassette  # type: ignore[return-value]
    finally:
        set_llm_cache(None)
        cache.close()


PROGRAMS: dict[str, Callable[[], Any]] = {
    "react": run_react,
    "supervisor": run_supervisor,
    "structured": run_structured,
    "chain": run_chain,
    "completion": run_completion,
    "streaming": run_streaming,
    "gather": run_gather,
}


def cassette_report(cassette: Cassette) -> dict[str, Any]:
    stats = cassette.stats
    return {
        "stats": {
            "replayed": stats.replayed,
            "recorded": stats.recorded,
            "missed": stats.missed,
            "unused": stats.unused,
            "interactions": stats.interactions,
        },
        "keys": sorted(i.key for i in cassette.interactions),
        "divergence": getattr(cassette, "trace_divergence", None),
    }


def run_all(directory: Path, mode: str, only: list[str] | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for name, program in PROGRAMS.items():
        if only and name not in only:
            continue
        before = len(PROVIDER_CALLS)
        with use_cassette(directory / f"{name}.yaml", mode=mode) as cassette:
            result = program()
        report[name] = {
            "result": result,
            "calls": len(PROVIDER_CALLS) - before,
            **cassette_report(cassette),
        }
    if not only or "global_cache" in only:
        before = len(PROVIDER_CALLS)
        result, cassette = run_global_cache(directory / "global_cache.yaml", mode)
        report["global_cache"] = {
            "result": result,
            "calls": len(PROVIDER_CALLS) - before,
            **cassette_report(cassette),
        }
    return report


if __name__ == "__main__":
    print(json.dumps(run_all(Path(sys.argv[1]), sys.argv[2], sys.argv[3:] or None), sort_keys=True))
