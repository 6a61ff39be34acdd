"""A throwaway pytest project of agent tests, written in a few variants for ``bench_suite.py``.

Each test runs a LangGraph ReAct agent (``create_react_agent``, two tools, a system prompt)
on one question: ``agent_script.TOOL_CALLS`` tool calls, then an answer, so one model call
more than that (``kind="agent"``); or asks the model once (``kind="single"``: small
cassettes, for the memory benchmark). The tests are the same in every variant; only the
model and what replays it differ:

- ``floor``: a scripted ``BaseChatModel`` taking the same steps, no cassette, no plugin;
- ``chaincassette``: ``ChatOpenAI`` against a local fake OpenAI server, replayed by the
  ``cassette`` fixture (recorded once with ``--cassette-mode=once``);
- ``vcrpy``: the same ``ChatOpenAI`` replayed from HTTP by pytest-recording's
  ``@pytest.mark.vcr`` (recorded once with ``--record-mode=once``, matched on the body);
- ``live``: the same ``ChatOpenAI`` calling the fake server, no cassette (the memory floor:
  the same client objects, nothing recorded).

Every variant's project carries ``probe.py``, a plugin that writes, when asked, the
process's RSS after chosen numbers of tests and the CPU time of the session's phases.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

HERE = Path(__file__).parent
VARIANTS = ("floor", "floor-app", "chaincassette", "vcrpy", "live")
TESTS_PER_MODULE = 20

APP = '''
"""The agent under test, its tools, and the model each variant runs it on."""

import os
import time
import uuid
import warnings
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

from agent_script import next_step

SYSTEM = (
    "You are a travel assistant. Look the weather and the local time up with the tools "
    "before you answer, and answer in one short paragraph."
)
CITIES = ["Paris", "Lima", "Oslo", "Cairo", "Quito", "Hanoi", "Dakar", "Perth"]


@tool
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"{12 + len(city)}C and sunny in {city}."


@tool
def get_local_time(city: str) -> str:
    """The local time in a city."""
    return f"It is {len(city) % 12 + 1} pm in {city}."


TOOLS = [get_weather, get_local_time]


def question(n: int) -> str:
    return f"Day {n} of my trip: what is it like in {CITIES[n % len(CITIES)]}?"


class ScriptedChat(BaseChatModel):
    """The floor: the fake server's steps (``agent_script``), with a provider's random ids."""

    model_name: str = "gpt-4o-mini"

    @property
    def _llm_type(self) -> str:
        return "scripted-chat"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any):
        user = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
        names = [t["function"]["name"] for t in kwargs.get("tools") or []]
        step = next_step(str(user.content), results, names)
        calls = []
        text = step if isinstance(step, str) else ""
        if not isinstance(step, str):
            calls = [{"name": step[0], "args": step[1], "id": f"call_{uuid.uuid4().hex[:24]}"}]
        usage = {"input_tokens": 30 * len(messages), "output_tokens": 14, "total_tokens": 0}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        message = AIMessage(
            content=text,
            tool_calls=calls,
            id=f"chatcmpl-{uuid.uuid4()}",
            usage_metadata=usage,
            response_metadata={
                "model_name": "gpt-4o-mini-2024-07-18",
                "system_fingerprint": f"fp_{uuid.uuid4().hex[:10]}",
                "created": int(time.time()),
                "finish_reason": "tool_calls" if calls else "stop",
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def chat_model() -> Any:
    variant = os.environ["BENCH_VARIANT"]
    if variant == "floor":
        return ScriptedChat()
    from langchain_openai import ChatOpenAI

    url = os.environ.get("BENCH_OPENAI_URL", "http://127.0.0.1:9/v1")  # replay: a dead port
    model = ChatOpenAI(model="gpt-4o-mini", temperature=0, base_url=url, max_retries=0)
    # floor-app: the app's own ChatOpenAI is imported and built, the agent runs scripted
    return ScriptedChat() if variant == "floor-app" else model


def build_agent() -> Any:
    return create_react_agent(chat_model(), TOOLS, prompt=SYSTEM)
'''

TEST_MODULE = """
import pytest

from app import build_agent, chat_model, question

AGENT = build_agent()  # built at import, as the README's example does
MODEL = chat_model()
{config}

{marks}@pytest.mark.parametrize("n", range({first}, {last}))
def test_agent(n{fixture}):
{body}
"""

AGENT_BODY = """\
    result = AGENT.invoke({"messages": [("user", question(n))]})
    answer = result["messages"][-1].content
    assert answer.startswith("Here is what I found") and question(n).split()[-1][:-1] in answer
"""
SINGLE_BODY = """\
    assert MODEL.invoke(question(n)).content.startswith("Paris is sunny")
"""

VCR_CONFIG = """

@pytest.fixture(scope="module")
def vcr_config():
    return {"match_on": ["method", "path", "body"], "filter_headers": ["authorization"]}
"""

PROBE_PLUGIN = '''
"""What the benchmark reads from inside the session, written only when asked for:

- ``BENCH_RSS_FILE``: the process's RSS (after ``gc.collect()``) once each number of tests in
  ``BENCH_RSS_AT`` has run;
- ``BENCH_PHASES_FILE``: where the session's CPU time (``time.process_time``) goes: up to
  the end of ``pytest_configure``, collection, the first test, the other tests' setup,
  call and teardown and the hooks around them (reports, plugins' wrappers), the end of the
  session up to this plugin's ``atexit`` handler (which runs after those registered later).
"""

import atexit
import gc
import json
import os
import time

import pytest

AT = {int(n) for n in os.environ.get("BENCH_RSS_AT", "").split(",") if n}
RSS_FILE = os.environ.get("BENCH_RSS_FILE")
PHASES_FILE = os.environ.get("BENCH_PHASES_FILE")
done = [0]
cpu = {"setup": 0.0, "call": 0.0, "teardown": 0.0, "hooks": 0.0, "first test": 0.0}
marks = {}
clock = time.process_time


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    marks["configured"] = clock()


def pytest_collection_finish(session):
    marks["collected"] = clock()


def _timed(phase):
    start = clock()
    try:
        return (yield)
    finally:
        if done[0]:
            cpu[phase] += clock() - start


pytest_runtest_setup = pytest.hookimpl(wrapper=True, tryfirst=True)(
    lambda item: (yield from _timed("setup"))
)
pytest_runtest_call = pytest.hookimpl(wrapper=True, tryfirst=True)(
    lambda item: (yield from _timed("call"))
)
pytest_runtest_teardown = pytest.hookimpl(wrapper=True, tryfirst=True)(
    lambda item, nextitem: (yield from _timed("teardown"))
)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    start = clock()
    phases = cpu["setup"] + cpu["call"] + cpu["teardown"]
    try:
        return (yield)
    finally:
        spent = clock() - start
        if done[0] == 0:
            cpu["first test"] += spent
        else:
            cpu["hooks"] += spent - (cpu["setup"] + cpu["call"] + cpu["teardown"] - phases)
        done[0] += 1
        if RSS_FILE and done[0] in AT:
            gc.collect()
            with open(RSS_FILE, "a") as out:
                out.write(f"{done[0]} {rss_kib()}\\n")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    marks["tests run"] = clock()


@atexit.register
def _write_phases():
    if PHASES_FILE:
        marks["exit"] = clock()
        with open(PHASES_FILE, "w") as out:
            json.dump({"marks": marks, "cpu": cpu, "tests": done[0]}, out)
'''

INI = """\
[pytest]
testpaths = tests
pythonpath = .
addopts = -p probe
filterwarnings = ignore::DeprecationWarning
"""


def write(root: Path, variant: str, tests: int, kind: str = "agent") -> Path:
    """Write the ``variant`` project of ``tests`` tests under ``root/variant``; its path."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    project = root / variant
    (project / "tests").mkdir(parents=True, exist_ok=True)
    (project / "pytest.ini").write_text(INI)
    (project / "app.py").write_text(APP.lstrip())
    (project / "probe.py").write_text(PROBE_PLUGIN.lstrip())
    shutil.copy(HERE / "agent_script.py", project / "agent_script.py")
    body = AGENT_BODY if kind == "agent" else SINGLE_BODY
    for module, first in enumerate(range(0, tests, TESTS_PER_MODULE)):
        text = TEST_MODULE.format(
            config=VCR_CONFIG if variant == "vcrpy" else "",
            marks="@pytest.mark.vcr\n" if variant == "vcrpy" else "",
            first=first,
            last=min(first + TESTS_PER_MODULE, tests),
            fixture=", cassette" if variant == "chaincassette" else "",
            body=textwrap.indent(textwrap.dedent(body), "    "),
        )
        (project / "tests" / f"test_agents_{module:03d}.py").write_text(text.lstrip())
    return project
