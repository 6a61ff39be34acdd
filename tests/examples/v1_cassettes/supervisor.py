"""A LangGraph supervisor with two specialist agents, recorded once and replayed offline.

    python examples/supervisor/supervisor.py            # replay from cassette.yaml, offline
    python examples/supervisor/supervisor.py --record   # re-record against a local Gemma server

The supervisor reads the user's question and picks which specialist to consult next
(or to finish); each specialist calls its tool and reports; the supervisor then writes
the answer. Every model call goes through ``langchain-openai``'s ``ChatOpenAI``, and the
only chaincassette line is ``use_cassette(...)`` around the run.

Shaped for the small local model it was recorded with (Gemma 3 270M behind
llama-cpp-python): it only calls tools reliably when a tool is forced by name, so the
supervisor routes by a forced ``route`` tool whose argument is restricted to the
remaining choices (the server turns the JSON schema into a grammar: the model picks,
but only among valid names), and each specialist forces its tool and then answers
without tools. With a larger model you would use ``tool_choice="auto"`` and a prebuilt
supervisor; the cassette works the same way.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic import create_model

from chaincassette import use_cassette

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _live import OFFLINE_URL, example_main  # noqa: E402

CASSETTE = HERE / "cassette.yaml"
QUESTION = (
    "I am flying to Paris tomorrow. What is the weather there, "
    "and how much are 200 US dollars in euros?"
)
#: The base URL is where the model ran, not what it answered: leave it out of the key so
#: a recording made against any local port replays anywhere.
CASSETTE_OPTIONS: dict[str, Any] = {"ignore": ["params.openai_api_base"]}


# -- tools (deterministic: replay reruns them) ----------------------------------------------

WEATHER = {"paris": "sunny, 21 C", "london": "light rain, 14 C", "berlin": "cloudy, 17 C"}
RATES = {
    ("USD", "EUR"): 0.92,
    ("EUR", "USD"): 1.09,
    ("GBP", "EUR"): 1.17,
    ("EUR", "GBP"): 0.85,
    ("USD", "GBP"): 0.79,
    ("GBP", "USD"): 1.27,
}


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    report = WEATHER.get(city.strip().lower(), "partly cloudy, 18 C")
    return f"Weather in {city}: {report}."


Currency = Literal["USD", "EUR", "GBP"]


@tool
def convert_currency(amount: float, from_currency: Currency, to_currency: Currency) -> str:
    """Convert an amount of money from one currency to another."""
    rate = 1.0 if from_currency == to_currency else RATES.get((from_currency, to_currency), 1.0)
    return f"{amount:g} {from_currency} is {amount * rate:.2f} {to_currency} (rate {rate})."


@dataclass(frozen=True)
class Specialist:
    name: str
    instructions: str
    tool: BaseTool


SPECIALISTS = {
    s.name: s
    for s in (
        Specialist("weather_expert", "You report the weather. Use the tool.", get_weather),
        Specialist("currency_expert", "You convert currencies. Use the tool.", convert_currency),
    )
}


# -- the graph ---------------------------------------------------------------------------------


class SupervisorState(MessagesState):
    consulted: list[str]
    next: str


def chat_model(base_url: str) -> ChatOpenAI:
    return ChatOpenAI(
        base_url=base_url,
        api_key="sk-local",  # type: ignore[arg-type]  # the local server wants none; never stored
        model="gemma",
        temperature=0.7,
        max_tokens=96,  # type: ignore[call-arg]
        max_retries=0,
    )


def specialist_graph(model: ChatOpenAI, specialist: Specialist) -> Any:
    """agent (forced tool) → tools → answer (no tools): a tool-calling agent for a small model."""
    with_tool = model.bind_tools([specialist.tool], tool_choice=specialist.tool.name)

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [with_tool.invoke(state["messages"])]}

    def answer(state: MessagesState) -> dict[str, list[BaseMessage]]:
        reply = model.invoke(state["messages"])
        return {"messages": [AIMessage(reply.content, name=specialist.name, id=reply.id)]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([specialist.tool]))
    graph.add_node("answer", answer)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "tools")
    graph.add_edge("tools", "answer")
    graph.add_edge("answer", END)
    return graph.compile(name=specialist.name)


def build_graph(base_url: str) -> Any:
    model = chat_model(base_url)
    specialists = {name: specialist_graph(model, s) for name, s in SPECIALISTS.items()}

    def supervisor(state: SupervisorState) -> dict[str, Any]:
        consulted = state.get("consulted", [])
        choices = [name for name in SPECIALISTS if name not in consulted]
        if consulted:
            choices.append("FINISH")
        if len(choices) == 1:
            return {"next": choices[0]}
        # The argument's schema is an enum of what is left, so the model's pick is always valid.
        route = create_model(
            "route",
            __doc__="Choose who works next, or FINISH when the question is answered.",
            next=(Literal[tuple(choices)], ...),  # type: ignore[valid-type]
        )
        prompt = [
            SystemMessage(
                "You are a supervisor. Specialists: weather_expert (weather), "
                "currency_expert (money). Pick who works next, or FINISH."
            ),
            *state["messages"],
        ]
        decision = model.bind_tools([route], tool_choice="route").invoke(prompt)
        return {"next": decision.tool_calls[0]["args"]["next"]}

    def consult(name: str) -> Any:
        def run_specialist(state: SupervisorState) -> dict[str, Any]:
            question = state["messages"][0]
            result = specialists[name].invoke(
                {"messages": [SystemMessage(SPECIALISTS[name].instructions), question]}
            )
            new = result["messages"][2:]  # its tool call, the tool result, its report
            return {"messages": new, "consulted": [*state.get("consulted", []), name]}

        return run_specialist

    def final_answer(state: SupervisorState) -> dict[str, list[BaseMessage]]:
        findings = "\n".join(
            f"- {m.content}" for m in state["messages"] if m.type == "tool" and m.content
        )
        prompt = [
            SystemMessage("Answer the user's question in two sentences using these facts."),
            HumanMessage(f"Question: {state['messages'][0].content}\nFacts:\n{findings}"),
        ]
        reply = model.invoke(prompt)
        return {"messages": [AIMessage(reply.content, name="supervisor", id=reply.id)]}

    graph = StateGraph(SupervisorState)
    graph.add_node("supervisor", supervisor)
    for name in SPECIALISTS:
        graph.add_node(name, consult(name))
        graph.add_edge(name, "supervisor")
    graph.add_node("final_answer", final_answer)
    graph.add_edge(START, "supervisor")
    graph.add_conditional_edges(
        "supervisor",
        lambda state: "final_answer" if state["next"] == "FINISH" else state["next"],
        [*SPECIALISTS, "final_answer"],
    )
    graph.add_edge("final_answer", END)
    return graph.compile(name="supervisor")


# -- running -------------------------------------------------------------------------------------


@dataclass
class Result:
    answer: str
    route: list[str]
    facts: list[str]
    replayed: int
    live_calls: int
    #: The graph run alone (every model call, tool and LangGraph step).
    seconds: float
    #: Everything in ``use_cassette`` (loading the cassette, first-use imports, building the graph).
    total_seconds: float


def run(base_url: str = OFFLINE_URL, *, record: bool = False) -> Result:
    """Run the supervisor on its cassette: replay (default), or record against ``base_url``."""
    mode = "record" if record else "replay"
    start = time.perf_counter()
    with use_cassette(CASSETTE, mode=mode, **CASSETTE_OPTIONS) as cassette:
        graph = build_graph(base_url)
        started = time.perf_counter()
        state = graph.invoke({"messages": [HumanMessage(QUESTION)]})
        seconds = time.perf_counter() - started
    total = time.perf_counter() - start
    return Result(
        answer=str(state["messages"][-1].content),
        route=list(state["consulted"]),
        facts=[str(m.content) for m in state["messages"] if m.type == "tool"],
        replayed=cassette.stats.replayed,
        live_calls=cassette.stats.recorded,
        seconds=seconds,
        total_seconds=total,
    )


def report(result: Result) -> str:
    facts = "\n".join(f"  {fact}" for fact in result.facts)
    return (
        f"question: {QUESTION}\n"
        f"route: supervisor -> {' -> '.join(result.route)} -> answer\n"
        f"tool results:\n{facts}\n"
        f"answer: {result.answer.strip()!r}\n"
        f"model calls replayed: {result.replayed}\n"
        f"live model calls: {result.live_calls}\n"
        f"time: {result.seconds:.3f} s for the graph run "
        f"({result.total_seconds:.3f} s with setup and first-use imports)"
    )


def main(argv: list[str] | None = None) -> int:
    return example_main(__doc__, lambda url, record: report(run(url, record=record)), argv)


if __name__ == "__main__":
    sys.exit(main())
