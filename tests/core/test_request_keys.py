"""A cassette's keys are the whole-request pipeline's, whatever path computed them.

``RequestKeys`` resumes the default pipeline from the longest prefix of a conversation it has
keyed (named by content). Its claim: for any sequence of requests (prefixes, branches,
repeats, the same prefix under another ``kind`` or tail, messages edited in place between
calls), every answer is exactly what ``normalize(request, DEFAULT_PIPELINE)`` and
``key_of`` give: equal dicts of equal types (``1``, ``1.0`` and ``True`` differ) and the same
key; a request the key cannot hold raises as the whole-request path does. The generated
conversations are full of what the pipeline rewrites (tool-call IDs in every place it looks
for them, secrets, memory addresses, volatile fields, runs of tool results in any order,
some naming no call, some of a provider that matches them by position, media in several
spellings, non-dict messages); the examples below pin the cases that once broke.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaincassette import Cassette, canonical_json, key_of, normalize
from chaincassette import request_keys as request_keys_module
from chaincassette.keyrules import MODEL_KINDS
from chaincassette.normalize import (
    DEFAULT_PIPELINE,
    TOOL_CALL_BLOCK_TYPES,
    ToolCallAliaser,
    default_message_steps,
    drop_secrets,
    drop_volatile_fields,
    strip_memory_addresses,
)
from chaincassette.request_keys import RequestKeys

Request = dict[str, Any]

# -- what the whole-request path gives, compared exactly -------------------------------------


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


def must_take_the_whole_path(request: Request) -> bool:
    """Whether the conversation path may not answer: a layout it does not cover (a top-level
    name sorting before ``messages`` other than ``kind``, a top-level ``type``, no messages)
    or a tool-call ID also used as a mapping key (the whole path renames keys then)."""
    messages, kind = request.get("messages"), request.get("kind")
    if not (isinstance(messages, list) and messages and kind in MODEL_KINDS):
        return True
    if "type" in request or any(k < "messages" and k != "kind" for k in request):
        return True
    aliaser = ToolCallAliaser()
    aliaser.walk(strip_memory_addresses(drop_volatile_fields(drop_secrets(request))))
    return aliaser.renames_keys()


def check(keys: RequestKeys, request: Request) -> None:
    """One call, against the whole-request path computed on a pristine copy."""
    pristine = copy.deepcopy(request)
    try:
        expected, expected_key = reference(pristine)
    except (TypeError, ValueError):  # NaN, an object JSON cannot hold: refused alike
        with pytest.raises((TypeError, ValueError)):
            keys.keyed(request)
        return
    resumed = keys._conversation(copy.deepcopy(request))
    assert (resumed is None) == must_take_the_whole_path(pristine), pristine
    normalized, key = keys.keyed(request)
    assert request == pristine, "keying changed the caller's request"
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


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
#: The same image in four spellings, and another, for the media rules (key rules 2).
MEDIA_BLOCKS = [
    {"type": "image", "base64": PNG, "mime_type": "image/png"},
    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
    {"block_type": "image", "image": PNG, "image_mimetype": "image/png", "url": None},
    {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}},
]
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
    st.sampled_from(MEDIA_BLOCKS),
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
    if shape == "tool" and draw(st.integers(0, 4)):  # or a result naming no call
        message["tool_call_id"] = draw(ids_or_odd)
    if shape == "tool" and draw(st.booleans()):
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
        # False: results matched by position keep their order (key rules 2); odd values too
        "tool_result_ids": st.sampled_from([False, False, True, None, 0]),
    },
)
#: Top-level names the shortcut must leave to the slow path (they sort before ``messages``).
uncovered_fields = st.dictionaries(
    st.sampled_from(["api_key", "call_id", "id", "Model", "format", "type"]), texts, max_size=1
)


@contextmanager
def limits(**small: int) -> Iterator[None]:
    """``request_keys``' limits set small for the block (``MAX_PREFIXES=…``,
    ``MAX_HELD_MESSAGES=…``, ``MAX_TAILS=…``), so that its memos are emptied within one example."""
    saved = {name: getattr(request_keys_module, name) for name in small}
    for name, value in small.items():
        setattr(request_keys_module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(request_keys_module, name, value)


poisons = st.sampled_from([float("nan"), float("inf"), Opaque(), [1, Opaque()]])


@st.composite
def sessions(draw: st.DrawFn, poison: bool = False) -> tuple[list[Request], int, int]:
    """Requests as an agent run (or several interleaved) would send them: each extends,
    truncates or branches an earlier conversation with new or already-sent message dicts,
    under a kind and a tail drawn from a few shared field objects.
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
    max_prefixes = draw(st.sampled_from([1, 2, 5, 4096]))
    max_tails = draw(st.sampled_from([1, 256]))
    return requests, max_prefixes, max_tails


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=sessions())
def test_every_answer_is_the_whole_request_path(session: tuple[list[Request], int, int]) -> None:
    requests, max_prefixes, max_tails = session
    with limits(MAX_PREFIXES=max_prefixes, MAX_TAILS=max_tails):
        keys = RequestKeys(DEFAULT_PIPELINE)
        for request in requests:
            check(keys, request)
        for request in reversed(requests):  # again, now with every prefix known
            check(keys, request)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=sessions(poison=True))
def test_what_the_whole_path_refuses_is_refused_and_leaves_nothing_behind(
    session: tuple[list[Request], int, int],
) -> None:
    """A request the key cannot hold raises as the whole-request path does; the prefixes
    keyed before it failed serve later requests exactly."""
    requests, max_prefixes, max_tails = session
    with limits(MAX_PREFIXES=max_prefixes, MAX_TAILS=max_tails):
        keys = RequestKeys(DEFAULT_PIPELINE)
        for request in [*requests, *reversed(requests)]:
            check(keys, request)


# -- plain regressions ----------------------------------------------------------------------------


def test_a_none_message_is_dropped_as_the_whole_request_path_drops_it() -> None:
    """``order_tool_results`` ends its list with ``None`` and so drops a ``None`` message;
    the shortcut used to keep it (``"messages":[{…},null]``, another key)."""
    keys = RequestKeys(DEFAULT_PIPELINE)
    user = {"role": "user", "content": "hi"}
    for request in (
        {"kind": "chat", "messages": [user, None]},
        {"kind": "chat", "messages": [user, None, {"role": "assistant", "content": "yo"}]},
        {"kind": "chat", "messages": [None]},
        {"kind": "chat", "messages": [user, {"role": "tool", "tool_call_id": "b"}, None]},
    ):
        check(keys, request)
        assert keys._conversation(request) is not None


def test_tool_results_spanning_the_resume_point_are_ordered_as_one_run() -> None:
    keys = RequestKeys(DEFAULT_PIPELINE)
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
    normalized, _ = keys.keyed({"kind": "chat", "messages": after, "model": "m"})
    assert [m.get("tool_call_id") for m in normalized["messages"][2:5]] == [
        "call_1",
        "call_2",
        "call_3",
    ]


@pytest.mark.parametrize("how", ["by position", "a result names no call"])
def test_tool_results_that_keep_their_order_keep_it_across_the_resume_point(how: str) -> None:
    """A provider that matches tool results by position (``tool_result_ids: false``), or a
    run holding a result that names no call, keeps the run as sent (key rules 2), also
    when the run is keyed in parts; a prefix keyed one way never serves the other."""
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "b", "name": "f"}, {"id": "a", "name": "g"}],
    }
    late = {"role": "tool", "content": "2", "tool_call_id": "a"}
    early = (
        {"role": "tool", "content": "1"}
        if how != "by position"
        else {"role": "tool", "content": "1", "tool_call_id": "b"}
    )
    fields = {"model": "m", "tool_result_ids": False} if how == "by position" else {"model": "m"}
    base: list[Any] = [{"role": "user", "content": "q"}, call]
    keys = RequestKeys(DEFAULT_PIPELINE)
    sent = [*base, late, early, {"role": "user", "content": "next"}]
    for end in range(3, len(sent) + 1):
        check(keys, {"kind": "chat", "messages": sent[:end], **fields})
    normalized, key = keys.keyed({"kind": "chat", "messages": sent, **fields})
    assert [m["content"] for m in normalized["messages"][2:4]] == ["2", "1"]  # as sent
    swapped = [*base, early, late, sent[-1]]
    assert keys.keyed({"kind": "chat", "messages": swapped, **fields})[1] != key
    if how == "by position":  # the same prefix with ids matched by id: sorted, another key
        check(keys, {"kind": "chat", "messages": sent, "model": "m"})
        by_id = keys.keyed({"kind": "chat", "messages": sent, "model": "m"})
        assert by_id[1] == keys.keyed({"kind": "chat", "messages": swapped, "model": "m"})[1]
        assert by_id[1] != key


def test_an_id_used_as_a_mapping_key_falls_back() -> None:
    keys = RequestKeys(DEFAULT_PIPELINE)
    call = {
        "role": "assistant",
        "tool_calls": [{"id": "call_Q", "name": "f"}],
        "additional_kwargs": {"__gemini_function_call_thought_signatures__": {"call_Q": "sig"}},
    }
    check(keys, {"kind": "chat", "messages": [call]})
    assert keys._conversation({"kind": "chat", "messages": [call]}) is None
    later = {"role": "tool", "tool_call_id": "x", "content": "r"}  # an ID named in the tail
    check(keys, {"kind": "chat", "messages": [later], "params": {"x": 1}})
    check(keys, {"kind": "chat", "messages": [later], "params": {"y": 1}})


# -- end to end: a cassette's calls against its key_for ----------------------------------------


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
def test_a_cassette_keys_every_call_as_key_for(
    tmp_path_factory: pytest.TempPathFactory,
    session: tuple[list[Request], int, int],
    options: dict[str, Any],
) -> None:
    requests, _, _ = session
    folder = tmp_path_factory.mktemp("request_keys")
    cassette = Cassette(folder / "c.yaml", mode="record", **options)
    plain = Cassette(folder / "plain.yaml", mode="record", **options)
    for request in [*requests, *reversed(requests)]:
        pristine = copy.deepcopy(request)
        try:
            expected = plain.normalize(copy.deepcopy(request))
            expected_key = key_of(expected)
        except (TypeError, ValueError):
            continue
        found = cassette.begin(request)
        found.abandon()
        assert request == pristine, "keying changed the caller's request"
        assert found.key == expected_key == plain.key_for(copy.deepcopy(request))
        assert same(found.request, expected)


# -- agent conversations, by example ---------------------------------------------------------

KEY = "sk-proj-" + "A1b2" * 8  # shaped like an OpenAI key (the patterns want a digit)
TOOLS = [
    {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "convert", "parameters": {"type": "object"}}},
]


def whole(request: dict[str, Any]) -> tuple[str, str]:
    normalized = normalize(copy.deepcopy(request), DEFAULT_PIPELINE)
    return canonical_json(normalized), key_of(normalized)


def keyed(keys: RequestKeys, request: dict[str, Any]) -> tuple[str, str]:
    normalized, key = keys.keyed(request)
    return canonical_json(normalized), key


def request_of(messages: list[Any], **fields: Any) -> dict[str, Any]:
    head = {"kind": "chat", "model": "gpt-test", "params": {"temperature": 0}, "tools": TOOLS}
    return {**head, **fields, "messages": messages, "stream": False}


def ai_calls(*ids: str, text: str = "") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": text,
        "id": f"chatcmpl-{'-'.join(ids)}",
        "response_metadata": {"system_fingerprint": "fp_1", "created": 1733000000},
        "tool_calls": [{"id": i, "name": "lookup", "args": {"n": 1, "x": 1.0}} for i in ids],
    }


def tool_result(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "content": text, "tool_call_id": call_id}


def agent_turns(turns: int, parallel: int = 1) -> list[list[dict[str, Any]]]:
    """The message lists of an agent's successive calls (each extends the one before)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Track shipment 7, then convert 3 km."},
    ]
    lists = [list(messages)]
    for turn in range(turns):
        ids = [f"call_{turn}_{n}_Zx9" for n in range(parallel)]
        messages.append(ai_calls(*ids))
        for n, call_id in reversed(list(enumerate(ids))):  # results arrive out of order
            messages.append(tool_result(call_id, f"result {turn}.{n}"))
        lists.append(list(messages))
    return lists


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every message the conversation path normalizes."""
    seen: list[Any] = []

    def counted(message: Any, aliaser: Any) -> Any:
        seen.append(message)
        return default_message_steps(message, aliaser)

    monkeypatch.setattr(request_keys_module, "default_message_steps", counted)
    return seen


@pytest.mark.parametrize("parallel", [1, 3])
def test_an_agent_conversation_keys_like_the_whole_request_at_every_turn(parallel: int) -> None:
    keys = RequestKeys(DEFAULT_PIPELINE)
    for messages in agent_turns(8, parallel):
        request = request_of(messages)
        assert keyed(keys, request) == whole(request)


def test_each_turn_normalizes_only_its_new_messages(walked: list[Any]) -> None:
    keys = RequestKeys(DEFAULT_PIPELINE)
    lists = agent_turns(12)
    for messages in lists:
        keys.keyed(request_of(messages))
    assert len(walked) == len(lists[-1])  # each message once, whatever turn it came in
    walked.clear()
    keys.keyed(request_of(copy.deepcopy(lists[-1])))  # equal messages rebuilt: named alike
    assert walked == []


def test_a_message_edited_in_place_between_calls_is_keyed_by_what_it_holds_now(
    tmp_path: Any,
) -> None:
    """An agent that rewrites its own history (a summary replacing old turns, a tool result
    edited, a system prompt changed) hands the same list and dicts again: each call gets the
    key of what it sends now, in one cassette and in the next one."""
    messages = agent_turns(3)[-1]
    for name in ("first.yaml", "second.yaml"):
        cassette = Cassette(tmp_path / name, mode="record")
        seen = []
        for edit in range(4):
            if edit == 1:
                messages[0]["content"] = "You are verbose."  # the very dict, changed
            elif edit == 2:
                messages[3]["content"] = "result 0.0, corrected"
            elif edit == 3:
                messages[2:4] = [{"role": "user", "content": "(summary of two turns)"}]
            request = request_of(messages)
            call = cassette.begin(request)
            call.abandon()
            assert call.key == whole(request)[1]
            seen.append(call.key)
        assert len(set(seen)) == 4
        messages = agent_turns(3)[-1]


def test_a_request_without_a_conversation_is_remembered_by_what_it_holds(
    tmp_path: Any,
) -> None:
    """A completion or embedding request is remembered whole: edited in place between two
    calls, or holding ``1`` where it held ``1.0``, it gets the key the whole-request path
    gives what it holds now."""
    request: dict[str, Any] = {
        "kind": "completion",
        "model": "m",
        "prompt": "Summarise: sk-proj-" + "Xy9" * 12,
        "params": {"temperature": 1.0},
    }
    cassette = Cassette(tmp_path / "c.yaml", mode="record")
    seen = []
    for edit in range(4):
        if edit == 1:
            request["prompt"] = "Summarise: the weather"
        elif edit == 2:
            request["params"]["temperature"] = 1
        elif edit == 3:
            request["params"]["temperature"] = 0.5
        for _ in range(2):  # the second time from what the cassette remembers
            call = cassette.begin(request)
            call.abandon()
            assert (canonical_json(call.request), call.key) == whole(request)
        seen.append(call.key)
    assert seen[0] != seen[1] and seen[2] != seen[3]
    request["prompt"] = "Summarise: sk-proj-" + "Xy9" * 12
    assert "Xy9Xy9" not in canonical_json(cassette.begin(request).request)


def test_what_a_call_hands_out_is_its_own(tmp_path: Any) -> None:
    """A program changing what a miss or ``interactions`` gave it changes nothing the
    cassette keys or replays afterwards."""
    path = tmp_path / "c.yaml"
    recording = Cassette(path, mode="record")
    lists = agent_turns(2)
    for messages in lists:
        recording.begin(request_of(messages)).record({"text": f"after {len(messages)}"})
    recording.save()
    cassette = Cassette(path)
    for interaction in cassette.interactions:
        interaction.request["messages"].clear()
        interaction.response["text"] = "changed by the program"
    from chaincassette import CassetteMiss

    with pytest.raises(CassetteMiss) as miss:
        cassette.begin(request_of([{"role": "user", "content": "never recorded"}]))
    assert miss.value.nearest is not None
    miss.value.nearest["messages"].clear()
    miss.value.request["messages"].append("junk")
    for messages in lists:
        call = cassette.begin(request_of(messages))
        assert call.hit and call.response == {"text": f"after {len(messages)}"}
        assert call.key == whole(request_of(messages))[1]


def test_each_cassette_keeps_its_own_conversations(walked: list[Any]) -> None:
    """What one cassette remembers goes with it: a fresh cassette keys everything again."""
    lists = agent_turns(5)
    for _ in range(2):
        cassette = Cassette("unused.yaml", mode="off")
        walked.clear()
        for messages in lists:
            request = request_of(messages)
            assert cassette.begin(request).key == whole(request)[1]
        assert len(walked) == len(lists[-1])


def test_branches_and_repeats_share_prefixes_without_mixing_them() -> None:
    keys = RequestKeys(DEFAULT_PIPELINE)
    base = agent_turns(3)[-1]
    left = [*base, {"role": "user", "content": "left"}]
    right = [*base, {"role": "user", "content": "right"}]
    for messages in (left, right, base, left, right[:3], right):
        request = request_of(messages)
        assert keyed(keys, request) == whole(request)
    assert keyed(keys, request_of(left)) != keyed(keys, request_of(right))


def test_other_fields_are_keyed_per_request_and_a_new_kind_starts_afresh() -> None:
    keys = RequestKeys(DEFAULT_PIPELINE)
    messages = agent_turns(2)[-1]
    variants = [
        request_of(messages),
        request_of(messages, params={"temperature": 0.0}),  # 0 and 0.0 key apart
        request_of(messages, tool_choice={"type": "function", "id": "call_0_0_Zx9"}),
        request_of(messages, token=KEY, request_id="req_1"),  # after "messages"
        {**request_of(messages), "kind": "completion"},
        request_of(messages, params={"callback": "<function f at 0x7f00deadbeef>"}),
        request_of(messages, api_key=KEY),  # before "messages": the whole request decides
    ]
    for request in variants + variants:
        assert keyed(keys, request) == whole(request)
    assert keys._conversation(request_of(messages, api_key=KEY)) is None


def test_secrets_addresses_and_volatile_fields_inside_messages() -> None:
    keys = RequestKeys(DEFAULT_PIPELINE)
    messages: list[Any] = [
        {"role": "user", "content": "my key is " + KEY, "api_key": "kept: a name"},
        {"role": "assistant", "content": "<obj at 0x7f1234567890>", "usage": {"t": 3}},
        "a message that is not a dict",
        {"role": "user", "content": [{"type": "text", "text": "hi", "id": "lc_1"}]},
    ]
    for end in range(1, len(messages) + 1):
        request = request_of(messages[:end])
        assert keyed(keys, request) == whole(request)


def test_content_blocks_carrying_tool_call_ids_are_aliased_in_order() -> None:
    keys = RequestKeys(DEFAULT_PIPELINE)
    call = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "checking"},
            {"type": "tool_use", "id": "toolu_01ABC", "name": "lookup", "input": {}},
        ],
    }
    answer = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01ABC", "content": "7"}],
    }
    messages = [{"role": "user", "content": "go"}, call, answer, call]
    for end in range(1, len(messages) + 1):
        request = request_of(messages[:end])
        assert keyed(keys, request) == whole(request)


def test_an_id_used_as_a_mapping_key_is_renamed_by_the_whole_request_path() -> None:
    keys = RequestKeys(DEFAULT_PIPELINE)
    signed = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_sig", "name": "lookup", "args": {}}],
        "additional_kwargs": {"signatures": {"call_sig": "c2ln"}},
    }
    request = request_of([{"role": "user", "content": "go"}, signed])
    assert keys._conversation(request) is None
    normalized, _ = keys.keyed(request)
    assert normalized["messages"][1]["additional_kwargs"]["signatures"] == {"call_1": "c2ln"}


@pytest.mark.parametrize(
    "request_",
    [
        {"kind": "chat", "messages": []},
        {"kind": "chat", "messages": "text"},
        {"kind": "chat", "call_id": "x", "messages": [{"role": "user", "content": "a"}]},
        {"kind": "chat", "type": "tool_call", "messages": [{"role": "user", "content": "a"}]},
        {"kind": "rerank", "messages": [{"role": "user", "content": "a"}]},
        {1: "x", "kind": "chat", "messages": [{"role": "user", "content": "a"}]},
    ],
)
def test_layouts_it_does_not_cover_take_the_whole_request_path(request_: dict[Any, Any]) -> None:
    assert RequestKeys(DEFAULT_PIPELINE)._conversation(request_) is None


def test_the_memo_empties_when_full_and_keys_stay_right() -> None:
    for small in ({"MAX_PREFIXES": 3}, {"MAX_HELD_MESSAGES": 30}, {"MAX_TAILS": 1}):
        with limits(**small):
            keys = RequestKeys(DEFAULT_PIPELINE)
            for messages in agent_turns(6, parallel=2) + agent_turns(6):
                request = request_of(messages)
                assert keyed(keys, request) == whole(request)
            assert len(keys._states) <= small.get("MAX_PREFIXES", 4096)


def test_only_the_default_pipeline_resumes(walked: list[Any]) -> None:
    for options in ({"ignore": ["params.seed"]}, {"redact_patterns": ["tok_[0-9]+"]}):
        cassette = Cassette("unused.yaml", mode="off", **options)
        request = request_of(agent_turns(2)[-1])
        assert cassette.begin(request).key == key_of(cassette.normalize(request))
    assert walked == []


def test_a_users_normalizer_never_changes_the_callers_request(tmp_path: Any) -> None:
    def drop_temperature_in_place(request: dict[str, Any]) -> dict[str, Any]:
        request["params"].pop("temperature", None)  # not pure: it must get a copy
        request["messages"].clear()
        return request

    cassette = Cassette(tmp_path / "c.yaml", mode="all", normalizers=[drop_temperature_in_place])
    request = request_of(agent_turns(1)[-1])
    before = canonical_json(request)
    cassette.begin(request).abandon()
    assert canonical_json(request) == before


TRICKY_MESSAGES: list[Any] = [
    {"role": "user", "content": "key " + KEY + " at <obj at 0x7f00aa>", "id": "m1"},
    {
        "role": "assistant",
        "tool_calls": [
            {"id": "call " + KEY, "name": "f", "args": {"token": "<f at 0x1>"}},
            {"id": {"nested": KEY, "at": "<f at 0x7f00ab>"}, "name": "g", "args": {}},
            {"id": "", "name": "h", "args": {"call_id": "call_9"}},
        ],
        "usage": {"total": 3},
    },
    {"type": "tool_use", "id": "toolu_1", "input": {"id": "not a call id"}},
    {"type": "<type at 0x7f0011>", "id": "kept: the block is no call"},
    ["a list", {"tool_use_id": "toolu_1"}, 3, None, 1.5],
    {"role": "tool", "tool_call_id": "call " + KEY, "content": [{"type": "text"}]},
    "plain <thing at 0xABCDEF>",
]


@pytest.mark.parametrize("end", range(1, len(TRICKY_MESSAGES) + 1))
def test_one_walk_per_message_does_what_the_four_default_steps_do(end: int) -> None:
    """``default_message_steps`` against the steps themselves, message by message."""
    aliaser = ToolCallAliaser()
    walked = [default_message_steps(m, aliaser) for m in TRICKY_MESSAGES[:end]]
    stepped = {"kind": "chat", "messages": TRICKY_MESSAGES[:end]}
    for step in DEFAULT_PIPELINE[:4]:  # all but order_tool_results
        stepped = step(stepped)
    assert canonical_json(walked) == canonical_json(stepped["messages"])


def test_threads_keying_through_one_cassette_get_the_whole_request_keys() -> None:
    """Eight threads key interleaved conversations (some the same objects, some equal
    copies) through one cassette at once."""
    shared = agent_turns(10, parallel=2)
    conversations = [shared, shared, copy.deepcopy(shared), agent_turns(10)]
    expected = [[whole(request_of(m))[1] for m in lists] for lists in conversations]
    failures: list[str] = []
    start = threading.Barrier(8)
    cassette = Cassette("unused.yaml", mode="off")

    def run(index: int) -> None:
        lists = conversations[index % len(conversations)]
        start.wait()
        for _ in range(5):
            for turn, messages in enumerate(lists):
                key = cassette.begin(request_of(messages)).key
                if key != expected[index % len(conversations)][turn]:
                    failures.append(f"thread {index} turn {turn}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
