"""LlamaIndex calls gathered concurrently replay in the order they completed when recorded.

A provider LLM whose answers take the time of their subject (``slow`` started first, done
last) is asked three questions with ``asyncio.gather``, whole (``achat``) and streamed
(``astream_chat``), through the class-level interception of ``use_cassette`` and through
``CassetteLLM``. The order the answers complete in, and the order of the LLM end events
LlamaIndex dispatches, are the recorded ones in every replay (two, compared exactly).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from li_fake_provider import FakeProvider, Reply
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, ChatResponseAsyncGen
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.llm import LLMChatEndEvent
from llama_index.core.llms.callbacks import llm_chat_callback
from pydantic import Field

from chaincassette import use_cassette
from chaincassette.integrations.llama_index import CassetteLLM

LATENCY = {"slow": 0.4, "mid": 0.2, "fast": 0.05}
START_ORDER = ["slow", "mid", "fast"]


def subject_of(text: str) -> str:
    return next(s for s in START_ORDER if s in text)


def answer(messages: Sequence[ChatMessage], tools: list[dict[str, Any]]) -> Reply:
    return Reply(text=f"A joke about the {subject_of(str(messages[-1].content))} one")


class LatentProvider(FakeProvider):
    """``FakeProvider`` whose async answers take the time of their subject."""

    @classmethod
    def class_name(cls) -> str:
        return "LatentProvider"

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        await asyncio.sleep(LATENCY[subject_of(str(messages[-1].content))])
        FakeProvider.calls.append("achat")
        return self._final(self._reply(messages, kwargs))

    @llm_chat_callback()
    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        FakeProvider.calls.append("astream_chat")
        chunks = self._chunks(self._reply(messages, kwargs))
        pause = LATENCY[subject_of(str(messages[-1].content))] / len(chunks)

        async def gen() -> Any:
            for chunk in chunks:
                await asyncio.sleep(pause)
                yield chunk

        return gen()


class ChatEnds(BaseEventHandler):
    """The subjects of the chat calls whose end event LlamaIndex dispatched, in order."""

    ended: list[str] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "ChatEnds"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, LLMChatEndEvent) and event.response is not None:
            self.ended.append(subject_of(event.response.message.content or ""))


@pytest.fixture
def chat_ends() -> Any:
    handler = ChatEnds()
    root = get_dispatcher()
    root.add_event_handler(handler)
    yield handler
    root.event_handlers.remove(handler)


async def ask_all(llm: Any, *, stream: bool) -> dict[str, Any]:
    completed: list[str] = []

    async def ask(subject: str) -> str:
        messages = [ChatMessage(role="user", content=f"Tell a joke about the {subject} one")]
        if stream:
            text = ""
            async for chunk in await llm.astream_chat(messages):
                text = chunk.message.content or ""
        else:
            text = (await llm.achat(messages)).message.content or ""
        completed.append(subject)
        return text

    answers = await asyncio.gather(*(ask(s) for s in START_ORDER))
    return {"completed": completed, "answers": answers}


@pytest.mark.parametrize("stream", [False, True], ids=["achat", "astream_chat"])
@pytest.mark.parametrize("wrapped", [False, True], ids=["use_cassette", "CassetteLLM"])
def test_gathered_calls_replay_in_the_recorded_order(
    tmp_path: Path, chat_ends: ChatEnds, stream: bool, wrapped: bool
) -> None:
    path = tmp_path / "gather.yaml"

    def run(mode: str) -> dict[str, Any]:
        chat_ends.ended = []
        provider = LatentProvider(policy=answer)
        with use_cassette(path, mode=mode) as cassette:
            llm = CassetteLLM(provider, cassette=cassette) if wrapped else provider
            seen = asyncio.run(ask_all(llm, stream=stream))
        assert cassette.replay_order.given_up == 0 and cassette.stats.missed == 0
        return {**seen, "ended": list(chat_ends.ended)}

    recorded = run("record")
    assert recorded["completed"] != START_ORDER and recorded["ended"] == recorded["completed"]
    calls = len(FakeProvider.calls)
    assert calls == 3
    for _ in range(2):
        assert run("replay") == recorded
    assert len(FakeProvider.calls) == calls
