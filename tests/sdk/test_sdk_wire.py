"""The wire helpers alone: SSE parsed from bytes however they are split, stored bodies that
turn back into the same bytes' meaning, headers kept from an allow-list."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chaincassette.integrations.sdk import wire

STREAM = (
    b": keep-alive comment\n\n"
    b'event: message_start\ndata: {"type": "message_start", "n": 1}\n\n'
    b"data: first line\r\ndata: second line\r\n\r\n"
    b"id: 7\nretry: 50\ndata: [1, 2]\n\n"
    b"data: [DONE]\n\n"
)
EVENTS = [
    {"event": "message_start", "data": {"type": "message_start", "n": 1}},
    {"data": "first line\nsecond line"},
    {"id": "7", "retry": 50, "data": [1, 2]},
    {"data": "[DONE]"},
]


def parse(chunks: list[bytes]) -> list[dict]:
    parser = wire.SSEParser()
    events = [e for chunk in chunks for e in parser.feed(chunk)]
    return events + parser.flush()


def test_events_are_parsed_with_json_data_as_data() -> None:
    assert parse([STREAM]) == EVENTS


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_split_of_the_bytes_gives_the_same_events(cuts: list[int]) -> None:
    edges = [0, *sorted(cuts), len(STREAM)]
    assert parse([STREAM[a:b] for a, b in itertools.pairwise(edges)]) == EVENTS


def test_event_bytes_parse_back_to_the_same_event() -> None:
    again = parse([b"".join(wire.event_bytes(e) for e in EVENTS)])
    assert again == EVENTS


def test_a_last_event_without_its_blank_line_is_kept() -> None:
    assert parse([b'data: {"a": 1}']) == [{"data": {"a": 1}}]


def test_terminal_events() -> None:
    assert wire.is_terminal({"data": "[DONE]"}) and wire.is_terminal({"event": "message_stop"})
    assert not wire.is_terminal({"event": "content_block_delta", "data": {}})


@pytest.mark.parametrize(
    ("content_type", "content", "field"),
    [
        ("application/json", b'{"a": [1, 2.5, "\\u00e9"]}', "body"),
        ("text/plain; charset=utf-8", "héllo".encode(), "text"),
        ("audio/mpeg", bytes(range(256)), "base64"),
        ("application/json", b"not json", "text"),
    ],
)
def test_a_whole_response_round_trips(content_type: str, content: bytes, field: str) -> None:
    stored = wire.stored_response(200, {"content-type": content_type}, content)
    assert field in stored
    status, headers, again = wire.response_parts(json.loads(json.dumps(stored)))
    assert status == 200 and headers["content-type"] == content_type
    if field == "body":
        assert json.loads(again) == json.loads(content)
    else:
        assert again == content


def test_only_harmless_headers_are_kept() -> None:
    headers = {
        "Content-Type": "application/json",
        "Set-Cookie": "session=abc",
        "openai-organization": "org-123",
        "Authorization": "Bearer sk-x",
        "x-request-id": "req_1",
        "x-ratelimit-remaining-requests": "9",
        "retry-after": "1",
    }
    assert wire.kept_headers(headers.items()) == {
        "content-type": "application/json",
        "retry-after": "1",
        "x-ratelimit-remaining-requests": "9",
        "x-request-id": "req_1",
    }


def test_which_sdk_sent_a_request() -> None:
    assert wire.client_of({"user-agent": "curl/8"}) is None
    openai = {"x-stainless-lang": "python", "user-agent": "AsyncOpenAI/Python 2.5"}
    assert wire.client_of(openai) == wire.Client("openai", "openai")
    claude = {**openai, "user-agent": "Anthropic/Python 0.1", "anthropic-version": "2023-06-01"}
    assert wire.client_of(claude) == wire.Client("anthropic", "anthropic")
    groq = {"x-stainless-lang": "python", "user-agent": "Groq/Python 0.9"}
    assert wire.client_of(groq) == wire.Client("groq", "openai")


def test_stream_tokens() -> None:
    anthropic = [
        {
            "data": {
                "type": "message_start",
                "message": {"usage": {"input_tokens": 10, "output_tokens": 1}},
            }
        },
        {"data": {"type": "message_delta", "usage": {"output_tokens": 7}}},
    ]
    assert wire.stream_tokens(anthropic) == 17
    openai = [
        {"data": {"choices": []}},
        {"data": {"usage": {"total_tokens": 42}}},
        {"data": "[DONE]"},
    ]
    assert wire.stream_tokens(openai) == 42
