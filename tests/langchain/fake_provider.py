"""Fake *provider* models that behave like real ones (not mocks of LangChain).

``FakeProviderChat`` is an lc-serializable ``BaseChatModel`` like ChatOpenAI: ``bind_tools``
in OpenAI format, random ``chatcmpl-…`` response IDs, random ``call_…`` tool-call IDs,
``created`` timestamps, system fingerprints, usage, and streaming with tool-call chunks.
What it answers follows a small script per ``scenario``, driven by the conversation so far;
final answers that no later call reads carry a random reference, so a replay that went
live would be noticed (answers that flow into later prompts stay deterministic, as a
re-recording must reproduce the same keys).
Every provider call is counted in ``PROVIDER_CALLS``.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseLLM, LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import (
    ChatGeneration,
    ChatGenerationChunk,
    ChatResult,
    Generation,
    LLMResult,
)
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

PROVIDER_CALLS: list[str] = []
_lock = threading.Lock()
_rng = random.SystemRandom()


def _count(kind: str) -> None:
    with _lock:
        PROVIDER_CALLS.append(kind)


def _hex(n: int) -> str:
    return uuid.uuid4().hex[:n]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content if isinstance(b, dict))


# -- scripts: what the "model" answers, given the conversation ----------------------------------


def _tool_results(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def _after_last(messages: Sequence[BaseMessage], marker: str) -> list[ToolMessage]:
    """Tool results after the hand-off message that contains ``marker``."""
    start = 0
    for index, m in enumerate(messages):
        if isinstance(m, ToolMessage) and marker in _text(m.content):
            start = index + 1
    return [m for m in messages[start:] if isinstance(m, ToolMessage)]


def script(
    scenario: str, messages: Sequence[BaseMessage], tools: list[dict[str, Any]]
) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """(text, [(tool name, args)]) the model answers in ``scenario``."""
    question = next((_text(m.content) for m in messages if m.type == "human"), "")
    results = _tool_results(messages)
    ref = f"(ref {_hex(4)})"
    if scenario == "react":
        done = {m.name for m in results}
        if "get_weather" not in done:
            return "", [("get_weather", {"city": "Paris"})]
        if "get_time" not in done:
            return "", [("get_time", {"tz": "CET"})]
        return f"{'; '.join(_text(m.content) for m in results)} {ref}", []
    if scenario == "parallel":
        if not results:
            return "", [("get_weather", {"city": "Paris"}), ("get_time", {"tz": "CET"})]
        return f"Both: {', '.join(sorted(_text(m.content) for m in results))} {ref}", []
    if scenario == "supervisor":
        said = " ".join(_text(m.content) for m in results)
        if "Transferred to researcher" not in said:
            return "", [("transfer_to_researcher", {})]
        if "Transferred to mathematician" not in said:
            return "", [("transfer_to_mathematician", {})]
        return f"All done {ref}", []
    if scenario == "researcher":
        mine = _after_last(messages, "Transferred to researcher")
        if not mine:
            return "Looking it up.", [
                ("get_weather", {"city": "Paris"}),
                ("get_time", {"tz": "CET"}),
            ]
        return f"Research: {', '.join(sorted(_text(m.content) for m in mine))}", []
    if scenario == "mathematician":
        mine = _after_last(messages, "Transferred to mathematician")
        if not mine:
            return "", [("add", {"a": 2, "b": 3}), ("multiply", {"a": 4, "b": 5})]
        return f"Math: {', '.join(sorted(_text(m.content) for m in mine))}", []
    if scenario == "structured":
        name = tools[0]["function"]["name"] if tools else "Weather"
        return "", [(name, {"city": "Paris", "temperature_c": 21})]
    return f"Answer to {question!r} {ref}", []


# -- the chat model -------------------------------------------------------------------------------


class FakeProviderChat(BaseChatModel):
    """A chat model with a real provider's habits (see module docstring)."""

    model: str = "fake-gpt-4"
    temperature: float = 0.0
    scenario: str = "chat"

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        return ["tests", "fake_provider"]

    @property
    def _llm_type(self) -> str:
        return "fake-provider"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "temperature": self.temperature, "scenario": self.scenario}

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(t) for t in tools]
        if tool_choice is not None and tool_choice not in ("auto", "none", "any", "required"):
            name = tool_choice if isinstance(tool_choice, str) else tool_choice["function"]["name"]
            tool_choice = {"type": "function", "function": {"name": name}}
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def _answer(
        self, messages: list[BaseMessage], kwargs: dict[str, Any]
    ) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
        text, calls = script(self.scenario, messages, list(kwargs.get("tools") or []))
        tool_calls = [
            {"name": n, "args": a, "id": f"call_{_hex(24)}", "type": "tool_call"} for n, a in calls
        ]
        prompt_tokens = sum(len(_text(m.content).split()) + 3 for m in messages)
        output_tokens = len(text.split()) + 5 * len(calls)
        usage = {
            "input_tokens": prompt_tokens,
            "output_tokens": output_tokens,
            "total_tokens": prompt_tokens + output_tokens,
        }
        metadata = {
            "model_name": f"{self.model}-2025-01-01",
            "created": time.time(),
            "system_fingerprint": f"fp_{_hex(8)}",
            "finish_reason": "tool_calls" if calls else "stop",
            "latency_ms": _rng.randint(50, 900),
        }
        return text, tool_calls, {"usage": usage, "metadata": metadata}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        _count(f"{self.scenario}:generate")
        text, tool_calls, extra = self._answer(messages, kwargs)
        message = AIMessage(
            content=text,
            tool_calls=tool_calls,
            id=f"chatcmpl-{_hex(20)}",
            usage_metadata=extra["usage"],  # type: ignore[arg-type]
            response_metadata=extra["metadata"],
        )
        return ChatResult(
            generations=[ChatGeneration(message=message)],
            llm_output={"token_usage": extra["usage"], "model_name": self.model},
        )

    def _chunks(
        self, messages: list[BaseMessage], kwargs: dict[str, Any]
    ) -> Iterator[ChatGenerationChunk]:
        text, tool_calls, extra = self._answer(messages, kwargs)
        response_id = f"chatcmpl-{_hex(20)}"
        words = text.split(" ") if text else []
        for index, word in enumerate(words):
            piece = word if index == 0 else " " + word
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece, id=response_id))
        for index, call in enumerate(tool_calls):
            args = json.dumps(call["args"])
            half = len(args) // 2
            first = {"name": call["name"], "args": "", "id": call["id"], "index": index}
            yield ChatGenerationChunk(
                message=AIMessageChunk(content="", id=response_id, tool_call_chunks=[first])
            )
            for part in (args[:half], args[half:]):
                chunk = {"name": None, "args": part, "id": None, "index": index}
                yield ChatGenerationChunk(
                    message=AIMessageChunk(content="", id=response_id, tool_call_chunks=[chunk])
                )
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                id=response_id,
                usage_metadata=extra["usage"],
                response_metadata=extra["metadata"],
                chunk_position="last",
            ),
            generation_info={"finish_reason": extra["metadata"]["finish_reason"]},
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        _count(f"{self.scenario}:stream")
        yield from self._chunks(messages, kwargs)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        _count(f"{self.scenario}:astream")
        for chunk in self._chunks(messages, kwargs):
            yield chunk


class FakeProviderLLM(BaseLLM):
    """A completion LLM like OpenAI's legacy completions: random suffix, usage, response ID."""

    model: str = "fake-davinci"
    temperature: float = 0.7

    @property
    def _llm_type(self) -> str:
        return "fake-provider-llm"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "temperature": self.temperature}

    def _generate(
        self,
        prompts: list[str],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> LLMResult:
        generations = []
        for prompt in prompts:
            _count("completion")
            text = f"Completion of {prompt!r}: roses are red #{_hex(6)}"
            info = {"finish_reason": "stop", "id": f"cmpl-{_hex(12)}", "created": time.time()}
            generations.append([Generation(text=text, generation_info=info)])
        return LLMResult(generations=generations, llm_output={"id": f"cmpl-{_hex(12)}"})
