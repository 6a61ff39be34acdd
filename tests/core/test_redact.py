"""Secrets: what counts as one (and what must not), in keys and on disk."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chaincassette import Cassette, CassetteSecretError, key_of, normalize
from chaincassette import redact as redact_module
from chaincassette.redact import _LITERALS, Redactor, is_secret_name, might_hold_secret


@pytest.mark.parametrize(
    "name",
    [
        "api_key",
        "openAIApiKey",
        "Ocp-Apim-Subscription-Key",
        "aws_secret_access_key",
        "passphrase",
        "Authorization",
        "x-api-key",
        "token",
        "client_secret",
    ],
)
def test_credential_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["max_tokens", "eos_token", "stop_token", "token_count", "tokenizer", "key", "keys"]
)
def test_names_that_are_not_credentials(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    "text",
    [
        "Summarize the risk-assessment-framework-2023 doc",
        "see task-management-dashboard-v2",
        "curl -H 'Authorization: Bearer YOUR_ACCESS_TOKEN'",
        "sk-learn is a library",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    redactor = Redactor()
    assert redactor.redact_text(text) == text
    assert list(redactor.find(text)) == []
    other = text + " (second variant)"
    assert key_of(normalize({"prompt": text})) != key_of(normalize({"prompt": other}))


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("key sk-proj-" + "Ab1" * 15, "openai-key"),
        ("Authorization: Bearer abc123def456ghi789jkl", "bearer-token"),
        ("https://api.example/v1?api_key=abcdef123456&x=1", "url-credential"),
        ("AKIAABCDEFGHIJKLMNOP", "aws-access-key"),
    ],
)
def test_key_formats_are_found_and_redacted(text: str, kind: str) -> None:
    redactor = Redactor()
    assert f"<redacted:{kind}>" in redactor.redact_text(text)
    assert [f.kind for f in redactor.find(text)] == [kind]


def tool_request(schema_property: str, param_value: Any = 1) -> dict[str, Any]:
    return {
        "kind": "chat",
        "params": {"eos_token": param_value},
        "tools": [{"name": "login", "parameters": {"properties": {schema_property: {}}}}],
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "name": "login", "args": {"token": "x1"}}],
            }
        ],
    }


def test_semantic_fields_named_like_secrets_stay_in_the_key() -> None:
    base = key_of(normalize(tool_request("token")))
    assert base != key_of(normalize(tool_request("password")))  # a tool schema change
    assert base != key_of(normalize(tool_request("token", param_value=2)))  # a sampling param
    changed = tool_request("token")
    changed["messages"][0]["tool_calls"][0]["args"]["token"] = "x2"
    assert base != key_of(normalize(changed))  # a tool argument


def test_user_patterns_mask_the_key_too(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"

    def request(token: str) -> dict[str, Any]:
        return {"kind": "chat", "messages": [{"role": "user", "content": f"use corp-{token}"}]}

    recorder = Cassette(path, mode="record", redact_patterns=[r"corp-[0-9a-f]{16}"])
    recorder.begin(request("0123456789abcdef")).answer(lambda: "ok")
    recorder.save()
    assert "0123456789abcdef" not in path.read_text()
    rotated = Cassette(path, redact_patterns=[r"corp-[0-9a-f]{16}"])
    assert rotated.begin(request("fedcba9876543210")).answer(lambda: None) == "ok"


def test_a_response_secret_can_be_allowed_and_the_error_says_how(tmp_path: Path) -> None:
    example = "sk-proj-" + "Xy9" * 12

    def record(**options: Any) -> Cassette:
        cassette = Cassette(tmp_path / "c.yaml", mode="record", **options)
        cassette.begin({"kind": "chat", "prompt": "show an example key"}).answer(lambda: example)
        return cassette

    with pytest.raises(CassetteSecretError) as info:
        record().save()
    assert "openai-key at interactions[0].response" in str(info.value)
    assert "allow_secrets" in str(info.value) and "redact_patterns" not in str(info.value)
    assert record(allow_secrets=[r"sk-proj-(Xy9)+"]).save()
    assert (
        Cassette(tmp_path / "c.yaml")
        .begin({"kind": "chat", "prompt": "show an example key"})
        .answer(lambda: None)
        == example
    )


def test_the_cheap_precheck_looks_for_every_literal_the_patterns_need() -> None:
    """``might_hold_secret`` spells ``_LITERALS`` out one by one: it must say yes to each,
    wherever it sits, and no to text holding none of them."""
    for literal in _LITERALS:
        assert might_hold_secret(f"x{literal}y"), literal
    assert might_hold_secret("https://h/p?a=1") and might_hold_secret("a=1&b=2")
    assert not might_hold_secret("Shipment 7: 77 kg, from Rotterdam to Lyon = heavy")


def spelled_out(name: str) -> bool:
    """``is_secret_name`` as its rule reads: camelCase and dashes to snake_case, then one of
    the exact names, or ending with ``_`` and a suffix (or being one)."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    snake = snake.lower().replace("-", "_").replace(".", "_")
    if snake in {"token", "auth", "bearer"}:
        return True
    return any(snake == s or snake.endswith("_" + s) for s in redact_module._SECRET_SUFFIXES)


name_parts = st.sampled_from(
    [
        "api",
        "Api",
        "API",
        "key",
        "Key",
        "KEY",
        "token",
        "Token",
        "secret",
        "auth",
        "my",
        "x",
        "access",
        "refresh",
        "id",
        "max",
        "eos",
        "cookie",
        "password",
        "-",
        "_",
        ".",
        "\n",
        "1",
    ]
)


@given(st.lists(name_parts, max_size=5).map("".join) | st.text(max_size=12))
def test_secret_names_follow_the_rule(name: str) -> None:
    assert is_secret_name(name) == spelled_out(name)
