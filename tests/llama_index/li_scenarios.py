"""Real LlamaIndex programs on a ``CassetteLLM``, run in a fresh process by the tests.

``python scenarios.py DIR MODE [--no-llm] [--only NAME,...]`` runs every scenario with
one cassette per scenario in DIR and prints one JSON document: per scenario the final
output, every streamed workflow event (with ``raw``), the instrumentation event counts,
the trace divergence, and how many provider calls were made.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("IS_TESTING", "1")  # never build the default OpenAI LLM
sys.path.insert(0, str(Path(__file__).resolve().parent))

from li_fake_provider import FakeProvider, Reply
from llama_index.core import Document, MockEmbedding, PromptTemplate, VectorStoreIndex
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from pydantic import BaseModel

from chaincassette import Cassette, use_cassette
from chaincassette.integrations.llama_index import CassetteLLM, trace_divergence

COUNTS: Counter[str] = Counter()


class Counting(BaseEventHandler):
    """Counts instrumentation events by class (the "fire exactly as often" check)."""

    @classmethod
    def class_name(cls) -> str:
        return "Counting"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if event.class_name().startswith("LLM"):
            COUNTS[event.class_name()] += 1


# -- tools and schemas --------------------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


class Pet(BaseModel):
    """A pet."""

    name: str
    species: str


class Answer(BaseModel):
    """The final answer."""

    value: int


# -- the provider's "brain" -----------------------------------------------------------------


def _tool_names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


def _last_number(messages: Sequence[ChatMessage]) -> int | None:
    for message in reversed(messages):
        if message.role.value == "tool" and (message.content or "").strip().isdigit():
            return int(message.content or "0")
    return None


def policy(messages: Sequence[ChatMessage], tools: list[dict[str, Any]]) -> Reply:
    names = _tool_names(tools)
    text = "\n".join(m.content or "" for m in messages)
    number = _last_number(messages)
    if "Pet" in names:
        found = re.search(r"named (\w+)", text)
        return Reply(
            tool_calls=[("Pet", {"name": found.group(1) if found else "?", "species": "dog"})]
        )
    if "Answer" in names:
        found = re.findall(r"answer is (\d+)", text)
        return Reply(tool_calls=[("Answer", {"value": int(found[-1]) if found else -1})])
    if "## Tools" in text:  # ReAct prompt
        later = "\n".join(m.content or "" for m in messages if m.role.value != "system")
        if "Observation:" in later:
            value = re.findall(r"Observation: (\d+)", later)[-1]
            return Reply(
                text=f"Thought: I can answer without using any more tools.\nAnswer: The sum is {value}."
            )
        return Reply(
            text='Thought: I need to use a tool to help me answer the question.\nAction: add\nAction Input: {"a": 2, "b": 3}'
        )
    if number is not None:
        return Reply(text=f"The answer is {number}.")
    if "add" in names:
        return Reply(
            text="Let me add.", tool_calls=[("add", {"a": 2, "b": 3})], thinking="simple sum"
        )
    if "handoff" in names:
        return Reply(tool_calls=[("handoff", {"to_agent": "calc", "reason": "it is arithmetic"})])
    if "Context information" in text:
        return Reply(text="chaincassette records LLM calls once and replays them.")
    return Reply(text="Hello there, friend.")


# -- scenarios ---------------------------------------------------------------------------------


def dump_event(event: Any) -> Any:
    try:
        data = event.model_dump(mode="json")
    except Exception:
        data = str(event)
    raw = getattr(event, "raw", None)
    if raw is not None:
        data = {"event": data, "raw": raw if isinstance(raw, dict) else str(raw)}
    return [type(event).__name__, data]


async def run_workflow(workflow: Any, prompt: str) -> dict[str, Any]:
    handler = workflow.run(user_msg=prompt)
    events = [dump_event(ev) async for ev in handler.stream_events()]
    result = await handler
    output: Any = str(result)
    structured = getattr(result, "structured_response", None)
    if structured:
        output = {"text": output, "structured": structured}
    return {"output": output, "events": events}


async def function_agent_stream(llm: Any) -> dict[str, Any]:
    return await run_workflow(FunctionAgent(tools=[add], llm=llm, streaming=True), "What is 2 + 3?")


async def function_agent(llm: Any) -> dict[str, Any]:
    return await run_workflow(
        FunctionAgent(tools=[add], llm=llm, streaming=False), "What is 2 + 3?"
    )


async def react_agent(llm: Any) -> dict[str, Any]:
    return await run_workflow(ReActAgent(tools=[add], llm=llm), "What is 2 + 3?")


async def multi_agent(llm: Any) -> dict[str, Any]:
    router = FunctionAgent(
        name="router", description="Routes questions.", llm=llm, tools=[], can_handoff_to=["calc"]
    )
    calc = FunctionAgent(
        name="calc", description="Does arithmetic.", llm=llm, tools=[add, multiply]
    )
    workflow = AgentWorkflow(agents=[router, calc], root_agent="router")
    return await run_workflow(workflow, "What is 2 + 3?")


async def output_cls_agent(llm: Any) -> dict[str, Any]:
    return await run_workflow(
        FunctionAgent(tools=[add], llm=llm, output_cls=Answer), "What is 2 + 3?"
    )


async def structured(llm: Any) -> dict[str, Any]:
    pet = llm.structured_predict(Pet, PromptTemplate("Invent a pet named {name}."), name="Rex")
    apet = await llm.astructured_predict(
        Pet, PromptTemplate("Invent a pet named {name}."), name="Bo"
    )
    return {"output": [pet.model_dump(), apet.model_dump()], "events": []}


async def query_engine(llm: Any) -> dict[str, Any]:
    # One document: MockEmbedding gives every chunk the same vector, so several chunks would
    # tie and come back in uuid (random) order - a real nondeterminism of the program.
    documents = [Document(text="chaincassette records every LLM call once. Replays need no keys.")]
    index = VectorStoreIndex.from_documents(documents, embed_model=MockEmbedding(embed_dim=8))
    answer = index.as_query_engine(llm=llm, similarity_top_k=2).query("What is chaincassette?")
    streaming = index.as_query_engine(llm=llm, similarity_top_k=2, streaming=True)
    pieces = list(streaming.query("What does chaincassette do?").response_gen)
    return {"output": [str(answer), "".join(pieces)], "events": pieces}


async def basics(llm: Any) -> dict[str, Any]:
    out: list[Any] = [llm.complete("Say hello").text]
    out.append([r.delta for r in llm.stream_complete("Say hello")])
    out.append((await llm.acomplete("Say hello")).text)  # same key as complete: 2nd occurrence
    out.append([r.delta async for r in await llm.astream_complete("Say hello")])
    out.append(llm.chat([ChatMessage(role="user", content="Hi")]).message.content)
    out.append([r.delta for r in llm.stream_chat([ChatMessage(role="user", content="Hi")])])
    out.append(llm.predict(PromptTemplate("Greet {who}"), who="Ada"))
    return {"output": out, "events": []}


SCENARIOS: dict[str, Callable[[Any], Any]] = {
    "function_agent_stream": function_agent_stream,
    "function_agent": function_agent,
    "react_agent": react_agent,
    "multi_agent": multi_agent,
    "output_cls_agent": output_cls_agent,
    "structured": structured,
    "query_engine": query_engine,
    "basics": basics,
}


async def run_one(name: str, directory: Path, mode: str, no_llm: bool) -> dict[str, Any]:
    cassette = Cassette(directory / f"{name}.yaml", mode=mode)
    FakeProvider.calls.clear()
    COUNTS.clear()
    with use_cassette(cassette):
        inner = None if no_llm else FakeProvider(policy=policy)
        llm = CassetteLLM(inner, cassette=cassette)
        result = await SCENARIOS[name](llm)
    result["llm_events"] = dict(sorted(COUNTS.items()))
    result["provider_calls"] = len(FakeProvider.calls)
    result["trace_divergence"] = trace_divergence(cassette)
    result["trace_nodes"] = len(cassette.trace or [])
    result["stats"] = {"replayed": cassette.stats.replayed, "recorded": cassette.stats.recorded}
    return result


async def main(argv: list[str]) -> None:
    directory, mode = Path(argv[0]), argv[1]
    no_llm = "--no-llm" in argv
    names = list(SCENARIOS)
    if "--only" in argv:
        names = argv[argv.index("--only") + 1].split(",")
    get_dispatcher().add_event_handler(Counting())
    results = {name: await run_one(name, directory, mode, no_llm) for name in names}
    print(json.dumps(results, sort_keys=True, default=str))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
