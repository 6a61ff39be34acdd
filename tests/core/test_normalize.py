"""Each normalizer alone, then the key's invariants (property-based)."""

from __future__ import annotations

import random
import string
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from chaincassette import key_of, normalize
from chaincassette.normalize import (
    alias_tool_call_ids,
    drop_secrets,
    drop_volatile_fields,
    ignore_paths,
    order_tool_results,
    strip_memory_addresses,
)


def agent_turn(
    call_ids: list[str], *, temperature: float = 0.0, city: str = "Paris"
) -> dict[str, Any]:
    """A two-tool agent turn as an integration would build it, with the given provider IDs."""
    first, second = call_ids
    return {
        "kind": "chat",
        "model": "gpt-4o-mini",
        "params": {"temperature": temperature, "api_key": "sk-" + "a" * 40},
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
        "messages": [
            {"role": "user", "content": f"Weather and time in {city}?"},
            {
                "role": "assistant",
                "content": "",
                "id": "chatcmpl-" + first[-6:],
                "response_metadata": {"created": 1700000000.5},
                "usage_metadata": {"total_tokens": 12, "total_cost": 0},
                "tool_calls": [
                    {"id": first, "name": "get_weather", "args": {"city": city}},
                    {"id": second, "name": "get_time", "args": {"tz": "CET"}},
                ],
            },
            {"role": "tool", "content": "12:00", "tool_call_id": second},
            {"role": "tool", "content": "Sunny", "tool_call_id": first},
        ],
    }


def test_drop_secrets_removes_secret_fields_and_masks_key_shaped_strings() -> None:
    request = {
        "params": {"api_key": "x", "openai_api_key": "y", "max_tokens": 5, "Authorization": "z"},
        "headers": {"x-api-key": "k", "token": "t"},
        "prompt": "my key is sk-" + "b1" * 15,
    }
    out = drop_secrets(request)
    assert out["params"] == {"max_tokens": 5}
    assert out["headers"] == {}
    assert out["prompt"] == "my key is <secret>"


def test_drop_volatile_fields_only_touches_messages_and_run_ids() -> None:
    request = {
        "run_id": "r",
        "params": {"created": 1},
        "messages": [
            {"role": "assistant", "content": "x", "id": "m1", "usage_metadata": {}, "usage": 1}
        ],
    }
    out = drop_volatile_fields(request)
    assert out == {"params": {"created": 1}, "messages": [{"role": "assistant", "content": "x"}]}


def test_strip_memory_addresses() -> None:
    out = strip_memory_addresses({"params": {"fn": "<function f at 0x7f4fdc7b7a60>"}})
    assert out == {"params": {"fn": "<function f>"}}
    prompt = {"prompt": "What is stored at 0x10?"}  # prose, not an object repr
    assert strip_memory_addresses(prompt) == prompt


def test_alias_tool_call_ids_in_order_of_first_appearance_everywhere() -> None:
    request = {
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [{"id": "call_zz", "name": "a"}, {"id": "call_aa", "name": "b"}],
            },
            {"role": "tool", "tool_call_id": "call_aa"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1"}]},
            {"role": "tool", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
            {"role": "assistant", "content": [{"type": "text", "id": "not-a-call"}]},
        ]
    }
    out = alias_tool_call_ids(request)
    assert [c["id"] for c in out["messages"][0]["tool_calls"]] == ["call_1", "call_2"]
    assert out["messages"][1]["tool_call_id"] == "call_2"
    assert out["messages"][2]["content"][0]["id"] == "call_3"
    assert out["messages"][3]["content"][0]["tool_use_id"] == "call_3"
    assert out["messages"][4]["content"][0]["id"] == "not-a-call"


def test_order_tool_results_sorts_each_run_by_call() -> None:
    request = {
        "messages": [
            {"role": "tool", "tool_call_id": "call_2", "content": "b"},
            {"role": "tool", "tool_call_id": "call_1", "content": "a"},
            {"role": "assistant", "content": "x"},
            {"role": "tool", "tool_call_id": "call_11", "content": "d"},
            {"role": "tool", "tool_call_id": "call_3", "content": "c"},
        ]
    }
    out = order_tool_results(request)
    assert [m["content"] for m in out["messages"]] == ["a", "b", "x", "c", "d"]


def test_ignore_paths_with_wildcards() -> None:
    drop = ignore_paths(["params.seed", "messages.*.name"])
    out = drop({"params": {"seed": 1, "t": 2}, "messages": [{"name": "n", "content": "c"}]})
    assert out == {"params": {"t": 2}, "messages": [{"content": "c"}]}


def test_two_live_runs_with_random_ids_share_a_key() -> None:
    first = key_of(normalize(agent_turn(["call_abc123", "call_def456"])))
    second = key_of(normalize(agent_turn(["call_XYZ", "toolu_987"])))
    assert first == second


def test_tool_result_still_points_at_its_call_after_aliasing() -> None:
    out = normalize(agent_turn(["call_q", "call_r"]))
    calls = {c["id"]: c["name"] for c in out["messages"][1]["tool_calls"]}
    results = {m["tool_call_id"]: m["content"] for m in out["messages"][2:]}
    assert calls == {"call_1": "get_weather", "call_2": "get_time"}
    assert results == {"call_1": "Sunny", "call_2": "12:00"}


# -- property-based ---------------------------------------------------------------------

ids = st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=1, max_size=24)


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


@settings(max_examples=200, deadline=None)
@given(a=ids, b=ids, c=ids, d=ids, seed=st.integers())
def test_key_invariant_under_id_renaming_and_dict_order(
    a: str, b: str, c: str, d: str, seed: int
) -> None:
    if a == b or c == d:
        return
    original = agent_turn(["call_" + a, "call_" + b])
    renamed = _shuffled(agent_turn(["id-" + c, "id-" + d]), random.Random(seed))
    assert key_of(normalize(original)) == key_of(normalize(renamed))


semantic_changes = st.sampled_from(
    [
        ("model", lambda r: r.update(model="gpt-4o")),
        ("temperature", lambda r: r["params"].update(temperature=0.7)),
        ("top_p", lambda r: r["params"].update(top_p=0.5)),
        ("tool schema", lambda r: r["tools"][0]["function"].update(parameters={"type": "object"})),
        ("tool_choice", lambda r: r.update(tool_choice="required")),
        ("response_format", lambda r: r.update(response_format={"type": "json_object"})),
        ("stream", lambda r: r.update(stream=True)),
        ("user text", lambda r: r["messages"][0].update(content="Weather in Lyon?")),
        ("tool args", lambda r: r["messages"][1]["tool_calls"][0]["args"].update(city="Rome")),
        ("tool result", lambda r: r["messages"][3].update(content="Rain")),
        ("tool call target", lambda r: r["messages"][2].update(tool_call_id="call_a")),
        ("extra message", lambda r: r["messages"].append({"role": "user", "content": "and?"})),
    ]
)


@settings(max_examples=100, deadline=None)
@given(change=semantic_changes, a=ids, b=ids)
def test_key_changes_when_any_semantic_field_changes(change: Any, a: str, b: str) -> None:
    if a == b:
        return
    _, mutate = change
    base = agent_turn(["call_a", "call_b"])
    changed = agent_turn(["call_" + a, "call_" + b])
    if change[0] == "tool call target":  # point the first result at the other call
        changed["messages"][2]["tool_call_id"] = "call_" + a
    else:
        mutate(changed)
    assert key_of(normalize(base)) != key_of(normalize(changed))


@settings(max_examples=50, deadline=None)
@given(key=st.text(min_size=20, max_size=40, alphabet=string.ascii_letters + string.digits))
def test_a_different_api_key_never_changes_the_key(key: str) -> None:
    one = agent_turn(["call_a", "call_b"])
    other = agent_turn(["call_a", "call_b"])
    other["params"]["api_key"] = "sk-" + key
    other["headers"] = {"Authorization": "Bearer " + key}
    one["headers"] = {"Authorization": "Bearer something-else-entirely"}
    assert key_of(normalize(one)) == key_of(normalize(other))


def test_ignore_paths_by_index_whole_items_and_paths_that_match_nothing() -> None:
    request = {
        "messages": [{"name": "a", "content": "x"}, {"name": "b", "content": "y"}],
        "params": {"seed": 1},
        "tags": ["t1", "t2"],
    }
    before = repr(request)
    assert ignore_paths(["messages.1.name"])(request)["messages"] == [
        {"name": "a", "content": "x"},
        {"content": "y"},
    ]
    assert ignore_paths(["tags.0"])(request)["tags"] == ["t2"]
    assert ignore_paths(["tags.*"])(request)["tags"] == []
    assert ignore_paths(["params"])(request) == {
        "messages": request["messages"],
        "tags": ["t1", "t2"],
    }
    for nothing in ([""], ["params.seed.deeper"], ["missing.x"], ["tags.5"]):
        assert ignore_paths(nothing)(request) == request, nothing
    assert repr(request) == before  # the caller's request is never changed
