"""Canonical requests of SDK bodies, keyed by the engine's one rule list: what the model
reads decides the key; provider ids, opaque tokens, transport settings and headers do not."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from chaincassette import Cassette
from chaincassette.integrations.sdk.requests import canonical_request
from chaincassette.integrations.sdk.wire import Client

OPENAI = Client("openai", "openai")
ANTHROPIC = Client("anthropic", "anthropic")


@pytest.fixture
def key(tmp_path: Path) -> Any:
    cassette = Cassette(tmp_path / "k.yaml", mode="replay")

    def key_of(client: Client, path: str, body: Any, **extra: Any) -> str:
        request, _ = canonical_request(
            client, extra.get("method", "POST"), path, extra.get("query", {}), body, b"", ""
        )
        return cassette.key_for(request)

    return key_of


def chat_turn(call_id: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "Sunny"},
        ],
        "tools": tools,
        "temperature": 0,
    }


TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {}}},
]


def test_chat_completions_alias_call_ids_and_treat_tools_as_a_set(key: Any) -> None:
    one = key(OPENAI, "/v1/chat/completions", chat_turn("call_abc", TOOLS))
    assert one == key(OPENAI, "/v1/chat/completions", chat_turn("call_xyz", TOOLS[::-1]))
    assert one == key(OPENAI, "/openai/v1/chat/completions", chat_turn("call_q", TOOLS))
    changed = chat_turn("call_abc", TOOLS)
    changed["temperature"] = 0.5
    assert key(OPENAI, "/v1/chat/completions", changed) != one
    streamed = {**chat_turn("call_abc", TOOLS), "stream": True}
    assert key(OPENAI, "/v1/chat/completions", streamed) != one


def test_the_same_question_through_two_apis_is_two_keys(key: Any) -> None:
    chat = key(
        OPENAI,
        "/v1/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": "Hi"}]},
    )
    responses = key(OPENAI, "/v1/responses", {"model": "m", "input": "Hi"})
    assert chat != responses
    assert responses == key(
        OPENAI, "/v1/responses", {"model": "m", "input": [{"role": "user", "content": "Hi"}]}
    )


def test_responses_items_lose_item_ids_and_encrypted_reasoning(key: Any) -> None:
    def body(n: str) -> dict[str, Any]:
        return {
            "model": "o4-mini",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
                {
                    "type": "reasoning",
                    "id": f"rs_{n}",
                    "summary": [{"type": "summary_text", "text": "Use the tool."}],
                    "encrypted_content": f"gAAAA{n}",
                },
                {
                    "type": "function_call",
                    "id": f"fc_{n}",
                    "call_id": f"call_{n}",
                    "name": "get_weather",
                    "arguments": "{}",
                    "status": "completed",
                },
                {"type": "function_call_output", "call_id": f"call_{n}", "output": "Sunny"},
            ],
            "include": ["reasoning.encrypted_content"],
        }

    assert key(OPENAI, "/v1/responses", body("1")) == key(OPENAI, "/v1/responses", body("2"))
    other = body("1")
    other["input"][-1]["output"] = "Rain"
    assert key(OPENAI, "/v1/responses", other) != key(OPENAI, "/v1/responses", body("1"))


def test_anthropic_system_first_tool_use_ids_aliased_signatures_left_out(key: Any) -> None:
    def body(n: str, system: Any = "Be terse.") -> dict[str, Any]:
        return {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "system": system,
            "metadata": {"user_id": f"user-{n}"},
            "messages": [
                {"role": "user", "content": "Weather?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "Tool.", "signature": f"sig{n}"},
                        {"type": "tool_use", "id": f"toolu_{n}", "name": "w", "input": {}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "Sun"}
                    ],
                },
            ],
        }

    assert key(ANTHROPIC, "/v1/messages", body("1")) == key(ANTHROPIC, "/v1/messages", body("2"))
    blocks = [{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}]
    assert key(ANTHROPIC, "/v1/messages", body("1", blocks)) == key(
        ANTHROPIC, "/v1/messages", body("1", [{"type": "text", "text": "Be terse."}])
    )
    assert key(ANTHROPIC, "/v1/messages", body("1", "Be verbose.")) != key(
        ANTHROPIC, "/v1/messages", body("1")
    )


def test_embeddings_keyed_by_model_input_and_what_shapes_the_vectors(key: Any) -> None:
    body = {"model": "text-embedding-3-small", "input": ["a", "b"], "encoding_format": "base64"}
    same = key(OPENAI, "/v1/embeddings", body)
    assert same == key(OPENAI, "/v1/embeddings", copy.deepcopy(body))
    assert same != key(OPENAI, "/v1/embeddings", {**body, "dimensions": 256})
    assert same != key(OPENAI, "/v1/embeddings", {**body, "input": ["b", "a"]})


def test_azure_names_the_model_in_the_path() -> None:
    request, endpoint = canonical_request(
        OPENAI,
        "POST",
        "/openai/deployments/my-gpt/chat/completions",
        {"api-version": "2024-10-21"},
        {"messages": []},
        b"",
        "application/json",
    )
    assert request["model"] == "my-gpt" and endpoint == "chat.completions"


def test_a_request_no_rule_understands_is_keyed_by_method_path_and_body(key: Any) -> None:
    request, endpoint = canonical_request(
        OPENAI,
        "GET",
        "/v1/models",
        {"limit": "5", "api-version": "1", "timeout": "3"},
        None,
        b"",
        "",
    )
    assert request == {
        "kind": "http",
        "method": "GET",
        "path": "/v1/models",
        "query": {"limit": "5"},
    }
    assert endpoint == "GET /v1/models"
    threads = {"role": "user", "content": "Hi"}
    assert key(OPENAI, "/v1/threads/t1/messages", threads) != key(
        OPENAI, "/v1/threads/t2/messages", threads
    )


def test_a_multipart_body_is_keyed_without_its_random_boundary() -> None:
    def upload(boundary: str) -> dict[str, Any]:
        raw = (
            f"--{boundary}\r\nContent-Disposition: form-data; name=file; filename=a.txt\r\n\r\n"
            f"hello\r\n--{boundary}--\r\n"
        ).encode()
        kind = f"multipart/form-data; boundary={boundary}"
        return canonical_request(OPENAI, "POST", "/v1/files", {}, None, raw, kind)[0]

    assert upload("1a2b3c") == upload("9z8y7x")
    assert "body_sha256" in upload("1a2b3c")
