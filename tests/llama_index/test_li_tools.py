"""Tool replay (``replay_tools=True``): recorded errors, workflow control flow, scoping."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from li_fake_provider import FakeProvider, Reply
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent

from chaincassette import Cassette, CassetteMiss, use_cassette
from chaincassette.error_codec import encode_error, rebuild_error
from chaincassette.integrations.llama_index import RecordedToolError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

RUNS: list[Any] = []


def answer_with_tool_result(call: tuple[str, dict[str, Any]]) -> Any:
    def policy(messages: Any, tools: list[dict[str, Any]]) -> Reply:
        results = [m.content for m in messages if m.role.value == "tool"]
        if results:
            return Reply(text="Done: " + (results[-1] or ""))
        return Reply(tool_calls=[call])

    return policy


def run(tool: Any, call: tuple[str, dict[str, Any]], prompt: str = "go") -> str:
    agent = FunctionAgent(tools=[tool], llm=FakeProvider(policy=answer_with_tool_result(call)))

    async def go() -> str:
        return str(await agent.run(user_msg=prompt))

    return asyncio.run(go())


# -- recorded errors read exactly as they did ----------------------------------------------------


def lookup_key(a: int) -> int:
    """Look a number up."""
    RUNS.append(a)
    return {"x": 1}[str(a)]  # KeyError('2'): str is "'2'"


def test_a_tool_error_replays_with_the_recorded_message(tmp_path: Path) -> None:
    path = tmp_path / "error.yaml"
    RUNS.clear()
    with use_cassette(path, mode="record", replay_tools=True):
        recorded = run(lookup_key, ("lookup_key", {"a": 2}))
    assert recorded == "Done: '2'" and RUNS == [2]
    calls = len(FakeProvider.calls)
    for _ in range(2):
        with use_cassette(path, mode="replay", replay_tools=True):
            assert run(lookup_key, ("lookup_key", {"a": 2})) == recorded
    assert RUNS == [2] and len(FakeProvider.calls) == calls


class Unusual(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(code)
        self.detail = detail

    def __str__(self) -> str:
        return f"E{self.args[0]}: {self.detail}"


@pytest.mark.parametrize(
    "error",
    [
        KeyError("2"),
        ValueError("two", 2),
        OSError(2, "No such file"),
        KeyError(("a", 1)),
        ValueError(object()),
        Unusual(7, "detail lives outside args"),
        RecordedToolError("already recorded", "x.Y", "Y('already recorded')"),
    ],
)
def test_a_rebuilt_error_reads_exactly_as_recorded(error: Exception) -> None:
    stored = yaml.safe_load(yaml.safe_dump(encode_error(error)))
    rebuilt = rebuild_error(stored)
    assert (str(rebuilt), repr(rebuilt)) == (str(error), repr(error))
    assert isinstance(rebuilt, (type(error), RecordedToolError))


def test_a_cassette_never_imports_the_module_it_names() -> None:
    name = "chaincassette_test_never_imported"
    stored = {"type": f"{name}.Boom", "message": "boom", "repr": "Boom('boom')", "args": ["boom"]}
    rebuilt = rebuild_error(stored)
    assert isinstance(rebuilt, RecordedToolError) and name not in sys.modules
    assert (str(rebuilt), repr(rebuilt), rebuilt.type_name) == (
        "boom",
        "Boom('boom')",
        stored["type"],
    )
    # a class that is loaded here is rebuilt; an old recording without args/repr still works
    assert (
        type(rebuild_error({"type": f"{__name__}.Unusual", "message": "E1: x"}))
        is RecordedToolError
    )
    assert (
        repr(rebuild_error({"type": "builtins.ValueError", "message": "bad"}))
        == "ValueError('bad')"
    )


# -- workflow control flow is not a tool error ---------------------------------------------------


async def approve(ctx: Context, x: int) -> str:
    """Needs a human's approval."""
    RUNS.append(x)
    event = await ctx.wait_for_event(
        HumanResponseEvent, waiter_id="approval", waiter_event=InputRequiredEvent(prefix="ok?")
    )
    return f"approved={event.response}"


# LlamaIndex finds the Context parameter by its real annotation (this module has string ones).
approve.__annotations__ = {"ctx": Context, "x": int, "return": str}


async def run_with_human(tool: Any) -> dict[str, Any]:
    policy = answer_with_tool_result(("approve", {"x": 1}))
    agent = FunctionAgent(tools=[tool], llm=FakeProvider(policy=policy))
    handler = agent.run(user_msg="do it")
    asked = 0
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            asked += 1
            handler.ctx.send_event(HumanResponseEvent(response="yes"))
    return {"answer": str(await handler), "asked": asked}


def test_a_tool_waiting_for_a_human_is_not_recorded_as_an_error(tmp_path: Path) -> None:
    path = tmp_path / "hitl.yaml"
    RUNS.clear()
    with use_cassette(path, mode="record", replay_tools=True):
        recorded = asyncio.run(run_with_human(approve))
    assert recorded == {"answer": "Done: approved=yes", "asked": 1}
    tools = [i.response for i in Cassette(path).interactions if i.request["kind"] == "tool"]
    assert len(tools) == 1 and "error" not in tools[0]  # only the approved result
    calls = len(FakeProvider.calls)
    for _ in range(2):
        with use_cassette(path, mode="replay", replay_tools=True) as cassette:
            replayed = asyncio.run(asyncio.wait_for(run_with_human(approve), 20))
        assert replayed["answer"] == recorded["answer"]
        assert cassette.trace_divergence is None  # the paused first attempt is no tool call
    assert len(FakeProvider.calls) == calls


# -- a CassetteLLM's tool replay covers its own agents' tool calls only --------------------------


def lookup(q: str) -> str:
    """Look something up."""
    RUNS.append(q)
    return f"live result for {q}"


def test_a_cassette_llm_replays_its_agents_tools_and_no_others(tmp_path: Path) -> None:
    from chaincassette import Cassette
    from chaincassette.integrations.llama_index import CassetteLLM

    path = tmp_path / "a.yaml"
    policy = answer_with_tool_result(("lookup", {"q": "agent"}))
    unrelated = FunctionTool.from_defaults(lookup)

    async def agent_run(llm: Any) -> str:
        return str(await FunctionAgent(tools=[lookup], llm=llm).run(user_msg="find it"))

    RUNS.clear()
    recorder = CassetteLLM(
        FakeProvider(policy=policy), cassette=path, mode="record", replay_tools=True
    )
    recorded = asyncio.run(agent_run(recorder))
    assert unrelated.call(q="outside").content == "live result for outside"
    with use_cassette(tmp_path / "b.yaml", mode="record"):
        assert unrelated.call(q="in b").content == "live result for in b"
    assert RUNS == ["agent", "outside", "in b"]
    kinds = [(i.request["kind"], i.request.get("tool")) for i in Cassette(path).interactions]
    assert kinds.count(("tool", "lookup")) == 1  # only the agent's call

    RUNS.clear()
    calls = len(FakeProvider.calls)
    for _ in range(2):
        replayer = CassetteLLM(None, cassette=path, mode="replay", replay_tools=True)
        assert asyncio.run(agent_run(replayer)) == recorded
        assert unrelated.call(q="elsewhere").content == "live result for elsewhere"
    assert RUNS == ["elsewhere", "elsewhere"] and len(FakeProvider.calls) == calls


def test_a_type_tag_never_imports_the_module_it_names(tmp_path: Path) -> None:
    """``{"__pydantic__": "module:Class"}`` in a cassette must not run ``module``'s code."""
    from chaincassette.integrations.llama_index import codec

    (tmp_path / "chaincassette_planted_module.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_suffix('.ran').write_text('ran')\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        tagged = {"__pydantic__": "chaincassette_planted_module:Boom", "data": {"x": 1}}
        assert codec.untag({"raw": tagged}) == {"raw": {"x": 1}}
        assert "chaincassette_planted_module" not in sys.modules
        assert not (tmp_path / "chaincassette_planted_module.ran").exists()
    finally:
        sys.path.remove(str(tmp_path))


# -- an answer the cassette cannot store --------------------------------------------------------


def test_a_refused_tool_output_does_not_hold_back_the_next_recording_of_its_call(
    tmp_path: Path,
) -> None:
    """A tool output JSON cannot carry (a NaN) is refused with a ``TypeError``; the
    program tries again and gets a number. That second recording is kept (it waited behind
    the refused one forever, so the file was never written), and calls one after another
    store no ``order`` (the refused one stayed "running")."""
    prices = iter([float("nan"), 101.5, 99.0])

    def price(ticker: str) -> dict[str, float]:
        """The last price of a stock."""
        return {"price": next(prices)}

    def run() -> list[Any]:
        tool = FunctionTool.from_defaults(fn=price)
        seen: list[Any] = []
        for ticker in ("ACME", "ACME", "INIT"):
            try:
                seen.append(tool.call(ticker=ticker).raw_output)
            except TypeError:
                seen.append("refused")
        return seen

    path = tmp_path / "refused.yaml"
    with use_cassette(path, mode="record", replay_tools=True):
        assert run() == ["refused", {"price": 101.5}, {"price": 99.0}]
    stored = Cassette(path, mode="replay").interactions
    assert [i.response["output"]["raw_output"] for i in stored] == [
        {"price": 101.5},
        {"price": 99.0},
    ]
    assert all("order" not in i.meta for i in stored)
    for _ in range(2):  # the first ACME call now gets the answer its retry was given
        with (
            use_cassette(path, mode="replay", replay_tools=True),
            pytest.raises(CassetteMiss) as miss,
        ):
            run()
        assert "already been played 1 time" in str(miss.value)
