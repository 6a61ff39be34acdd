"""``ChatKeys`` against the whole-request path it shortcuts (property-based).

``chat_keys.ChatKeys.keyed`` resumes the default pipeline and the key's sha256 from the
longest prefix of message *objects* it has seen. Its claim: for any sequence of requests
fed to one instance, sharing message dicts (prefixes, branches, repeats, the same prefix
under another ``kind`` or tail), it returns either ``None`` or exactly what
``normalize(request, DEFAULT_PIPELINE)`` and ``key_of`` give: equal dicts of equal types
(``1``, ``1.0`` and ``True`` differ) and the same key. These tests generate conversations
full of what the pipeline rewrites (tool-call IDs in every place it looks for them, secrets,
memory addresses, volatile fields, runs of tool results in any order, non-dict messages)
and check every answer, plus when it may fall back: only for a layout it does not cover or
an ID also used as a mapping key.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaincassette import Cassette, key_of, normalize
from chaincassette import chat_keys as chat_keys_module
from chaincassette.chat_keys import ChatKeys
from chaincassette.keyrules import MODEL_KINDS
from chaincassette.normalize import (
    DEFAULT_PIPELINE,
    TOOL_CALL_BLOCK_TYPES,
    ToolCallAliaser,
    drop_secrets,
    drop_volatile_fields,
    strip_memory_addresses,
)

Request = dict[str, Any]

# -- what the slow path gives, compared exactly ------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (``==`` says ``1 == 1.0 == True``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a.hex() == b.hex()
    return bool(a == b)


def reference(request: Request) -> tuple[Request, str]:
    normalized = normalize(request, DEFAULT_PIPELINE)
    return normalized, key_of(normalized)


def must_fall_back(request: Request) -> bool:
    """Whether the shortcut may not answer: a layout it does not cover (a top-level name
    sorting before ``messages`` other than ``kind``, a top-level ``type``, no messages) or a
    tool-call ID also used as a mapping key (the slow path renames keys then)."""
    messages, kind = request.get("messages"), request.get("kind")
    if not (isinstance(messages, list) and messages and kind in MODEL_KINDS):
        return True
    if "type" in request or any(k < "messages" and k != "kind" for k in request):
        return True
    aliaser = ToolCallAliaser()
    aliaser.walk(strip_memory_addresses(drop_volatile_fields(drop_secrets(request))))
    return aliaser.renames_keys()


def check(keys: ChatKeys, request: Request) -> None:
    """One call of the shortcut, against the slow path computed on a pristine copy."""
    pristine = copy.deepcopy(request)
    try:
        expected, expected_key = reference(pristine)
    except (TypeError, ValueError) as refused:  # NaN, an object JSON cannot hold
        try:  # the type may differ: the shortcut meets the values in another order, and
            got = keys.keyed(request)  # only learns at the end that it would fall back
        except (TypeError, ValueError):
            return
        assert got is None, f"answered what the slow path refuses ({refused}): {pristine!r}"
        return
    got = keys.keyed(request)
    assert request == pristine, "the shortcut changed the caller's request"
    if got is None:
        assert must_fall_back(pristine), f"fell back for a covered request: {pristine!r}"
        return
    assert not must_fall_back(pristine), f"answered a request it must leave: {pristine!r}"
    normalized, key = got
    assert key == expected_key, f"key differs for {pristine!r}"
    assert same(normalized, expected), f"normalized differs:\n{normalized!r}\n{expected!r}"
    # and as text (not sorted: a field the key leaves out may hold keys that do not sort)
    text = json.dumps(normalized, allow_nan=True, default=repr)
    assert text == json.dumps(expected, allow_nan=True, default=repr)


class Opaque:
    """A value no JSON holds (the key refuses it), equal to its kind, never copied."""

    def __eq__(self, other: object) -> bool:
        return type(other) is Opaque

    __hash__ = object.__hash__

    def __deepcopy__(self, memo: Any) -> Opaque:
        return self

    def __repr__(self) -> str:
        return "Opaque()"


# -- generated conversations ---------------------------------------------------------------------

SECRET = "sk-proj-abc123def456ghi789jkl012mno"
ADDRESS = "<Tool object at 0x7f3a2b1c4d50>"
#: Few IDs, so that calls, results and blocks share them; some look like aliases already
#: (``call_2``), some are names used as mapping keys elsewhere (which must fall back), one is
#: masked as a secret before it is aliased, one loses its address.
ID_POOL = ["call_Ab1", "toolu_X9", "call_2", "call_10", "fc_7", "x", "", "city", "role", "model"]
ID_POOL += [SECRET, ADDRESS]
TEXT_POOL = ["", "hi", "0x12", SECRET, f"key {SECRET} here", ADDRESS, "Bearer abcdefgh12345678"]

ids = st.sampled_from(ID_POOL)
ids_or_odd = st.one_of(ids, st.none(), st.integers(-1, 2), st.just(["call_Ab1"]))
texts = st.one_of(st.sampled_from(TEXT_POOL), st.text(max_size=6))
numbers = st.one_of(
    st.integers(-2, 2), st.sampled_from([0.0, -0.0, 1.0, 1.5]), st.booleans(), st.none()
)
names = st.sampled_from(
    ["city", "x", "token", "api_key", "id", "call_id", "tool_call_id", "type", "content"]
)


def scalars() -> st.SearchStrategy[Any]:
    return st.one_of(texts, numbers, ids)


#: Plain JSON-ish values with IDs where the aliaser looks: names of ID fields, ``type``s of
#: call blocks, call lists.
json_values = st.recursive(
    scalars(),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=2).map(tuple),  # JSON writes a list; no step looks inside
        st.dictionaries(names, inner, max_size=3),
        st.dictionaries(st.sampled_from([1, 2, "x"]), inner, max_size=2),  # may not sort
        st.fixed_dictionaries(
            {"type": st.sampled_from(sorted(TOOL_CALL_BLOCK_TYPES)), "id": ids_or_odd},
            optional={"name": texts, "args": inner, "input": inner, "call_id": ids},
        ),
    ),
    max_leaves=6,
)


def calls() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"id": ids_or_odd, "name": st.sampled_from(["get_weather", "get_time"])},
        optional={
            "args": st.dictionaries(names, json_values, max_size=2),
            "type": st.just("tool_call"),
            "function": st.fixed_dictionaries({"name": texts, "arguments": texts}),
        },
    )


blocks = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": texts}, optional={"id": ids}),
    st.fixed_dictionaries(
        {"type": st.sampled_from(sorted(TOOL_CALL_BLOCK_TYPES)), "id": ids_or_odd},
        optional={"name": texts, "input": json_values, "call_id": ids, "signature": texts},
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["tool_result", "function_call_output"])},
        optional={"tool_use_id": ids, "call_id": ids, "content": json_values},
    ),
    st.fixed_dictionaries({"type": st.sampled_from(["image", "thinking", "mystery"])}),
    texts,
    st.lists(texts, max_size=2),
)

volatile = st.fixed_dictionaries(
    {},
    optional={
        "id": ids,
        "response_metadata": st.dictionaries(names, json_values, max_size=2),
        "usage_metadata": st.just({"total_cost": 0}),
        "created": numbers,
    },
)


@st.composite
def messages(draw: st.DrawFn) -> Any:
    """One message: mostly chat dicts of every role, sometimes something else entirely."""
    shape = draw(st.sampled_from(["user", "assistant", "tool", "tool", "odd"]))
    if shape == "odd":
        return draw(st.one_of(texts, st.none(), st.lists(json_values, max_size=2), json_values))
    content = draw(st.one_of(texts, st.lists(blocks, max_size=3)))
    message: dict[str, Any] = {"role": shape, "content": content}
    if shape == "assistant":
        message["tool_calls"] = draw(st.lists(calls(), max_size=3))
        extra = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "tool_calls": st.lists(
                        st.fixed_dictionaries(
                            {"id": ids, "type": st.just("function")},
                            optional={"function": st.just({"name": "f", "arguments": "{}"})},
                        ),
                        max_size=2,
                    ),
                    "reasoning_content": texts,
                    "api_key": texts,
                    "__gemini_function_call_thought_signatures__": st.dictionaries(
                        ids, texts, max_size=1
                    ),
                },
            )
        )
        if extra:
            message["additional_kwargs"] = extra
    if shape == "tool":
        message["tool_call_id"] = draw(ids_or_odd)
        if draw(st.booleans()):
            message["status"] = draw(st.sampled_from(["success", "error"]))
    message.update(draw(volatile))
    if draw(st.integers(0, 9)) == 0:
        message[draw(names)] = draw(json_values)
    return message


#: Fields after ``messages``: model configuration, tools, and some that carry IDs or secrets.
tail_fields = st.fixed_dictionaries(
    {},
    optional={
        "model": st.sampled_from(["gpt-4o", "claude", ADDRESS]),
        "params": st.dictionaries(
            st.sampled_from(["temperature", "api_key", "base_url", "seed", "tool_choice"]),
            json_values,
            max_size=3,
        ),
        "tools": st.lists(
            st.fixed_dictionaries({"name": st.sampled_from(["b", "a"]), "parameters": json_values}),
            max_size=2,
        ),
        "tool_choice": json_values,
        "stream": st.booleans(),
        "stop": st.one_of(st.none(), st.lists(texts, max_size=2)),
        "run_id": texts,
        "openai_api_key": st.just(SECRET),
        "tool_call_id": ids,
        "tool_calls": st.lists(calls(), max_size=1),
        "response_format": json_values,
    },
)
#: Top-level names the shortcut must leave to the slow path (they sort before ``messages``).
uncovered_fields = st.dictionaries(
    st.sampled_from(["api_key", "call_id", "id", "Model", "format", "type"]), texts, max_size=1
)


@contextmanager
def limits(**small: int) -> Iterator[None]:
    """``chat_keys``' limits set small for the block (``MAX_NODES=…``, ``MAX_HELD=…``,
    ``MAX_TAILS=…``), so that regrowth happens within one example."""
    saved = {name: getattr(chat_keys_module, name) for name in small}
    for name, value in small.items():
        setattr(chat_keys_module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(chat_keys_module, name, value)


poisons = st.sampled_from([float("nan"), float("inf"), Opaque(), [1, Opaque()]])


@st.composite
def sessions(draw: st.DrawFn, poison: bool = False) -> tuple[list[Request], int, int]:
    """Requests as an agent run (or several interleaved) would send them: each extends,
    truncates or branches an earlier conversation with new or already-sent message dicts
    (the very objects), under a kind and a tail drawn from a few shared field objects.
    ``poison``: some messages hold what the key refuses (NaN, an object JSON cannot hold)."""
    pool: list[Any] = []
    conversations: list[list[Any]] = [[]]
    tails = draw(st.lists(tail_fields, min_size=1, max_size=3))
    requests: list[Request] = []
    for _ in range(draw(st.integers(1, 8))):
        base = draw(st.sampled_from(conversations))
        cut = draw(st.integers(0, len(base)))
        conversation = base[:cut] if draw(st.booleans()) else list(base)
        for _ in range(draw(st.integers(0 if conversation else 1, 4))):
            if pool and draw(st.integers(0, 3)) == 0:
                conversation.append(draw(st.sampled_from(pool)))  # a message sent elsewhere
            else:
                message = draw(messages())
                if poison and isinstance(message, dict) and draw(st.integers(0, 4)) == 0:
                    message[draw(st.sampled_from(["content", "name", "extra"]))] = draw(poisons)
                pool.append(message)
                conversation.append(message)
        conversations.append(conversation)
        tail = draw(st.sampled_from(tails))
        # the tail's value objects are shared between requests (as LangChain's cached fields
        # are); a new dict around them, with fields in any order
        fields = list(tail.items())
        request: Request = {}
        head = [
            (
                "kind",
                draw(
                    st.sampled_from(["chat", "chat", "completion", "embeddings", "tool", "Chat", 1])
                ),
            )
        ]
        head.append(("messages", conversation))
        if draw(st.integers(0, 9)) == 0:
            head.extend(draw(uncovered_fields).items())
        for name, value in draw(st.permutations(head + fields)):
            request[name] = value
        requests.append(request)
    max_nodes = draw(st.sampled_from([1, 2, 5, 20_000]))
    max_tails = draw(st.sampled_from([1, 256]))
    return requests, max_nodes, max_tails


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=sessions())
def test_every_answer_is_the_whole_request_path(session: tuple[list[Request], int, int]) -> None:
    requests, max_nodes, max_tails = session
    keys = ChatKeys()
    with limits(MAX_NODES=max_nodes, MAX_TAILS=max_tails):
        for request in requests:
            check(keys, request)
        for request in reversed(requests):  # again, now with every prefix known
            check(keys, request)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=sessions(poison=True))
def test_what_the_slow_path_refuses_is_refused_and_leaves_nothing_behind(
    session: tuple[list[Request], int, int],
) -> None:
    """A request the key cannot hold raises as the whole-request path does (or falls
    back to it); the prefixes it grew before failing serve later requests exactly."""
    requests, max_nodes, max_tails = session
    keys = ChatKeys()
    with limits(MAX_NODES=max_nodes, MAX_TAILS=max_tails):
        for request in [*requests, *reversed(requests)]:
            check(keys, request)


# -- plain regressions ----------------------------------------------------------------------------


def test_a_none_message_is_dropped_as_the_whole_request_path_drops_it() -> None:
    """``order_tool_results`` ends its list with ``None`` and so drops a ``None`` message;
    the shortcut used to keep it (``"messages":[{…},null]``, another key)."""
    keys = ChatKeys()
    user = {"role": "user", "content": "hi"}
    for request in (
        {"kind": "chat", "messages": [user, None]},
        {"kind": "chat", "messages": [user, None, {"role": "assistant", "content": "yo"}]},
        {"kind": "chat", "messages": [None]},
        {"kind": "chat", "messages": [user, {"role": "tool", "tool_call_id": "b"}, None]},
    ):
        check(keys, request)
        assert keys.keyed(request) is not None


def test_tool_results_spanning_the_resume_point_are_ordered_as_one_run() -> None:
    keys = ChatKeys()
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "b", "name": "f"}, {"id": "a", "name": "g"}, {"id": "c"}],
    }
    first = {"role": "tool", "content": "3", "tool_call_id": "c"}
    second = {"role": "tool", "content": "1", "tool_call_id": "b"}
    third = {"role": "tool", "content": "2", "tool_call_id": "a"}
    base: list[Any] = [{"role": "user", "content": "q"}, call]
    for messages_ in ([*base, first], [*base, first, second], [*base, first, second, third]):
        check(keys, {"kind": "chat", "messages": messages_, "model": "m"})
    after = [*base, first, second, third, {"role": "user", "content": "next"}]
    check(keys, {"kind": "chat", "messages": after, "model": "m"})
    normalized, _ = keys.keyed({"kind": "chat", "messages": after, "model": "m"}) or ({}, "")
    assert [m.get("tool_call_id") for m in normalized["messages"][2:5]] == [
        "call_1",
        "call_2",
        "call_3",
    ]


def test_an_id_used_as_a_mapping_key_falls_back() -> None:
    keys = ChatKeys()
    call = {
        "role": "assistant",
        "tool_calls": [{"id": "call_Q", "name": "f"}],
        "additional_kwargs": {"__gemini_function_call_thought_signatures__": {"call_Q": "sig"}},
    }
    assert keys.keyed({"kind": "chat", "messages": [call]}) is None
    later = {"role": "tool", "tool_call_id": "x", "content": "r"}  # an ID named in the tail
    assert keys.keyed({"kind": "chat", "messages": [later], "params": {"x": 1}}) is None
    check(keys, {"kind": "chat", "messages": [later], "params": {"y": 1}})


# -- end to end: a cassette's lookup against its key_for ---------------------------------------


def in_place(request: Request) -> Request:
    """A user's normalizer that changes what it is given (it should not; the caller's
    request must come through unchanged anyway)."""
    for message in request.get("messages") or []:
        if isinstance(message, dict):
            message["content"] = "seen"
            message.pop("tool_call_id", None)
    request["seen"] = True
    return request


CASSETTE_OPTIONS: list[dict[str, Any]] = [
    {},
    {"ignore": ["messages.*.name", "params.seed"]},
    {"normalizers": [in_place]},
    {"redact_patterns": [r"hi+"]},
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=sessions(), options=st.sampled_from(CASSETTE_OPTIONS))
def test_a_cassette_lookup_with_stable_messages_keys_as_key_for(
    tmp_path_factory: pytest.TempPathFactory,
    session: tuple[list[Request], int, int],
    options: dict[str, Any],
) -> None:
    requests, _, _ = session
    folder = tmp_path_factory.mktemp("chat_keys")
    cassette = Cassette(folder / "c.yaml", mode="record", **options)
    plain = Cassette(folder / "plain.yaml", mode="record", **options)
    for request in [*requests, *reversed(requests)]:
        pristine = copy.deepcopy(request)
        try:
            expected = plain.normalize(copy.deepcopy(request))
            expected_key = key_of(expected)
        except (TypeError, ValueError):
            continue
        found = cassette.lookup(request, stable_messages=True)
        assert request == pristine, "the lookup changed the caller's request"
        assert found.key == expected_key == plain.key_for(copy.deepcopy(request))
        assert same(found.request, expected)
