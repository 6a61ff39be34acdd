"""A scripted provider ``FunctionCallingLLM`` that behaves like a real one.

Like OpenAI's integration it mints random tool-call IDs (``call_<hex>``), returns a pydantic
``raw`` with a random response ID, a timestamp and usage, streams cumulative messages with
``delta`` per chunk and tool-call arguments as growing partial JSON, and keeps the provider
objects in ``additional_kwargs``. A ``policy`` decides what it answers. Every transport call
is counted in ``FakeProvider.calls`` (per process) so replays can assert zero.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import ToolSelection
from llama_index.core.llms.utils import parse_partial_json
from pydantic import BaseModel, Field


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class RawCompletion(BaseModel):
    """Stands in for ``openai.types.chat.ChatCompletion``: volatile on every call."""

    id: str
    created: float
    model: str
    usage: Usage | None = None


class ToolCallObject(BaseModel):
    """Stands in for a provider tool-call object kept in ``additional_kwargs``."""

    id: str
    name: str
    arguments: str


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    thinking: str | None = None


Policy = Callable[[Sequence[ChatMessage], list[dict[str, Any]]], Reply]


def _rid(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


class FakeProvider(FunctionCallingLLM):
    """A provider-like function-calling LLM driven by a ``policy`` function."""

    model: str = "fake-model-1"
    temperature: float = 0.0
    max_tokens: int | None = None  # sampling settings a real provider has (unset: not sent)
    top_p: float | None = None
    policy: Any = Field(default=None, exclude=True)

    calls: ClassVar[list[str]] = []

    @classmethod
    def class_name(cls) -> str:
        return "FakeProvider"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=32000,
            num_output=512,
            is_chat_model=True,
            is_function_calling_model=True,
            model_name=self.model,
        )

    # -- tools, as OpenAI does it ---------------------------------------------------------

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[Any],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        messages = list(chat_history or [])
        if isinstance(user_msg, str):
            messages.append(ChatMessage(role=MessageRole.USER, content=user_msg))
        elif user_msg is not None:
            messages.append(user_msg)
        return {
            "messages": messages,
            "tools": [t.metadata.to_openai_tool() for t in tools] or None,
            "tool_choice": "required" if tool_required else "auto",
            "parallel_tool_calls": allow_parallel_tool_calls,
            **kwargs,
        }

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        blocks = [b for b in response.message.blocks if isinstance(b, ToolCallBlock)]
        if not blocks and error_on_no_tool_call:
            raise ValueError("Expected at least one tool call, but got 0 tool calls.")
        out = []
        for block in blocks:
            args = block.tool_kwargs
            if isinstance(args, str):
                try:
                    args = parse_partial_json(args)
                except ValueError:
                    args = {}
            out.append(
                ToolSelection(
                    tool_id=block.tool_call_id or "", tool_name=block.tool_name, tool_kwargs=args
                )
            )
        return out

    # -- answering -----------------------------------------------------------------------

    def _reply(self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]) -> Reply:
        return self.policy(messages, kwargs.get("tools") or [])  # type: ignore[no-any-return]

    def _raw(self, text: str) -> RawCompletion:
        n = len(text.split())
        return RawCompletion(
            id=_rid("chatcmpl-"),
            created=time.time(),
            model=self.model + "-2026-01-01",
            usage=Usage(prompt_tokens=10, completion_tokens=n, total_tokens=10 + n),
        )

    def _chunks(self, reply: Reply) -> list[ChatResponse]:
        """Cumulative messages, OpenAI-style: text by words, then tool JSON in halves."""
        ids = [_rid("call_") for _ in reply.tool_calls]
        chunks: list[ChatResponse] = []
        text = ""
        thinking = ""
        if reply.thinking:
            for word in reply.thinking.split(" "):
                piece = word if not thinking else " " + word
                thinking += piece
                chunks.append(self._chunk(text, thinking, [], ids, "", thinking_delta=piece))
        words = reply.text.split(" ") if reply.text else []
        for i, word in enumerate(words):
            piece = word if i == 0 else " " + word
            text += piece
            chunks.append(self._chunk(text, thinking, [], ids, piece))
        done: list[str] = []
        for _name, args in reply.tool_calls:
            full = json.dumps(args)
            half = full[: max(1, len(full) // 2)]
            chunks.append(
                self._chunk(text, thinking, [*done, half], ids, "", names=reply.tool_calls)
            )
            done.append(full)
            chunks.append(self._chunk(text, thinking, list(done), ids, "", names=reply.tool_calls))
        if not chunks:
            chunks.append(self._chunk("", thinking, [], ids, ""))
        return chunks

    def _chunk(
        self,
        text: str,
        thinking: str,
        tool_args: list[str],
        ids: list[str],
        delta: str,
        names: list[tuple[str, dict[str, Any]]] | None = None,
        thinking_delta: str | None = None,
    ) -> ChatResponse:
        blocks: list[Any] = []
        if thinking:
            blocks.append(ThinkingBlock(content=thinking))
        blocks.append(TextBlock(text=text))
        objects = []
        for i, args in enumerate(tool_args):
            name = (names or [])[i][0]
            blocks.append(ToolCallBlock(tool_call_id=ids[i], tool_name=name, tool_kwargs=args))
            objects.append(ToolCallObject(id=ids[i], name=name, arguments=args))
        extra: dict[str, Any] = {"tool_calls": objects} if objects else {}
        message = ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks, additional_kwargs=extra)
        kwargs = {"thinking_delta": thinking_delta} if thinking_delta else {}
        return ChatResponse(
            message=message, delta=delta, raw=self._raw(text), additional_kwargs=kwargs
        )

    def _final(self, reply: Reply) -> ChatResponse:
        last = self._chunks(reply)[-1]
        last.delta = None
        last.additional_kwargs = {"prompt_tokens": 10, "completion_tokens": len(reply.text.split())}
        if last.message.blocks and isinstance(last.message.blocks[-1], ToolCallBlock):
            for block in last.message.blocks:
                if isinstance(block, ToolCallBlock) and isinstance(block.tool_kwargs, str):
                    block.tool_kwargs = json.loads(block.tool_kwargs)
        return last

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        FakeProvider.calls.append("chat")
        return self._final(self._reply(messages, kwargs))

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        FakeProvider.calls.append("achat")
        return self._final(self._reply(messages, kwargs))

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        FakeProvider.calls.append("stream_chat")
        chunks = self._chunks(self._reply(messages, kwargs))

        def gen() -> Generator[ChatResponse, None, None]:
            yield from chunks

        return gen()

    @llm_chat_callback()
    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        FakeProvider.calls.append("astream_chat")
        chunks = self._chunks(self._reply(messages, kwargs))

        async def gen() -> AsyncGenerator[ChatResponse, None]:
            for chunk in chunks:
                yield chunk

        return gen()

    def _complete_reply(self, prompt: str) -> str:
        return self._reply([ChatMessage(role=MessageRole.USER, content=prompt)], {}).text

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        FakeProvider.calls.append("complete")
        text = self._complete_reply(prompt)
        return CompletionResponse(text=text, raw=self._raw(text))

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        FakeProvider.calls.append("acomplete")
        text = self._complete_reply(prompt)
        return CompletionResponse(text=text, raw=self._raw(text))

    def _completion_chunks(self, prompt: str) -> list[CompletionResponse]:
        text, out = "", []
        for i, word in enumerate(self._complete_reply(prompt).split(" ")):
            piece = word if i == 0 else " " + word
            text += piece
            out.append(CompletionResponse(text=text, delta=piece, raw=self._raw(text)))
        return out

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        FakeProvider.calls.append("stream_complete")
        chunks = self._completion_chunks(prompt)

        def gen() -> Generator[CompletionResponse, None, None]:
            yield from chunks

        return gen()

    @llm_completion_callback()
    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        FakeProvider.calls.append("astream_complete")
        chunks = self._completion_chunks(prompt)

        async def gen() -> AsyncGenerator[CompletionResponse, None]:
            for chunk in chunks:
                yield chunk

        return gen()
