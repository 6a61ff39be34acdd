"""A LlamaIndex program replayed after one key field changed misses, naming that field.

Each case records a real ``FunctionAgent`` run once, then replays it with one thing changed
(the model, a sampling parameter, a tool's schema, the tool choice, a message) and expects a
``CassetteMiss`` whose message names the changed field, with no provider call. Both ways
into a cassette are driven: the ``CassetteLLM`` wrapper and the class-level interception
under ``use_cassette`` (an unmodified program).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from li_fake_provider import FakeProvider
from li_scenarios import add, policy
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.tools import FunctionTool

from chaincassette import CassetteMiss, use_cassette
from chaincassette.integrations.llama_index import CassetteLLM

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

QUESTION = "What is 2 + 3?"


def add_v2(a: int, b: int, c: int = 0) -> int:
    """Add two or three integers."""
    return a + b + c


def provider(**fields: Any) -> FakeProvider:
    return FakeProvider(policy=policy, **fields)


def agent_run(
    llm: Any,
    prompt: str = QUESTION,
    tools: list[Any] | None = None,
    **agent_options: Any,
) -> str:
    agent = FunctionAgent(
        tools=tools or [FunctionTool.from_defaults(add)], llm=llm, **agent_options
    )

    async def go() -> str:
        return str(await agent.run(user_msg=prompt))

    return asyncio.run(go())


def direct_call(llm: Any, **kwargs: Any) -> str:
    """``chat_with_tools`` as a hand-written program calls it (tool_required, tool_choice…)."""
    tools = [FunctionTool.from_defaults(add)]
    question = [ChatMessage(role="user", content=QUESTION)]
    return str(llm.chat_with_tools(tools, chat_history=question, **kwargs).message.content)


#: (what changed, how the program is run with it, the field the miss must name)
Program = Callable[[Callable[..., Any]], str]
AGENT_CASES: list[tuple[str, Program, str]] = [
    ("model", lambda llm: agent_run(llm(model="fake-model-2")), "model:"),
    ("temperature", lambda llm: agent_run(llm(temperature=0.7)), "params.temperature"),
    ("max_tokens", lambda llm: agent_run(llm(max_tokens=64)), "params.max_tokens"),
    ("top_p", lambda llm: agent_run(llm(top_p=0.5)), "params.top_p"),
    (
        "tool schema",
        lambda llm: agent_run(llm(), tools=[FunctionTool.from_defaults(add_v2, name="add")]),
        "tools[add]",
    ),
    (
        "parallel tool calls",
        lambda llm: agent_run(llm(), allow_parallel_tool_calls=False),
        "tool_choice.parallel",
    ),
    ("user message", lambda llm: agent_run(llm(), prompt="What is 2 + 4?"), "(user).content"),
    (
        "system prompt",
        lambda llm: agent_run(llm(), system_prompt="You add numbers."),
        "messages[0] (system)",
    ),
]
DIRECT_CASES: list[tuple[str, Program, str]] = [
    ("tool_required", lambda llm: direct_call(llm(), tool_required=True), "tool_choice.required"),
    ("tool_choice", lambda llm: direct_call(llm(), tool_choice="add"), "tool_choice.choice"),
    ("temperature", lambda llm: direct_call(llm(), temperature=0.9), "params.temperature"),
]


def wrapped(path: Path, mode: str) -> Callable[..., Any]:
    """Provider factory for programs that wrap their LLM in ``CassetteLLM``."""
    return lambda **fields: CassetteLLM(provider(**fields), cassette=path, mode=mode)


def _check_miss(path: Path, record: Program, changed: Program, named: str, via: str) -> None:
    if via == "wrapper":
        record(wrapped(path, "record"))
        calls = len(FakeProvider.calls)
        assert calls > 0
        assert record(wrapped(path, "replay"))  # unchanged: replays
        with pytest.raises(CassetteMiss) as caught:
            changed(wrapped(path, "replay"))
    else:
        with use_cassette(path, mode="record"):
            record(provider)
        calls = len(FakeProvider.calls)
        assert calls > 0
        with use_cassette(path, mode="replay"):
            assert record(provider)  # unchanged: replays
        with pytest.raises(CassetteMiss) as caught, use_cassette(path, mode="replay"):
            changed(provider)
    assert named in str(caught.value), str(caught.value)
    assert len(FakeProvider.calls) == calls, "a miss in replay called the provider"


@pytest.mark.parametrize("via", ["wrapper", "class-level"])
@pytest.mark.parametrize(
    ("changed", "named"),
    [(c[1], c[2]) for c in AGENT_CASES],
    ids=[c[0] for c in AGENT_CASES],
)
def test_an_agent_with_one_field_changed_misses_naming_it(
    tmp_path: Path, via: str, changed: Program, named: str
) -> None:
    _check_miss(tmp_path / "agent.yaml", lambda llm: agent_run(llm()), changed, named, via)


@pytest.mark.parametrize("via", ["wrapper", "class-level"])
@pytest.mark.parametrize(
    ("changed", "named"),
    [(c[1], c[2]) for c in DIRECT_CASES],
    ids=[c[0] for c in DIRECT_CASES],
)
def test_chat_with_tools_with_one_option_changed_misses_naming_it(
    tmp_path: Path, via: str, changed: Program, named: str
) -> None:
    _check_miss(tmp_path / "direct.yaml", lambda llm: direct_call(llm()), changed, named, via)
