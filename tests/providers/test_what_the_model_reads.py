"""Keys follow what the model reads, on the real clients: tool-result order, image spelling.

Gemini and Ollama send parallel tool results without the ids of the calls they answer, so
the model reads them by position: swapped, they are another request and miss. OpenAI and
Anthropic send the ids: swapped results are the same request and hit. And one image is one
image: a standard ``{"type": "image", "base64": …}`` block and an OpenAI ``image_url`` data
URL of the same PNG send the same bytes, and hit each other's recording. Each recording is
made against the fake server (``tests/fakes/wire.py``); each replay points the client at a
port that counts connection attempts.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fakes.nowhere import DeadPort
from fakes.scripts import weather_tour
from fakes.wire import FakeServer

from chaincassette import CassetteMiss, use_cassette

from .provider_program import langchain_model, llama_index_llm

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
CALLS = [
    {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_weather_9x"},
    {"name": "get_time", "args": {"city": "Paris"}, "id": "call_time_4k"},
]
RESULTS = {"call_weather_9x": "Paris: 12C and sunny", "call_time_4k": "Paris: 12:00"}
#: provider → whether its wire carries the ids of the calls tool results answer
PROVIDERS = {
    "ollama": False,
    "gemini": False,
    "li_ollama": False,
    "openai": True,
    "anthropic": True,
    "li_openai": True,
    "li_anthropic": True,
    "li_gemini": True,  # llama-index-llms-google-genai sets function_response.id
}


def langchain_turn(order: list[str]) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    calls = [{**c, "type": "tool_call"} for c in CALLS]
    results = [ToolMessage(RESULTS[i], tool_call_id=i, name=n) for i, n in _named(order)]
    return [HumanMessage("Weather and time in Paris?"), AIMessage("", tool_calls=calls), *results]


def llama_index_turn(order: list[str]) -> list[Any]:
    from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock

    blocks = [
        ToolCallBlock(tool_call_id=c["id"], tool_name=c["name"], tool_kwargs=c["args"])
        for c in CALLS
    ]
    results = [
        ChatMessage(
            role="tool", content=RESULTS[i], additional_kwargs={"tool_call_id": i, "name": n}
        )
        for i, n in _named(order)
    ]
    return [
        ChatMessage(role="user", content="Weather and time in Paris?"),
        ChatMessage(role="assistant", blocks=blocks),
        *results,
    ]


def _named(order: list[str]) -> list[tuple[str, str]]:
    names = {c["id"]: c["name"] for c in CALLS}
    return [(i, names[i]) for i in order]


def answer(provider: str, url: str, order: list[str]) -> str:
    """The model's answer to the conversation with its tool results in ``order``."""
    if provider.startswith("li_"):
        llm = llama_index_llm(provider, url)

        async def chat() -> str:
            return str((await llm.achat(llama_index_turn(order))).message.content)

        return asyncio.run(chat())
    return str(langchain_model(provider, url).invoke(langchain_turn(order)).content)


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_swapped_tool_results_miss_where_the_model_reads_them_by_position(
    provider: str, tmp_path: Path
) -> None:
    path = tmp_path / f"{provider}.yaml"
    in_call_order, swapped = list(RESULTS), list(reversed(RESULTS))
    with FakeServer(weather_tour) as fake, use_cassette(path, mode="record"):
        recorded = answer(provider, fake.base, in_call_order)
    assert recorded  # the live call answered
    with DeadPort() as dead:
        with use_cassette(path, mode="replay"):
            assert answer(provider, dead.url, in_call_order) == recorded
        if PROVIDERS[provider]:  # matched by id: the same request
            with use_cassette(path, mode="replay"):
                assert answer(provider, dead.url, swapped) == recorded
        else:
            with use_cassette(path, mode="replay"), pytest.raises(CassetteMiss) as info:
                answer(provider, dead.url, swapped)
            assert "what differs" in str(info.value) and "(tool).content" in str(info.value)
        assert dead.accepted == 0


def image_message(block: dict[str, Any]) -> Any:
    from langchain_core.messages import HumanMessage

    return HumanMessage(content=[{"type": "text", "text": "What is in this image?"}, block])


STANDARD = {"type": "image", "base64": PNG, "mime_type": "image/png"}
DATA_URL = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
def test_the_same_image_in_either_block_hits_the_other(provider: str, tmp_path: Path) -> None:
    path = tmp_path / f"{provider}.yaml"
    with FakeServer(weather_tour) as fake, use_cassette(path, mode="record"):
        recorded = langchain_model(provider, fake.base).invoke([image_message(STANDARD)]).content
    other = {**DATA_URL, "image_url": {"url": DATA_URL["image_url"]["url"].replace("A", "B", 1)}}
    with DeadPort() as dead:
        model = langchain_model(provider, dead.url)
        with use_cassette(path, mode="replay"):
            assert model.invoke([image_message(DATA_URL)]).content == recorded
        with use_cassette(path, mode="replay"), pytest.raises(CassetteMiss):
            model.invoke([image_message(other)])  # other bytes: another image
        assert dead.accepted == 0
