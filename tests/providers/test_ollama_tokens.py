"""``ChatOllama.invoke`` streams from its server and fires ``on_llm_new_token`` for each chunk;
its replay fires the same tokens, with the same chunks, before the same answer.

The real ``ChatOllama`` against the fake Ollama server (NDJSON streaming, timestamps and
durations random in every answer), recorded once, then replayed twice against a port where
nothing answers: what a token handler saw (sync ``invoke`` and async ``ainvoke``) and what
a LangGraph ``stream_mode="messages"`` consumer saw are compared exactly.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fakes.nowhere import DeadPort
from fakes.scripts import weather_tour
from fakes.wire import FakeServer
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langgraph.graph import START, MessagesState, StateGraph

from chaincassette import use_cassette


def plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class Tokens(BaseCallbackHandler):
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def on_llm_new_token(self, token: Any, *, chunk: Any = None, **kwargs: Any) -> None:
        self.seen.append([token, plain(chunk.message.model_dump() if chunk else None)])


class AsyncTokens(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def on_llm_new_token(self, token: Any, *, chunk: Any = None, **kwargs: Any) -> None:
        self.seen.append([token, plain(chunk.message.model_dump() if chunk else None)])


def program(url: str) -> dict[str, Any]:
    from langchain_ollama import ChatOllama

    model = ChatOllama(model="llama3.2", base_url=url, temperature=0)
    tokens, atokens = Tokens(), AsyncTokens()
    answer = model.invoke("Tell me about Paris", config={"callbacks": [tokens]})
    aanswer = asyncio.run(model.ainvoke("And Lima?", config={"callbacks": [atokens]}))

    def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    streamed = [
        [chunk.content, meta["langgraph_node"]]
        for chunk, meta in graph.compile().stream(
            {"messages": [("user", "And Oslo?")]}, stream_mode="messages"
        )
    ]
    return {
        "answers": [answer.content, aanswer.content],
        "tokens": tokens.seen,
        "atokens": atokens.seen,
        "streamed": streamed,
    }


def test_chat_ollama_invoke_replays_its_token_callbacks(tmp_path: Path) -> None:
    pytest.importorskip("langchain_ollama")
    path = tmp_path / "ollama.yaml"
    with FakeServer(weather_tour) as fake, use_cassette(path, mode="record"):
        recorded = program(fake.base)
    assert len(recorded["tokens"]) > 3 and len(recorded["atokens"]) > 3
    assert "".join(t for t, _ in recorded["tokens"]) == recorded["answers"][0]
    assert len(recorded["streamed"]) > 3  # the graph's messages stream saw each token
    for _ in range(2):
        with DeadPort() as dead, use_cassette(path, mode="replay") as cassette:
            replayed = program(dead.url)
        assert replayed == recorded
        assert dead.accepted == 0 and cassette.stats.replayed == 3
