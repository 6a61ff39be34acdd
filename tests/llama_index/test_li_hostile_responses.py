"""A cassette is data, also when LlamaIndex decodes it.

A ``FunctionAgent`` on a ``CassetteLLM`` records, then the stored response is edited as a
hostile or broken file would be: ``__pydantic__`` tags naming a pydantic class the program
has imported (its validator writes a file, as in the report that found this), in ``raw``,
in a message's ``additional_kwargs`` and in a tool's output, come back as plain data and
run nothing; a stored error naming ``unittest.SkipTest`` is refused; and responses of the
wrong shape each raise ``CassetteFormatError`` naming the file and the interaction.
"""

from __future__ import annotations

import asyncio
import unittest
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from li_fake_provider import FakeProvider
from li_scenarios import add, policy
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage
from pydantic import BaseModel, model_validator

from chaincassette import CassetteFormatError, storage, use_cassette
from chaincassette.integrations.llama_index import CassetteLLM

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::chaincassette.trace.TraceDivergenceWarning"),
]

WITNESS_FILE: list[Path] = []


class Witness(BaseModel):
    """A class of the program's own, already imported: its validator has a side effect."""

    seen: ClassVar[list[Any]] = []
    x: int = 0

    @model_validator(mode="before")
    @classmethod
    def _side_effect(cls, data: Any) -> Any:
        Witness.seen.append(data)
        for path in WITNESS_FILE:
            path.write_text("the validator ran")
        return data


def tagged(name: str = f"{__name__}:Witness") -> dict[str, Any]:
    return {"__pydantic__": name, "data": {"x": 1}}


def edit(path: Path, change: Callable[[dict[str, Any]], None], index: int = 0) -> None:
    document = storage.read(path, "yaml")
    assert document is not None
    change(document.interactions[index])
    storage.write_atomic(path, storage.dumps(document, "yaml"))


def run_agent(llm: Any) -> str:
    agent = FunctionAgent(tools=[add], llm=llm)

    async def go() -> str:
        return str(await agent.run(user_msg="What is 2 + 3?"))

    return asyncio.run(go())


def chat_indexes(path: Path) -> list[int]:
    document = storage.read(path, "yaml")
    assert document is not None
    return [n for n, i in enumerate(document.interactions) if i["request"].get("kind") == "chat"]


def test_a_pydantic_tag_naming_an_imported_class_replays_as_plain_data(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    recorded = run_agent(CassetteLLM(FakeProvider(policy=policy), cassette=path, mode="record"))
    first, last = chat_indexes(path)[0], chat_indexes(path)[-1]

    def plant(interaction: dict[str, Any]) -> None:
        stored = interaction["response"]
        for response in stored["chunks"] if "chunks" in stored else [stored["response"]]:
            response["raw"] = tagged()
            response["additional_kwargs"] = {"planted": tagged()}
            if "message" in response:  # a streamed chunk stores its message only when new
                response["message"]["additional_kwargs"]["planted"] = tagged()

    edit(path, plant, first)
    edit(path, plant, last)
    WITNESS_FILE.append(tmp_path / "ran.txt")
    Witness.seen.clear()
    try:
        llm = CassetteLLM(FakeProvider(policy=policy), cassette=path, mode="replay")
        assert run_agent(llm) == recorded
        chat_path = tmp_path / "chat.yaml"
        question = [ChatMessage(role="user", content="What is 2 + 3?")]
        CassetteLLM(FakeProvider(policy=policy), cassette=chat_path, mode="record").chat(question)
        edit(chat_path, plant)
        replayer = CassetteLLM(FakeProvider(policy=policy), cassette=chat_path, mode="replay")
        response = replayer.chat(question)
    finally:
        WITNESS_FILE.clear()
    assert Witness.seen == [] and not (tmp_path / "ran.txt").exists()  # no validator ran
    assert response.raw == {"x": 1} and response.additional_kwargs == {"planted": {"x": 1}}
    assert response.message.additional_kwargs["planted"] == {"x": 1}


def test_the_tagged_objects_a_decode_builds_are_a_fixed_list() -> None:
    from chaincassette.integrations.llama_index import codec

    Witness.seen.clear()
    message = codec.decode_message(
        {"role": "assistant", "blocks": [], "additional_kwargs": {"a": tagged(), "b": [tagged()]}}
    )
    assert message.additional_kwargs == {"a": {"x": 1}, "b": [{"x": 1}]} and Witness.seen == []
    assert all(":" in name and name.startswith("openai.") for name in codec.PROVIDER_OBJECTS)


def test_a_tool_output_tag_replays_as_plain_data(tmp_path: Path) -> None:
    from llama_index.core.tools import FunctionTool

    path = tmp_path / "tools.yaml"
    adder = FunctionTool.from_defaults(add)
    with use_cassette(path, mode="record", replay_tools=True):
        adder.call(a=2, b=3)
    edit(path, lambda i: i["response"]["output"].update(raw_output=tagged()))
    Witness.seen.clear()
    with use_cassette(path, mode="replay", replay_tools=True) as cassette:
        output = adder.call(a=2, b=3)
    assert cassette.stats.replayed == 1 and output.raw_output == {"x": 1}
    assert Witness.seen == []


def test_a_stored_skip_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "skip.yaml"
    run_agent(CassetteLLM(FakeProvider(policy=policy), cassette=path, mode="record"))
    error = {
        "type": "unittest.case.SkipTest",
        "bases": ["builtins.Exception", "builtins.BaseException"],
        "message": "skipped",
    }
    edit(path, lambda i: i.update(response={"error": error}), chat_indexes(path)[0])
    raised: BaseException | None = None
    try:
        run_agent(CassetteLLM(FakeProvider(policy=policy), cassette=path, mode="replay"))
    except BaseException as caught:
        raised = caught
    assert not isinstance(raised, unittest.SkipTest)
    found = raised
    while found is not None and not isinstance(found, CassetteFormatError):  # workflows wrap
        found = found.__cause__ or found.__context__
    assert isinstance(found, CassetteFormatError), repr(raised)
    assert "unittest.case.SkipTest" in str(found) and str(path) in str(found)


# -- responses of the wrong shape -----------------------------------------------------------------


def chat(llm: CassetteLLM) -> object:
    return llm.chat([ChatMessage(role="user", content="hi")])


def stream(llm: CassetteLLM) -> object:
    return list(llm.stream_chat([ChatMessage(role="user", content="hi")]))


def complete(llm: CassetteLLM) -> object:
    return llm.complete("hi")


def body(interaction: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = interaction["response"]["response"]
    return found


MALFORMED: dict[str, tuple[Callable[[CassetteLLM], object], Callable[[dict[str, Any]], None]]] = {
    "chat: no message": (chat, lambda i: body(i).pop("message")),
    "chat: a role that is none": (chat, lambda i: body(i)["message"].update(role="wizard")),
    "chat: a block of no known type": (
        chat,
        lambda i: body(i)["message"].update(blocks=[{"block_type": "hologram"}]),
    ),
    "chat: logprobs that are text": (chat, lambda i: body(i).update(logprobs="many")),
    "chat: bytes that are not base64": (
        chat,
        lambda i: body(i)["message"]["additional_kwargs"].update(sig={"__bytes__": "%%%"}),
    ),
    "chat: additional_kwargs that are a list": (
        chat,
        lambda i: body(i)["message"].update(additional_kwargs=["x"]),
    ),
    "chat: no response at all": (chat, lambda i: i.update(response={"answer": 42})),
    "stream: a chunk that is a number": (stream, lambda i: i["response"]["chunks"].insert(0, 3)),
    "complete: text that is a mapping": (complete, lambda i: body(i).update(text={"a": 1})),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_response_that_does_not_decode_names_the_file_and_the_interaction(
    tmp_path: Path, case: str
) -> None:
    program, change = MALFORMED[case]
    path = tmp_path / "broken.yaml"
    program(CassetteLLM(FakeProvider(policy=policy), cassette=path, mode="record"))
    replayer = CassetteLLM(FakeProvider(policy=policy), cassette=path, mode="replay")
    program(replayer)  # untouched, it replays
    document = storage.read(path, "yaml")
    assert document is not None
    key = document.interactions[0]["key"]
    edit(path, change)
    replayer = CassetteLLM(FakeProvider(policy=policy), cassette=path, mode="replay")
    with pytest.raises(CassetteFormatError) as caught:
        program(replayer)
    message = str(caught.value)
    assert f"cannot read cassette {path}" in message
    assert f"interaction 0 (key {key[:12]}) has a response that does not decode" in message


def test_a_tool_output_of_the_wrong_shape_is_named(tmp_path: Path) -> None:
    from llama_index.core.tools import FunctionTool

    path = tmp_path / "tool.yaml"
    adder = FunctionTool.from_defaults(add)
    with use_cassette(path, mode="record", replay_tools=True):
        assert adder.call(a=2, b=3).raw_output == 5
    edit(path, lambda i: i["response"]["output"].pop("tool_name"))
    with (
        use_cassette(path, mode="replay", replay_tools=True),
        pytest.raises(CassetteFormatError, match=r"interaction 0 .* KeyError: 'tool_name'"),
    ):
        adder.call(a=2, b=3)
