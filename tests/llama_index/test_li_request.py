"""The canonical request of a LlamaIndex call, built from real LlamaIndex objects.

Each test states the whole request (or the part it is about), so a change to what enters
the key, or how, fails here before any program notices.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

from li_fake_provider import FakeProvider, ToolCallObject
from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.tools import FunctionTool
from pydantic import BaseModel

from chaincassette import media
from chaincassette.integrations.llama_index import request
from chaincassette.integrations.llama_index.request import (
    KeyFacts,
    chat_request,
    completion_request,
    endpoint_request,
    key_facts,
    message_dict,
    messages_list,
    sampling_params,
    tool_request,
)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


ADD_SCHEMA = {
    "type": "function",
    "function": {
        "name": "add",
        # this module's annotations are strings (``from __future__ import annotations``)
        "description": "add(a: 'int', b: 'int') -> 'int'\nAdd two integers.",
        "parameters": {
            "properties": {
                "a": {"title": "A", "type": "integer"},
                "b": {"title": "B", "type": "integer"},
            },
            "required": ["a", "b"],
            "type": "object",
        },
    },
}


def conversation() -> list[ChatMessage]:
    return [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content="2+3?"),
        ChatMessage(
            role="assistant",
            blocks=[
                ThinkingBlock(content="sum"),
                TextBlock(text="Let me add."),
                ToolCallBlock(tool_call_id="call_1", tool_name="add", tool_kwargs={"a": 2, "b": 3}),
            ],
            additional_kwargs={
                "tool_calls": [ToolCallObject(id="call_1", name="add", arguments="{}")],
                "prompt_tokens": 3,
                "id": "resp-1",
            },
        ),
        ChatMessage(role="tool", content="5", additional_kwargs={"tool_call_id": "call_1"}),
        ChatMessage(
            role="assistant",
            content="",
            additional_kwargs={
                "tool_calls": [ToolCallObject(id="call_2", name="add", arguments='{"a": 1}')]
            },
        ),
        ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id=None, tool_name="add", tool_kwargs='{"a": 4}')],
        ),
    ]


def test_messages_keep_role_content_tool_calls_and_the_call_they_answer() -> None:
    assert messages_list(conversation()) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+3?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "content": "sum"},
                {"block_type": "text", "text": "Let me add."},
            ],
            "tool_calls": [{"id": "call_1", "name": "add", "args": {"a": 2, "b": 3}}],
        },
        {"role": "tool", "content": "5", "tool_call_id": "call_1"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_2", "name": "add", "arguments": '{"a": 1}'}],
        },
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "", "name": "add", "args": {"a": 4}}],
        },
    ]


def test_a_tool_call_request_is_provider_neutral() -> None:
    llm = FakeProvider(temperature=0.2, max_tokens=9)
    assert request.model_name(llm) == "fake-model-1"
    assert sampling_params(llm) == {"temperature": 0.2, "max_tokens": 9}
    tools = tool_request(
        [FunctionTool.from_defaults(add)],
        conversation()[:2],
        True,
        False,
        {"tool_choice": "add", "seed": 1},
    )
    assert chat_request("m", sampling_params(llm), [], {}, True, tools) == {
        "kind": "chat",
        "model": "m",
        "stream": True,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "2+3?"},
        ],
        "tools": [ADD_SCHEMA],
        "tool_choice": {"required": False, "parallel": True, "choice": "add"},
        "params": {"temperature": 0.2, "max_tokens": 9, "seed": 1},
    }
    required = tool_request([], [], False, True, {})
    assert required["tool_choice"] == {"required": True, "parallel": False, "choice": None}


def test_plain_chat_and_completion_requests() -> None:
    call = {"tools": [ADD_SCHEMA], "tool_choice": "auto", "top_p": 0.5, "timeout": 3}
    assert chat_request("m", {"seed": 2}, conversation()[:1], call, False) == {
        "kind": "chat",
        "model": "m",
        "stream": False,
        "messages": [{"role": "system", "content": "Be brief."}],
        "tools": [ADD_SCHEMA],
        "tool_choice": "auto",
        "params": {"seed": 2, "top_p": 0.5},
    }
    assert completion_request("m", {"temperature": 0.1}, "hi", True, {"top_k": 3}, False) == {
        "kind": "completion",
        "model": "m",
        "stream": False,
        "prompt": "hi",
        "formatted": True,
        "params": {"temperature": 0.1, "top_k": 3},
    }
    params = {"temperature": 0.1}
    completion_request("m", params, "hi", False, {"api_key": "k"}, True)
    assert params == {"temperature": 0.1}  # the caller's params are not changed


def test_an_endpoint_call_is_read_as_llamaindex_passes_it() -> None:
    """``endpoint_request``, the one builder of ``CassetteLLM`` and the boundary: the call's
    arguments as the endpoint gets them, the LLM read only for a call that has them."""
    facts: KeyFacts = ("m", {"seed": 2}, "llama_index.llms.ollama.base:Ollama")
    read: list[str] = []

    def of_llm() -> KeyFacts:
        read.append("read")
        return facts

    hi = conversation()[:1]
    by_position = endpoint_request(of_llm, "astream_chat", (hi,), {"top_p": 0.5})
    assert by_position == endpoint_request(
        of_llm, "stream_chat", (), {"messages": hi, "top_p": 0.5}
    )
    assert by_position == chat_request("m", {"seed": 2}, hi, {"top_p": 0.5}, True, positional=True)
    assert by_position["tool_result_ids"] is False and by_position["stream"] is True
    tools = tool_request([], hi, False, True, {})
    assert endpoint_request(of_llm, "chat", (hi,), {}, tools) == chat_request(
        "m", {"seed": 2}, [], {}, False, tools, positional=True
    )
    expected = completion_request("m", {"seed": 2}, "hi", True, {"top_k": 3}, False)
    for args, kwargs in (
        (("hi", True), {"top_k": 3}),
        (("hi",), {"formatted": True, "top_k": 3}),
        ((), {"prompt": "hi", "formatted": 1, "top_k": 3}),
    ):
        assert endpoint_request(of_llm, "acomplete", args, kwargs) == expected
    assert endpoint_request(of_llm, "complete", (), {"prompt": "hi"})["formatted"] is False
    read.clear()
    assert endpoint_request(of_llm, "complete", (), {"formatted": True}) is None
    assert endpoint_request(of_llm, "achat", (), {"tools": []}) is None
    assert read == []  # no prompt, no messages: the LLM's own endpoint raises, nothing read


def test_the_key_facts_of_an_llm() -> None:
    assert key_facts(FakeProvider(temperature=0.2, max_tokens=9)) == (
        "fake-model-1",
        {"temperature": 0.2, "max_tokens": 9},
        "li_fake_provider",
    )
    reader = request.SamplingReader(FakeProvider)
    assert key_facts(FakeProvider(top_p=0.5), reader)[1] == {"temperature": 0.0, "top_p": 0.5}


def test_transport_settings_leave_params_and_their_additional_kwargs() -> None:
    params = {"seed": 1, "timeout": 5, "additional_kwargs": {"api_key": "k", "logit_bias": {}}}
    assert request.without_transport(params) == {"seed": 1, "additional_kwargs": {"logit_bias": {}}}
    only_transport = {"seed": 1, "additional_kwargs": {"extra_headers": {"X": "1"}}}
    assert request.without_transport(only_transport) == {"seed": 1}


class Color(enum.Enum):
    RED = "red"


class Pet(BaseModel):
    name: str


def test_keyword_arguments_become_stable_json() -> None:
    assert request.plain(None) is None
    assert request.plain(Color.RED) == "red"
    assert request.plain({1: (1, 2)}) == {"1": [1, 2]}
    assert request.plain({"b", "a"}) == ["a", "b"]
    assert request.plain(frozenset({2, 1})) == [1, 2]
    assert request.plain(Pet)["pydantic"] == "Pet"
    assert request.plain(Pet)["schema"]["required"] == ["name"]
    assert request.plain(Pet(name="Rex")) == {"name": "Rex"}
    assert request.plain(b"\x00") == request.plain(bytearray(b"\x00")) != "b'\\x00'"
    assert request.plain(add) == f"{__name__}.add"
    assert request.plain(FunctionTool.from_defaults(add)) == ADD_SCHEMA
    assert request.plain(ChatMessage(role="user", content="x")) == {"role": "user", "content": "x"}

    class Odd:
        def __repr__(self) -> str:
            return "Odd()"

    assert request.plain(Odd()) == "Odd()"


def test_sampling_params_skip_unset_and_empty_values() -> None:
    llm: Any = FakeProvider(temperature=0.0)
    assert sampling_params(llm) == {"temperature": 0.0}

    class Dynamic:
        """Not pydantic: its ``__getattr__`` is asked for every field."""

        def __getattr__(self, name: str) -> Any:
            return {"top_k": 5, "additional_kwargs": {}}.get(name)

    assert sampling_params(Dynamic()) == {"top_k": 5}


def test_provider_tool_call_objects_name_their_id_id() -> None:
    from llama_index.core.llms.llm import ToolSelection

    selection = ToolSelection(tool_id="call_9", tool_name="add", tool_kwargs={"a": 1})
    both = {"id": "call_1", "tool_id": "other", "name": "add"}
    message = ChatMessage(
        role="assistant", content="", additional_kwargs={"tool_calls": [selection, both]}
    )
    assert request.message_dict(message)["tool_calls"] == [
        {"tool_name": "add", "tool_kwargs": {"a": 1}, "id": "call_9"},
        {"id": "call_1", "tool_id": "other", "name": "add"},
    ]


def test_the_model_name_falls_back_to_the_model_fields_when_metadata_fails() -> None:
    class Broken:
        @property
        def metadata(self) -> Any:
            raise RuntimeError("no metadata for this model")

    llm: Any = Broken()
    assert request.model_name(llm) is None  # neither field exists: no name, nothing raised
    llm.model_name = "by-model-name"
    assert request.model_name(llm) == "by-model-name"
    llm.model = "by-model"
    assert request.model_name(llm) == "by-model"


def test_a_tool_with_a_long_description_still_has_a_schema() -> None:
    def verbose(a: int) -> int:
        return a

    tool = FunctionTool.from_defaults(verbose, description="x" * 2000)
    assert request.tool_schema(tool)["function"]["description"] == "x" * 2000


def test_sampling_params_find_fields_properties_and_extras_only() -> None:
    # a new class per run: the per-class cache of attribute names starts empty
    class Sampled(BaseModel):
        """A pydantic LLM-like object: fields, a property and extra fields all count."""

        model_config = {"extra": "allow"}
        temperature: float = 0.5

        @property
        def top_k(self) -> int:
            return 3

    assert sampling_params(Sampled()) == {"temperature": 0.5, "top_k": 3}
    assert sampling_params(Sampled(seed=4, timeout=9)) == {
        "temperature": 0.5,
        "top_k": 3,
        "seed": 4,
    }
    assert sampling_params(object()) == {}  # nothing to read, nothing raised


def test_a_block_naming_a_local_file_stores_the_hash_of_its_bytes(tmp_path: Path) -> None:
    """What the provider sends is the file: its hash joins the block (key rules 3); a path
    that cannot be read, or a block that carries its bytes inline, keeps the block as it is."""
    image = tmp_path / "picture.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n")
    with_path = message_dict(
        ChatMessage(role="user", blocks=[TextBlock(text="?"), ImageBlock(path=image)])
    )
    stored = with_path["content"][1]
    assert stored["path"] == str(image)
    assert stored["path_content_hash"] == media.bytes_hash(image.read_bytes())
    gone = tmp_path / "gone.png"  # LlamaIndex checks that the file exists when it builds the block
    gone.write_bytes(image.read_bytes())
    deleted = ImageBlock(path=gone)
    gone.unlink()
    for block in (deleted, ImageBlock(image=image.read_bytes())):
        dumped = message_dict(ChatMessage(role="user", blocks=[TextBlock(text="?"), block]))
        assert "path_content_hash" not in dumped["content"][1]
