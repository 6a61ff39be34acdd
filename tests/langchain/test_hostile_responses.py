"""A cassette is data, also when LangChain decodes it.

Real LangChain and LangGraph programs record, then the stored response is edited the way
a hostile or broken file would be: an ``lc`` constructor planted in every place a message
carries data (it comes back as the plain dict it is; no constructor runs, not even through
a LangGraph checkpointer), a stored error naming ``unittest.SkipTest`` or
``KeyboardInterrupt`` (refused with ``CassetteFormatError``; nothing is skipped), and
responses of the wrong shape (each a ``CassetteFormatError`` naming the file and the
interaction, never a bare ``KeyError`` or ``ValidationError`` at the model call).
"""

from __future__ import annotations

import unittest
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from fake_provider import FakeProviderChat
from langchain_core.embeddings import Embeddings
from langchain_core.globals import set_llm_cache
from langchain_core.load.serializable import Serializable
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import MemorySaver
from langgraph.prebuilt import create_react_agent

from chaincassette import CassetteFormatError, storage, use_cassette
from chaincassette.integrations.langchain import CassetteCache

# a replay of a broken cassette ends where the recording did not: that divergence is expected
pytestmark = pytest.mark.filterwarnings("ignore::chaincassette.trace.TraceDivergenceWarning")


class Planted(Serializable):
    """What a hostile cassette names: a loadable LangChain class whose constructor is seen."""

    built: ClassVar[list[str]] = []
    target: str = ""

    def __init__(self, **kwargs: Any) -> None:
        Planted.built.append(str(kwargs))
        super().__init__(**kwargs)

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        return __name__.split(".")


def lc_constructor(name: str = "Planted") -> dict[str, Any]:
    return {
        "lc": 1,
        "type": "constructor",
        "id": [*__name__.split("."), name],
        "kwargs": {
            "target": "https://evil.example/v1",
            "openai_api_key": {"lc": 1, "type": "secret", "id": ["OPENAI_API_KEY"]},
        },
    }


def edit(path: Path, change: Callable[[dict[str, Any]], None], index: int = 0) -> None:
    """Rewrite the response of interaction ``index`` in place, as a hand edit would."""
    document = storage.read(path, "yaml")
    assert document is not None
    change(document.interactions[index])
    storage.write_atomic(path, storage.dumps(document, "yaml"))


def model_calls(path: Path) -> list[int]:
    document = storage.read(path, "yaml")
    assert document is not None
    return [n for n, i in enumerate(document.interactions) if i["request"].get("kind") == "chat"]


# -- lc constructors come back as data ----------------------------------------------------------


def plant_everywhere(interaction: dict[str, Any]) -> None:
    response = interaction["response"]
    generation = response["generations"][0]
    data = generation["message"]["data"]
    data["additional_kwargs"] = {"planted": lc_constructor()}
    data["response_metadata"] = {"planted": lc_constructor(), "model": lc_constructor("ChatOpenAI")}
    data["content"] = [{"type": "text", "text": "hi"}, lc_constructor()]
    generation["generation_info"] = {"planted": lc_constructor()}
    response["llm_output"] = {"planted": lc_constructor()}


def test_an_lc_constructor_in_a_response_replays_as_plain_data(tmp_path: Path) -> None:
    path = tmp_path / "lc.yaml"
    checkpoints = MemorySaver()
    config = {"configurable": {"thread_id": "t"}}
    agent = create_react_agent(FakeProviderChat(scenario="chat"), [], checkpointer=checkpoints)
    with use_cassette(path, mode="record"):
        agent.invoke({"messages": [("user", "hello")]}, config)
    edit(path, plant_everywhere, model_calls(path)[0])
    Planted.built.clear()

    replayer = create_react_agent(FakeProviderChat(scenario="chat"), [], checkpointer=MemorySaver())
    with use_cassette(path, mode="replay"):
        out = replayer.invoke({"messages": [("user", "hello")]}, config)
    answer = out["messages"][-1]
    assert isinstance(answer, AIMessage)
    assert answer.additional_kwargs == {"planted": lc_constructor()}
    assert answer.response_metadata["model"] == lc_constructor("ChatOpenAI")
    assert answer.content == [{"type": "text", "text": "hi"}, lc_constructor()]
    stored = replayer.get_state(config).values["messages"][-1]  # through the checkpointer
    assert stored.additional_kwargs == {"planted": lc_constructor()}
    assert Planted.built == []  # no constructor ran


def test_an_lc_constructor_through_the_cache_and_a_stream_stays_data(tmp_path: Path) -> None:
    path = tmp_path / "cache.yaml"
    set_llm_cache(CassetteCache(path, mode="record"))
    FakeProviderChat(scenario="chat").invoke("hi")
    set_llm_cache(None)
    edit(path, plant_everywhere)
    Planted.built.clear()
    set_llm_cache(CassetteCache(path, mode="replay"))
    answer = FakeProviderChat(scenario="chat").invoke("hi")
    set_llm_cache(None)
    assert answer.additional_kwargs == {"planted": lc_constructor()} and Planted.built == []

    stream_path = tmp_path / "stream.yaml"
    with use_cassette(stream_path, mode="record"):
        list(FakeProviderChat(scenario="chat").stream("hi"))

    def plant_in_chunks(interaction: dict[str, Any]) -> None:
        for chunk in interaction["response"]["chunks"]:
            chunk["message"]["data"]["additional_kwargs"] = {"planted": lc_constructor()}

    edit(stream_path, plant_in_chunks)
    with use_cassette(stream_path, mode="replay"):
        chunks = list(FakeProviderChat(scenario="chat").stream("hi"))
    assert chunks[0].additional_kwargs == {"planted": lc_constructor()} and Planted.built == []


# -- stored errors that steer the program are refused -------------------------------------------


def steering_error(kind: str) -> dict[str, Any]:
    return {
        "type": kind,
        "bases": ["builtins.Exception", "builtins.BaseException"],
        "args": ["skip me"],
        "message": "skip me",
        "repr": "SkipTest('skip me')",
    }


def outcome(run: Callable[[], object]) -> BaseException | None:
    """What ``run`` raised, whatever it was: a ``SkipTest`` must not skip this test."""
    try:
        run()
    except BaseException as error:
        return error
    return None


@pytest.mark.parametrize(
    "kind",
    [
        "unittest.case.SkipTest",
        "_pytest.outcomes.Skipped",
        "builtins.KeyboardInterrupt",
        "builtins.SystemExit",
    ],
)
def test_a_stored_error_that_steers_the_program_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "skip.yaml"
    with use_cassette(path, mode="record"):
        FakeProviderChat(scenario="chat").invoke("hi")
    edit(path, lambda i: i.update(response={"error": steering_error(kind)}))
    with use_cassette(path, mode="replay"):
        raised = outcome(lambda: FakeProviderChat(scenario="chat").invoke("hi"))
    assert isinstance(raised, CassetteFormatError), repr(raised)
    document = storage.read(path, "yaml")
    assert document is not None
    assert f"interaction 0 (key {document.interactions[0]['key'][:12]})" in str(raised)
    assert kind in str(raised) and str(path) in str(raised)


def test_a_tool_replaying_a_skip_is_refused_and_a_live_skip_is_never_recorded(
    tmp_path: Path,
) -> None:
    @tool
    def get_weather(city: str) -> str:
        """Get weather."""
        return "sunny"

    @tool
    def get_time(tz: str) -> str:
        """Get time."""
        raise unittest.SkipTest("not today")

    path = tmp_path / "tools.yaml"

    def run() -> Any:
        agent = create_react_agent(FakeProviderChat(scenario="react"), [get_weather, get_time])
        return agent.invoke({"messages": [("user", "Weather and time in Paris?")]})

    with use_cassette(path, mode="record", replay_tools=True):
        assert isinstance(outcome(run), unittest.SkipTest)  # live, it skips as it did
    document = storage.read(path, "yaml")
    assert document is not None
    tools = [i for i in document.interactions if i["request"].get("kind") == "tool"]
    assert [t["request"]["tool"] for t in tools] == ["get_weather", "get_time"]
    assert tools[1]["response"] == {"live": True}  # the skip is not an answer to keep

    index = document.interactions.index(tools[0])
    edit(path, lambda i: i.update(response={"error": steering_error("unittest.SkipTest")}), index)
    with use_cassette(path, mode="replay", replay_tools=True):
        raised = outcome(run)
    assert not isinstance(raised, unittest.SkipTest), repr(raised)


# -- responses of the wrong shape -----------------------------------------------------------------


class CountingEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(t)), 0.5] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(len(text)), 0.5]


def chat_program() -> object:
    return FakeProviderChat(scenario="chat").invoke("hi")


def stream_program() -> object:
    return list(FakeProviderChat(scenario="chat").stream("hi"))


def generation(interaction: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = interaction["response"]["generations"][0]
    return found


def message_data(interaction: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = generation(interaction)["message"]["data"]
    return found


MALFORMED: dict[str, tuple[Callable[[], object], Callable[[dict[str, Any]], None]]] = {
    "chat: the response is a list": (chat_program, lambda i: i.update(response=["x"])),
    "chat: an unknown message type": (
        chat_program,
        lambda i: generation(i)["message"].update(type="martian"),
    ),
    "chat: a message without data": (chat_program, lambda i: generation(i)["message"].pop("data")),
    "chat: content of the wrong type": (chat_program, lambda i: message_data(i).update(content=5)),
    "chat: a tool call without a name": (
        chat_program,
        lambda i: message_data(i).update(tool_calls=[{"args": {}, "id": "c1"}]),
    ),
    "chat: a response of another shape": (chat_program, lambda i: i.update(response={"foo": 1})),
    "chat: no generations": (chat_program, lambda i: i["response"].update(generations=[])),
    "stream: a recorded answer of another shape": (
        stream_program,
        lambda i: i.update(response={"foo": 1}),
    ),
    "chat: generations that are text": (
        chat_program,
        lambda i: i["response"].update(generations="ok"),
    ),
    "stream: a chunk that is a number": (
        stream_program,
        lambda i: i["response"]["chunks"].insert(1, 7),
    ),
    "stream: chunks that are a mapping": (
        stream_program,
        lambda i: i["response"].update(chunks={"a": 1}),
    ),
    "embedding: a vector that is not base64": (
        lambda: CountingEmbeddings().embed_query("hello"),
        lambda i: i["response"]["vectors"].update(data=["%%% not base64 %%%"]),
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_response_that_does_not_decode_names_the_file_and_the_interaction(
    tmp_path: Path, case: str
) -> None:
    program, change = MALFORMED[case]
    path = tmp_path / "broken.yaml"
    with use_cassette(path, mode="record"):
        recorded = program()
    with use_cassette(path, mode="replay"):
        assert program().__class__ is recorded.__class__  # untouched, it replays
    before = storage.read(path, "yaml")
    assert before is not None
    key = before.interactions[0]["key"]
    edit(path, change)
    with use_cassette(path, mode="replay"), pytest.raises(CassetteFormatError) as caught:
        program()
    message = str(caught.value)
    assert f"cannot read cassette {path}" in message
    assert f"interaction 0 (key {key[:12]}) has a response that does not decode" in message


@pytest.mark.parametrize(
    "change",
    [
        lambda i: generation(i)["message"].update(type="martian"),
        lambda i: i["response"].update(generations=[]),
        lambda i: i.update(response={"foo": 1}),
    ],
    ids=["an unknown message type", "no generations", "another shape"],
)
def test_the_cache_path_names_a_broken_response_too(
    tmp_path: Path, change: Callable[[dict[str, Any]], None]
) -> None:
    path = tmp_path / "cache.yaml"
    set_llm_cache(CassetteCache(path, mode="record"))
    FakeProviderChat(scenario="chat").invoke("hi")
    set_llm_cache(None)
    edit(path, change)
    set_llm_cache(CassetteCache(path, mode="replay"))
    try:
        with pytest.raises(CassetteFormatError, match=r"interaction 0 .* does not decode"):
            FakeProviderChat(scenario="chat").invoke("hi")
    finally:
        set_llm_cache(None)
