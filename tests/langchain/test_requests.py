"""The canonical request built from the two strings LangChain hands a cache.

The inputs are LangChain's own: ``dumps`` of real messages and a real model's
``_get_llm_string``. Each test states the whole request (or the part it is about), so a
change to what enters the key, or how, fails here before any program notices.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_provider import FakeProviderChat
from langchain_core.load import dumps
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from chaincassette.integrations.langchain import requests
from chaincassette.integrations.langchain.requests import build_request, parse_llm_string

TOOLS = [{"type": "function", "function": {"name": "get_weather"}}]


def conversation() -> list[Any]:
    return [
        SystemMessage("Be brief."),
        HumanMessage("Weather in Paris?"),
        AIMessage(
            "",
            id="run-1",
            tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_abc"}],
            response_metadata={"created": 1},
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ),
        ToolMessage("Sunny", tool_call_id="call_abc", name="get_weather"),
        ToolMessage("boom", tool_call_id="call_def", status="error"),
    ]


def llm_string(model: Any = None, **call: Any) -> str:
    model = model or FakeProviderChat(temperature=0.3)
    return str(model._get_llm_string(**call))


def test_a_chat_call_keeps_what_changes_the_answer_and_nothing_else() -> None:
    prompt = dumps(conversation())
    string = llm_string(stop=["END"], tools=TOOLS, tool_choice="auto", timeout=5)
    assert requests.is_chat_prompt(prompt) and not requests.is_chat_prompt("plain text")
    assert build_request(prompt, string, stream=True) == {
        "kind": "chat",
        "model": "fake-gpt-4",
        "tools": TOOLS,
        "tool_choice": "auto",
        "stop": ["END"],
        "params": {"scenario": "chat", "temperature": 0.3},
        "model_class": "tests.fake_provider.FakeProviderChat",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_abc"}
                ],
            },
            {"role": "tool", "content": "Sunny", "name": "get_weather", "tool_call_id": "call_abc"},
            {"role": "tool", "content": "boom", "status": "error", "tool_call_id": "call_def"},
        ],
        "stream": True,
    }
    assert build_request(prompt, string)["stream"] is False


def test_a_completion_prompt_is_kept_as_text() -> None:
    string = llm_string(stop=None)
    assert build_request("Tell me a joke", string) == {
        "kind": "completion",
        "model": "fake-gpt-4",
        "params": {"scenario": "chat", "temperature": 0.3},
        "model_class": "tests.fake_provider.FakeProviderChat",
        "prompt": "Tell me a joke",
    }
    # text that merely looks like a message list stays text
    for text in ('[{"lc": 1', '[{"lc": 1}, 2]', '[{"lc"}]'):
        assert build_request(text, string)["prompt"] == text


@pytest.mark.parametrize("name", ["model", "model_name", "model_id", "deployment_name"])
def test_the_model_name_is_found_under_each_field_name(name: str) -> None:
    head = json.dumps({"id": ["x", "Chat"], "kwargs": {name: "m-1", "temperature": 0}})
    model, params, source = parse_llm_string(head + "---[('stop', None)]")
    assert (model, params, source) == ("m-1", {"stop": None, "temperature": 0}, "x.Chat")


def test_without_a_model_name_the_type_or_class_names_the_model() -> None:
    assert parse_llm_string("[('_type', 'fake-llm'), ('n', 2)]") == (
        "fake-llm",
        {"_type": "fake-llm", "n": 2},
        None,
    )
    head = json.dumps({"id": ["pkg", "Chat"], "kwargs": {"model": ""}})
    assert parse_llm_string(head + "---")[0] == "pkg.Chat"
    assert parse_llm_string("")[0] == "unknown"


def test_transport_settings_and_secrets_never_reach_the_params() -> None:
    secret = {"lc": 1, "type": "secret", "id": ["OPENAI_API_KEY"]}
    kwargs = {"model": "m", "api_key": secret, "base_url": "http://a", "max_retries": 3, "top_p": 1}
    head = json.dumps({"id": ["x", "Chat"], "kwargs": kwargs})
    string = head + "---[('timeout', 5), ('stream', True), ('callbacks', None), ('seed', 7)]"
    assert parse_llm_string(string)[1] == {"seed": 7, "top_p": 1}
    nested = {"model": "m", "extra": {"key": secret, "keep": 1}}
    assert parse_llm_string(json.dumps({"kwargs": nested}) + "---")[1] == {"extra": {"keep": 1}}


def test_unreadable_call_arguments_are_kept_as_text_without_addresses() -> None:
    string = "[('tools', [<Tool object at 0x7f00deadbeef>])]"
    assert parse_llm_string(string)[1] == {"unparsed_params": "[('tools', [<Tool object>])]"}
    assert parse_llm_string("{'a': 1}")[1] == {"unparsed_params": "{'a': 1}"}
    assert parse_llm_string("[('a', 1, 2)]")[1] == {"unparsed_params": "[('a', 1, 2)]"}
    broken = '{"kwargs": ---[("n", 1)]'  # a head that is not JSON: the whole string is the call
    assert parse_llm_string(broken)[1] == {"unparsed_params": broken}


def test_literals_become_plain_json() -> None:
    head = json.dumps(
        {
            "kwargs": {
                "model": "m",
                "schema": {"lc": 1, "type": "not_implemented", "repr": "<Pet at 0x1234>"},
                "escaped": {"__lc_escaped__": {"a": 1}},
            }
        }
    )
    string = head + "---[('pair', (1, 2)), ('tags_set', {'b', 'a'}), ('obj', 1j)]"
    assert parse_llm_string(string)[1] == {
        "escaped": {"a": 1},
        "obj": "1j",
        "pair": [1, 2],
        "schema": "<Pet>",
        "tags_set": ["a", "b"],
    }


def test_each_caller_gets_its_own_params() -> None:
    string = llm_string(stop=["END"])
    first = parse_llm_string(string)[1]
    first["temperature"] = 99
    assert parse_llm_string(string)[1]["temperature"] == 0.3


def test_message_noise_is_dropped_and_content_blocks_lose_langchain_ids() -> None:
    ai = AIMessage(
        [{"type": "text", "text": "Hi", "id": "lc_123"}, {"type": "text", "text": "!", "id": "x"}],
        additional_kwargs={"refusal": None, "reasoning": "short"},
        name="bot",
        example=False,
    )
    human = HumanMessage(["plain", {"type": "text", "text": "block"}])
    (one, two) = [requests.message_from_lc(m) for m in json.loads(dumps([ai, human]))]
    assert one == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "!", "id": "x"}],
        "additional_kwargs": {"refusal": None, "reasoning": "short"},
        "name": "bot",
    }
    assert two == {"role": "user", "content": ["plain", {"type": "text", "text": "block"}]}
    custom = {"lc": 1, "id": ["x", "ChatMessage"], "kwargs": {"role": "critic", "content": "no"}}
    assert requests.message_from_lc(custom) == {"role": "critic", "content": "no"}
    assert requests.message_from_lc({"id": ["x", "FunctionMessage"]}) == {
        "role": "FunctionMessage",
        "content": "",
    }
    invalid = {"kwargs": {"type": "ai", "invalid_tool_calls": [{"name": "f", "index": 0}]}}
    assert requests.message_from_lc(invalid) == {
        "role": "assistant",
        "content": "",
        "invalid_tool_calls": [{"name": "f"}],
    }


def test_messages_without_a_type_take_their_role_from_the_class_or_say_unknown() -> None:
    assert requests.message_from_lc({}) == {"role": "unknown", "content": ""}
    function = {"id": ["langchain", "schema", "messages", "FunctionMessage"], "kwargs": {}}
    assert requests.message_from_lc(function)["role"] == "FunctionMessage"
    # empty values never enter the key; tool calls that are not dicts are kept as they are
    message = {"kwargs": {"type": "ai", "content": "x", "name": "", "tool_calls": [["f", 1]]}}
    assert requests.message_from_lc(message) == {
        "role": "assistant",
        "content": "x",
        "tool_calls": [["f", 1]],
    }
