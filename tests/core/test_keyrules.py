"""The key rules: what the model reads is keyed, provider tokens and transport are not.

Property tests: a request rebuilt with fresh provider tokens (ids, signatures, encrypted
reasoning, item ids, ids used as dict keys), another endpoint/timeout/concurrency, and its
tool schemas in another order keys the same; a change the model would read keys differently.
"""

from __future__ import annotations

import hashlib
import random
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaincassette import Cassette, CassetteMiss, key_of, normalize
from chaincassette.canonical import canonical_json
from chaincassette.diff import diff_requests
from chaincassette.keyrules import explain, is_client_setting, key_view, tools_order_only

token = st.text(alphabet=string.ascii_letters + string.digits, min_size=6, max_size=40)


def tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {}}},
    }


def rich_turn(t: list[str], *, tools_reversed: bool = False) -> dict[str, Any]:
    """One request carrying every kind of provider token, all taken from ``t``."""
    tools = [tool("get_time"), tool("get_weather"), tool("lookup")]
    if tools_reversed:
        tools.reverse()
    first, second = "toolu_" + t[0], "call_" + t[1]
    return {
        "kind": "chat",
        "model": "m",
        "stream": False,
        "params": {
            "temperature": 0.0,
            "endpoint": f"http://127.0.0.1:{len(t[2]) + 1000}",
            "base_url": f"http://proxy-{t[3]}.local/v1",
            "max_concurrent_requests": len(t[4]),
            "timeout": len(t[5]),
            "max_retries": len(t[2]) % 5,
            "default_headers": {"x-trace": t[3]},
            "organization": "org-" + t[4],
            "model_kwargs": {"extra_headers": {"x": t[5]}, "seed": 7},
        },
        "tools": tools,
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture?", "id": "lc_" + t[0]},
                    {"type": "image", "base64": "aGVsbG8=", "mime_type": "image/png"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Need both tools.", "signature": t[2] * 3},
                    {"type": "redacted_thinking", "data": t[3]},
                    {
                        "type": "reasoning",
                        "id": "rs_" + t[4],
                        "summary": [{"type": "summary_text", "text": "plan"}],
                        "encrypted_content": t[5] * 2,
                    },
                    {"type": "text", "text": "Checking.", "id": "msg_" + t[5], "annotations": []},
                    {"type": "tool_use", "id": first, "name": "get_time", "input": {"tz": "CET"}},
                    {"type": "future_block", "text": "kept", "opaque_id": t[2]},
                ],
                "tool_calls": [
                    {"id": first, "name": "get_time", "args": {"tz": "CET"}},
                    {"id": second, "name": "get_weather", "args": {"city": "Paris"}},
                ],
                "additional_kwargs": {
                    "__gemini_function_call_thought_signatures__": {first: t[0] * 2},
                    "reasoning_content": "Need both tools.",
                    "item_id": "fc_" + t[1],
                },
            },
            {"role": "tool", "content": "12:00", "tool_call_id": first},
            {"role": "tool", "content": "Sunny", "tool_call_id": second},
        ],
    }


@settings(max_examples=150, deadline=None)
@given(a=st.lists(token, min_size=6, max_size=6), b=st.lists(token, min_size=6, max_size=6))
def test_fresh_provider_tokens_and_transport_never_change_the_key(
    a: list[str], b: list[str]
) -> None:
    if a[0] == a[1] or b[0] == b[1]:
        return
    one = normalize(rich_turn(a))
    other = normalize(rich_turn(b, tools_reversed=True))
    assert key_of(one) == key_of(other)


meaning_changes = st.sampled_from(
    [
        ("thinking text", lambda r: r["messages"][2]["content"][0].update(thinking="Other.")),
        (
            "reasoning summary",
            lambda r: r["messages"][2]["content"][2]["summary"][0].update(text="x"),
        ),
        ("assistant text", lambda r: r["messages"][2]["content"][3].update(text="Hm.")),
        ("image bytes", lambda r: r["messages"][1]["content"][1].update(base64="d29ybGQ=")),
        ("image type", lambda r: r["messages"][1]["content"][1].update(mime_type="image/jpeg")),
        ("unknown block text", lambda r: r["messages"][2]["content"][5].update(text="other")),
        (
            "reasoning text extra",
            lambda r: r["messages"][2]["additional_kwargs"].update(reasoning_content="?"),
        ),
        ("tool_use input", lambda r: r["messages"][2]["content"][4]["input"].update(tz="UTC")),
        ("tool args", lambda r: r["messages"][2]["tool_calls"][1]["args"].update(city="Rome")),
        ("tool result", lambda r: r["messages"][4].update(content="Rain")),
        ("tool schema", lambda r: r["tools"][1]["function"].update(description="new")),
        ("one tool fewer", lambda r: r["tools"].pop()),
        ("temperature", lambda r: r["params"].update(temperature=0.5)),
        ("nested seed", lambda r: r["params"]["model_kwargs"].update(seed=8)),
        ("system prompt", lambda r: r["messages"][0]["content"][0].update(text="Be long.")),
        ("role", lambda r: r["messages"][0].update(role="user")),
    ]
)


@settings(max_examples=150, deadline=None)
@given(change=meaning_changes, a=st.lists(token, min_size=6, max_size=6))
def test_a_change_the_model_reads_changes_the_key(change: Any, a: list[str]) -> None:
    if a[0] == a[1]:
        return
    base = rich_turn(a)
    changed = rich_turn(a)
    change[1](changed)
    assert key_of(normalize(base)) != key_of(normalize(changed)), change[0]


def test_ids_used_as_dict_keys_are_aliased_like_ids_used_as_values() -> None:
    request = normalize(rich_turn(["a1b2c3", "d4e5f6", "x" * 6, "y" * 6, "z" * 6, "w" * 6]))
    extra = request["messages"][2]["additional_kwargs"]
    assert list(extra["__gemini_function_call_thought_signatures__"]) == ["call_1"]
    assert request["messages"][3]["tool_call_id"] == "call_1"


def test_explain_lists_what_is_left_out_and_the_unknown_blocks() -> None:
    view = explain(normalize(rich_turn(["a1b2c3", "d4e5f6", "x" * 6, "y" * 6, "z" * 6, "w" * 6])))
    left = dict(view.left_out)
    assert left["params.endpoint"].startswith("client/transport")
    assert left["params.max_concurrent_requests"].startswith("client/transport")
    assert left["params.model_kwargs.extra_headers"].startswith("client/transport")
    assert left["messages[2].content[0].signature"] == "opaque provider token"
    assert left["messages[2].content[2].encrypted_content"] == "opaque provider token"
    assert left["messages[2].content[2].id"] == "provider item/message id"
    assert left["messages[2].content[3].id"] == "provider item/message id"
    assert "messages[2].additional_kwargs.__gemini_function_call_thought_signatures__" in left
    assert "messages[2].content[5].opaque_id" in left
    assert view.unknown == ["messages[2].content[5]"]
    assert view.kept["messages"][2]["content"][5] == {
        "type": "future_block",
        "text": "kept",
    }
    assert view.kept["messages"][1]["content"][1]["content_hash"].startswith("sha256:")
    assert key_view(view.kept) == view.kept  # the view is a fixed point


def test_tool_or_recorded_function_requests_keep_every_argument() -> None:
    request = {"kind": "tool", "tool": "fetch", "args": {"url": "http://x", "timeout": 3}}
    assert key_view(request) == request
    call = {"kind": "call", "function": "f", "args": {"endpoint": "e", "signature": "s"}}
    assert key_view(call) == call


def test_client_settings_are_recognised_by_name() -> None:
    for name in (
        "endpoint",
        "endpoint_url",
        "azure_endpoint",
        "base_url",
        "max_concurrent_requests",
        "request_timeout",
        "max_retries",
        "default_headers",
        "organization",
        "project",
        "region_name",
        "api_version",
        "keep_alive",
        "client_options",
        "transport",
    ):
        assert is_client_setting(name), name
    for name in ("temperature", "max_tokens", "top_p", "seed", "num_ctx", "thinking", "stop"):
        assert not is_client_setting(name), name


def test_tool_order_is_named_when_it_is_the_only_difference() -> None:
    a, b = [tool("a"), tool("b")], [tool("b"), tool("a")]
    assert tools_order_only(a, b)
    assert not tools_order_only(a, a)
    assert not tools_order_only(a, [tool("a"), tool("c")])
    lines = diff_requests({"tools": a}, {"tools": b})
    assert lines == ["tools: same names in another order ['a', 'b'] → ['b', 'a']"]


def test_gemini_declarations_inside_one_tool_are_a_set_too() -> None:
    def gemini(names: list[str]) -> dict[str, Any]:
        decls = [{"name": n, "parameters": {}} for n in names]
        return {"kind": "chat", "tools": [{"function_declarations": decls}], "messages": []}

    assert key_of(gemini(["a", "b", "c"])) == key_of(gemini(["c", "a", "b"]))
    assert key_of(gemini(["a", "b"])) != key_of(gemini(["a", "c"]))


def test_shuffled_dicts_key_the_same() -> None:
    rng = random.Random(5)
    request = normalize(rich_turn(["a1b2c3", "d4e5f6", "x" * 6, "y" * 6, "z" * 6, "w" * 6]))

    def shuffled(value: Any) -> Any:
        if isinstance(value, dict):
            items = list(value.items())
            rng.shuffle(items)
            return {k: shuffled(v) for k, v in items}
        if isinstance(value, list):
            return [shuffled(v) for v in value]
        return value

    assert key_of(request) == key_of(shuffled(request))


def test_bind_tools_in_another_order_hits_and_an_old_order_keyed_miss_says_so(
    tmp_path: Path,
) -> None:
    def request(names: list[str]) -> dict[str, Any]:
        return {
            "kind": "chat",
            "model": "m",
            "tools": [tool(n) for n in names],
            "messages": [{"role": "user", "content": "hi"}],
        }

    path = tmp_path / "tools.yaml"
    recording = Cassette(path, mode="record")
    recording.begin(request(["b", "a"])).record({"text": "hello"})
    recording.save()
    assert Cassette(path, mode="replay").begin(request(["a", "b"])).response == {"text": "hello"}

    # a cassette whose key an older chaincassette made from the tool order: the miss names it
    old_key = hashlib.sha256(canonical_json(normalize(request(["b", "a"]))).encode()).hexdigest()
    text = path.read_text()
    path.write_text(text.replace(recording.interactions[0].key, old_key))
    with pytest.raises(CassetteMiss) as miss:
        Cassette(path, mode="replay").begin(request(["a", "b"]))
    message = str(miss.value)
    assert "the only difference is the order of the tool schemas ([b, a] → [a, b])" in message
    assert "edited by hand" not in message


def test_show_key_prints_the_key_view_what_is_left_out_and_unknown_blocks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chaincassette.cli import main

    path = tmp_path / "rich.yaml"
    recording = Cassette(path, mode="record")
    request = rich_turn(["a1b2c3", "d4e5f6", "x" * 6, "y" * 6, "z" * 6, "w" * 6])
    recording.begin(request).record({"text": "ok"})
    recording.save()
    assert main(["show", str(path), "--key", "0"]) == 0
    out = capsys.readouterr().out
    assert "in the key (what the model reads):" in out
    assert "- messages[2].content[0].signature: opaque provider token" in out
    assert "- params.endpoint: client/transport setting" in out
    assert "- tools order: tool schemas are a set: keyed sorted by name" not in out  # sorted
    assert "content blocks of unknown type (keyed by their text-like fields only):" in out
    assert "  - messages[2].content[5]" in out
    assert "key check: the stored key is this view's hash" in out

    path.write_text(path.read_text().replace(recording.interactions[0].key, "ab" * 32))
    assert main(["show", str(path), "--key"]) == 0
    assert "key check: the stored key is NOT this view's hash" in capsys.readouterr().out
    assert main(["show", str(path), "--key", "3"]) == 2
    assert "has 1 interaction; --key takes 0…0" in capsys.readouterr().err
