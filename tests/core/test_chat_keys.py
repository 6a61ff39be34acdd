"""Prefix-resumed keys (``chaincassette.chat_keys``) equal the whole-request pipeline's.

Every test feeds one ``ChatKeys`` a sequence of requests that share message dicts, the
way an agent's adapter does, and compares each answer with ``normalize`` + ``key_of``
run on the whole request: the normalized request (as canonical JSON, so ``1``/``1.0``
differ) and the key.
"""

from __future__ import annotations

from typing import Any

import pytest

from chaincassette import Cassette, canonical_json, chat_keys, key_memo
from chaincassette.canonical import key_of
from chaincassette.chat_keys import ChatKeys
from chaincassette.normalize import DEFAULT_PIPELINE, normalize

SECRET = "sk-proj-" + "A1b2" * 8  # shaped like an OpenAI key (the patterns want a digit)
TOOLS = [
    {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "convert", "parameters": {"type": "object"}}},
]


def whole(request: dict[str, Any]) -> tuple[str, str]:
    normalized = normalize(request, DEFAULT_PIPELINE)
    return canonical_json(normalized), key_of(normalized)


def resumed(keys: ChatKeys, request: dict[str, Any]) -> tuple[str, str] | None:
    found = keys.keyed(request)
    if found is None:
        return None
    normalized, key = found
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


@pytest.mark.parametrize("parallel", [1, 3])
def test_an_agent_conversation_keys_like_the_whole_request_at_every_turn(parallel: int) -> None:
    keys = ChatKeys()
    for messages in agent_turns(8, parallel):
        request = request_of(messages)
        assert resumed(keys, request) == whole(request)


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The messages ``ChatKeys`` runs through the default steps, in order."""
    seen: list[Any] = []
    real = chat_keys.default_message_steps

    def counted(message: Any, aliaser: Any) -> Any:
        seen.append(message)
        return real(message, aliaser)

    monkeypatch.setattr(chat_keys, "default_message_steps", counted)
    return seen


def test_each_turn_normalizes_only_its_new_messages(walked: list[Any]) -> None:
    steps = walked
    keys = ChatKeys()
    lists = agent_turns(12)
    for messages in lists:
        keys.keyed(request_of(messages))
    # every message is normalized once, whatever turn it first appeared in
    assert len(steps) == len(lists[-1])
    # a repeat of the same request normalizes nothing
    steps.clear()
    keys.keyed(request_of(lists[-1]))
    assert steps == []


def test_each_tool_result_is_written_once_and_tool_schemas_once_per_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A trailing tool result is hashed at the end of one request and again when the next
    one closes its run: its text is kept with it. The fields after ``messages`` are
    normalized once for every cassette of the process (a fresh one per test)."""
    texts: list[Any] = []
    tails: list[Any] = []
    real_text, real_tail = chat_keys._text, chat_keys._Tail

    def counted_text(message: Any) -> str:
        texts.append(message)
        return real_text(message)

    def counted_tail(*args: Any) -> Any:
        tails.append(args)
        return real_tail(*args)

    monkeypatch.setattr(chat_keys, "_text", counted_text)
    monkeypatch.setattr(chat_keys, "_Tail", counted_tail)
    monkeypatch.setattr(chat_keys, "_tails", {})
    lists = agent_turns(6, parallel=2)
    head = request_of([])
    for _ in range(2):  # two cassettes, as two tests of a suite
        keys = ChatKeys()
        texts.clear()
        for messages in lists:
            request = {**head, "messages": messages}
            assert resumed(keys, request) == whole(request)
        assert len(texts) == len(lists[-1])
    assert len(tails) == 1


def test_branches_and_repeats_share_prefixes_without_mixing_them() -> None:
    keys = ChatKeys()
    base = agent_turns(3)[-1]
    left = [*base, {"role": "user", "content": "left"}]
    right = [*base, {"role": "user", "content": "right"}]
    for messages in (left, right, base, left, right[:3], right):
        request = request_of(messages)
        assert resumed(keys, request) == whole(request)
    assert resumed(keys, request_of(left)) != resumed(keys, request_of(right))


def test_other_fields_are_keyed_per_request_and_a_new_kind_starts_afresh() -> None:
    keys = ChatKeys()
    messages = agent_turns(2)[-1]
    variants = [
        request_of(messages),
        request_of(messages, params={"temperature": 0.0}),  # 0 and 0.0 key apart
        request_of(messages, tool_choice={"type": "function", "id": "call_0_0_Zx9"}),
        request_of(messages, token=SECRET, request_id="req_1"),  # after "messages"
        {**request_of(messages), "kind": "completion"},
        request_of(messages, params={"callback": "<function f at 0x7f00deadbeef>"}),
    ]
    for request in variants + variants:
        assert resumed(keys, request) == whole(request)
    # a field sorting before "messages" is walked first: only the whole request says how
    assert keys.keyed(request_of(messages, api_key=SECRET)) is None


def test_secrets_addresses_and_volatile_fields_inside_messages() -> None:
    keys = ChatKeys()
    messages: list[Any] = [
        {"role": "user", "content": "my key is " + SECRET, "api_key": "kept: a name"},
        {"role": "assistant", "content": "<obj at 0x7f1234567890>", "usage": {"t": 3}},
        "a message that is not a dict",
        {"role": "user", "content": [{"type": "text", "text": "hi", "id": "lc_1"}]},
    ]
    for end in range(1, len(messages) + 1):
        request = request_of(messages[:end])
        assert resumed(keys, request) == whole(request)


def test_content_blocks_carrying_tool_call_ids_are_aliased_in_order() -> None:
    keys = ChatKeys()
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
        assert resumed(keys, request) == whole(request)


def test_an_id_used_as_a_mapping_key_falls_back_to_the_whole_request() -> None:
    keys = ChatKeys()
    signed = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_sig", "name": "lookup", "args": {}}],
        "additional_kwargs": {"signatures": {"call_sig": "c2ln"}},
    }
    request = request_of([{"role": "user", "content": "go"}, signed])
    assert keys.keyed(request) is None
    normalized = normalize(request, DEFAULT_PIPELINE)
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
    assert ChatKeys().keyed(request_) is None


def test_the_prefix_tree_regrows_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chat_keys, "MAX_NODES", 5)
    keys = ChatKeys()
    for messages in agent_turns(6) + agent_turns(6):
        request = request_of(messages)
        assert resumed(keys, request) == whole(request)


def test_only_the_default_pipeline_resumes() -> None:
    assert chat_keys.supports(DEFAULT_PIPELINE)
    assert not chat_keys.supports(Cassette("x.yaml", ignore=["params.seed"]).pipeline)
    assert not chat_keys.supports(Cassette("x.yaml", redact_patterns=["tok_[0-9]+"]).pipeline)


@pytest.mark.parametrize(
    "options",
    [{}, {"ignore": ["params.temperature"]}, {"redact_patterns": [r"ref-\d+"]}],
    ids=["default", "ignore", "redact_patterns"],
)
def test_a_cassette_keys_stable_messages_like_key_for(
    tmp_path: Any, options: dict[str, Any]
) -> None:
    cassette = Cassette(tmp_path / "c.yaml", mode="all", **options)
    for messages in agent_turns(4, parallel=2):
        request = request_of(messages)
        found = cassette.lookup(request, stable_messages=True)
        assert found.key == cassette.key_for(request)
        assert canonical_json(found.request) == canonical_json(cassette.normalize(request))


@pytest.mark.parametrize("stable", [True, False])
def test_a_users_normalizer_never_changes_the_callers_shared_request(
    tmp_path: Any, stable: bool
) -> None:
    def drop_temperature_in_place(request: dict[str, Any]) -> dict[str, Any]:
        request["params"].pop("temperature", None)  # not pure: must get a copy
        request["messages"].clear()
        return request

    cassette = Cassette(tmp_path / "c.yaml", mode="all", normalizers=[drop_temperature_in_place])
    messages = agent_turns(1)[-1]
    request = request_of(messages)
    before = canonical_json(request)
    cassette.lookup(request, stable_messages=stable)
    assert canonical_json(request) == before


TRICKY_MESSAGES: list[Any] = [
    {"role": "user", "content": "key " + SECRET + " at <obj at 0x7f00aa>", "id": "m1"},
    {
        "role": "assistant",
        "tool_calls": [
            {"id": "call " + SECRET, "name": "f", "args": {"token": "<f at 0x1>"}},
            {"id": {"nested": SECRET, "at": "<f at 0x7f00ab>"}, "name": "g", "args": {}},
            {"id": "", "name": "h", "args": {"call_id": "call_9"}},
        ],
        "usage": {"total": 3},
    },
    {"type": "tool_use", "id": "toolu_1", "input": {"id": "not a call id"}},
    {"type": "<type at 0x7f0011>", "id": "kept: the block is no call"},
    ["a list", {"tool_use_id": "toolu_1"}, 3, None, 1.5],
    {"role": "tool", "tool_call_id": "call " + SECRET, "content": [{"type": "text"}]},
    "plain <thing at 0xABCDEF>",
]


@pytest.mark.parametrize("end", range(1, len(TRICKY_MESSAGES) + 1))
def test_one_walk_per_message_does_what_the_four_default_steps_do(end: int) -> None:
    """``default_message_steps`` against the steps themselves, message by message."""
    aliaser = chat_keys.ToolCallAliaser()
    walked = [chat_keys.default_message_steps(m, aliaser) for m in TRICKY_MESSAGES[:end]]
    stepped = {"kind": "chat", "messages": TRICKY_MESSAGES[:end]}
    for step in DEFAULT_PIPELINE[:4]:  # all but order_tool_results
        stepped = step(stepped)
    assert canonical_json(walked) == canonical_json(stepped["messages"])


def test_the_prefix_tree_regrows_when_its_lists_hold_too_much(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each node keeps its prefix's normalized list: a long conversation is bounded by the
    references those lists hold, not only by the number of nodes."""
    monkeypatch.setattr(chat_keys, "MAX_HELD", 30)
    keys = ChatKeys()
    for messages in agent_turns(12):
        request = request_of(messages)
        assert resumed(keys, request) == whole(request)
        assert keys._held <= 30 + len(messages)


def test_every_cassette_with_the_default_pipeline_resumes_from_one_tree(
    monkeypatch: pytest.MonkeyPatch, walked: list[Any]
) -> None:
    """The next test replays the same conversation with a fresh cassette: its message dicts
    are the very objects of the first run (``messages._by_content``), so keying resumes at
    the end of what the first cassette keyed and walks no message again."""
    monkeypatch.setattr(key_memo, "SHARED_CHAT_KEYS", ChatKeys())  # no regrow midway
    lists = agent_turns(6)
    first, second = Cassette("unused.yaml", mode="off"), Cassette("unused.yaml", mode="off")
    for messages in lists:
        request = request_of(messages)
        assert first.lookup(request, stable_messages=True).key == whole(request)[1]
    assert len(walked) == len(lists[-1])  # each message once
    walked.clear()
    for messages in lists:
        request = request_of(messages)
        assert second.lookup(request, stable_messages=True).key == whole(request)[1]
    assert walked == []
    other = Cassette("unused.yaml", mode="off", ignore=["params.seed"])  # its own pipeline
    request = request_of(lists[-1])
    assert other.lookup(request, stable_messages=True).key == key_of(other.normalize(request))
    assert walked == []  # keyed by the whole-request path, not the shared tree


def test_threads_keying_through_the_shared_tree_get_the_whole_request_keys() -> None:
    """Eight threads, each with its own cassette, key interleaved conversations (some the
    same objects, some equal copies) through the one tree at once."""
    import copy
    import threading

    shared = agent_turns(10, parallel=2)
    conversations = [shared, shared, copy.deepcopy(shared), agent_turns(10)]
    expected = [[whole(request_of(m))[1] for m in lists] for lists in conversations]
    failures: list[str] = []
    start = threading.Barrier(8)

    def run(index: int) -> None:
        cassette = Cassette("unused.yaml", mode="off")
        lists = conversations[index % len(conversations)]
        start.wait()
        for _ in range(5):
            for turn, messages in enumerate(lists):
                key = cassette.lookup(request_of(messages), stable_messages=True).key
                if key != expected[index % len(conversations)][turn]:
                    failures.append(f"thread {index} turn {turn}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
