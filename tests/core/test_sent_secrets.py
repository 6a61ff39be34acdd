"""A secret a request sent (masked there, by format or as random) that a response repeats
is masked in the response too, as the value of a secret variable is: stored masked, the
recording run handed the same masked copy, a ``SecretMaskedWarning`` naming its kind."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from session_tokens import session_token

from chaincassette import Cassette, CassetteSecretError, use_cassette
from chaincassette.redact import SecretMaskedWarning


def chat(text: str, model: str = "m") -> dict[str, Any]:
    return {"kind": "chat", "model": model, "messages": [{"role": "user", "content": text}]}


def answer(text: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A provider's answer: text, a tool call's JSON arguments and a structured part."""
    return {
        "message": {"content": text, "parts": [{"type": "json", "json": {"quoted": text}}]},
        "tool_calls": [{"name": "lookup", "arguments": json.dumps(arguments or {})}],
    }


def record(path: Path, request: dict[str, Any], response: Any, **options: Any) -> Any:
    with use_cassette(path, mode="record", **options) as cassette:
        return cassette.begin(request).record(response)


def test_a_random_token_the_prompt_sent_is_masked_in_text_arguments_and_parts(
    tmp_path: Path,
) -> None:
    token = session_token()
    path = tmp_path / "c.yaml"
    request = chat(f"my session is {token}, keep it")
    with pytest.warns(SecretMaskedWarning, match=r"repeats a secret .*\(random-token\)") as said:
        got = record(path, request, answer(f"Session {token} noted", {"session": token}))
    assert all(token not in str(w.message) for w in said)  # the warning never names it
    assert token not in json.dumps(got)
    assert got["message"]["content"] == "Session <redacted:random-token> noted"
    assert json.loads(got["tool_calls"][0]["arguments"]) == {"session": "<redacted:random-token>"}
    assert got["message"]["parts"][0]["json"]["quoted"] == got["message"]["content"]
    text = path.read_text()
    assert token not in text and text.count("<redacted:random-token>") == 4  # request too
    for _ in range(2):
        with use_cassette(path, mode="replay") as cassette:
            assert cassette.begin(request).response == got  # the run saw what replays


def test_a_key_format_the_prompt_sent_is_masked_not_refused(tmp_path: Path) -> None:
    """A key of a known format in a response refuses the save, unless a request of the
    cassette sent it: the key rules hid it there (``<secret>``), and it is masked as the
    stored request masks it."""
    key = "sk-proj-" + session_token(40) + "7"
    slack = "xoxb-1234567890-" + session_token()[:24]
    path = tmp_path / "c.yaml"
    request = chat(f"use {key} and {slack}")
    with pytest.warns(SecretMaskedWarning, match=r"openai-key, slack-token"):
        got = record(path, request, answer(f"I will use {key} with {slack}"))
    assert (
        got["message"]["content"] == "I will use <redacted:openai-key> with <redacted:slack-token>"
    )
    assert key not in path.read_text() and slack not in path.read_text()
    with use_cassette(path, mode="replay") as cassette:
        assert cassette.begin(request).response == got


def test_a_later_call_repeating_what_an_earlier_request_sent_is_masked(tmp_path: Path) -> None:
    token = session_token()
    path = tmp_path / "c.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecretMaskedWarning)
        with use_cassette(path, mode="record") as cassette:
            cassette.begin(chat(f"remember {token}")).record(answer("ok"))
            later = cassette.begin(chat("what was it?")).record(answer(f"it was {token}"))
    assert later["message"]["content"] == "it was <redacted:random-token>"
    assert token not in path.read_text()


def test_another_cassette_does_not_know_what_this_one_sent(tmp_path: Path) -> None:
    """What a cassette's requests sent is that cassette's state: a response recorded in
    another one that quotes the same token (which reads random there only in a request) is
    kept as it came."""
    token = session_token()
    record(tmp_path / "a.yaml", chat(f"remember {token}"), answer("ok"))
    got = record(tmp_path / "b.yaml", chat("anything?"), answer(f"it was {token}"))
    assert got["message"]["content"] == f"it was {token}"


def test_allowed_short_and_placeholder_values_are_not_masked(tmp_path: Path) -> None:
    token = session_token()
    path = tmp_path / "c.yaml"
    got = record(
        path, chat(f"use {token}"), answer(f"using {token}"), allow_secrets=[re.escape(token)]
    )
    assert got["message"]["content"] == f"using {token}"
    cassette = Cassette(tmp_path / "d.yaml", mode="record")
    # what the rule of secret variables would not mask is not learned either
    cassette.redactor.sent.learn([("EMPTY", "random-token"), ("not-needed", "random-token")])
    cassette.redactor.sent.learn([("abc", "openai-key"), ("12345678", "url-credential")])
    assert len(cassette.redactor.sent) == 0
    assert cassette.begin(chat("x")).record(answer("EMPTY not-needed")) == answer(
        "EMPTY not-needed"
    )


def test_keys_do_not_change_and_a_known_format_alone_in_a_response_still_refuses(
    tmp_path: Path,
) -> None:
    token = session_token()
    path = tmp_path / "c.yaml"
    request = chat(f"my session is {token}")
    plain = Cassette(tmp_path / "plain.yaml", mode="record").begin(request).key
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecretMaskedWarning)
        with use_cassette(path, mode="record") as cassette:
            assert cassette.begin(request).key == plain
            cassette.begin(request).record(answer(f"ok {token}"))
    key = "sk-proj-" + session_token(40) + "7"  # never sent: the answer's own
    with pytest.raises(CassetteSecretError, match="openai-key"):
        record(tmp_path / "refused.yaml", chat("hi"), answer(f"take {key}"))


def test_a_stream_masks_what_the_request_sent_in_each_chunk_and_across_them(
    tmp_path: Path,
) -> None:
    """Each chunk is masked as it is handed over; a token the stream cut in pieces is
    masked in the stored copy (the recording run saw those pieces as they came)."""
    token = session_token()
    path = tmp_path / "c.yaml"
    whole = [f"first {token} ", "then ", token[:10], token[10:], " end"]
    request = chat(f"say {token} twice")

    def run(mode: str) -> list[str]:
        return streamed(path, mode, request, whole)

    with pytest.warns(SecretMaskedWarning, match="random-token"):
        live = run("record")
    assert live[0] == "first <redacted:random-token> " and live[2:4] == whole[2:4]
    replayed = run("replay")
    assert replayed[0] == live[0] and "".join(replayed[2:4]) == "<redacted:random-token>"
    assert token[:10] not in path.read_text() and token[10:] not in path.read_text()
    assert run("replay") == replayed


def streamed(path: Path, mode: str, request: dict[str, Any], pieces: list[str]) -> list[str]:
    """The texts of a stream of ``pieces`` for ``request``: recorded when the cassette has
    no answer, else replayed; each chunk is ``{"t": piece}``."""
    from chaincassette.streams import record_stream, replay_stream

    with use_cassette(path, mode=mode) as cassette:
        call = cassette.begin(request)
        if call.hit:
            chunks = replay_stream(call, lambda c: c)
        else:
            chunks = record_stream(call, iter(pieces), lambda c: {"t": c}, lambda c: c)
        return [c["t"] for c in chunks]


def test_a_cassette_masks_at_most_max_values_sent_values() -> None:
    from chaincassette.sent_secrets import MAX_VALUES

    cassette = Cassette("unused.yaml", mode="record")
    tokens = [session_token() for _ in range(MAX_VALUES + 1)]
    cassette.redactor.sent.learn((token, "random-token") for token in tokens)
    masked = cassette.redactor.mask_values({"a": tokens[0], "b": tokens[-1]})
    assert masked == {"a": "<redacted:random-token>", "b": tokens[-1]}


def test_a_prompt_that_is_only_a_key_teaches_it(tmp_path: Path) -> None:
    """The key rules leave ``<secret>`` alone in the message: shorter than any format."""
    key = "sk-proj-" + session_token(40) + "7"
    with pytest.warns(SecretMaskedWarning, match="openai-key"):
        got = record(tmp_path / "c.yaml", chat(key), answer(key))
    assert got["message"]["content"] == "<redacted:openai-key>"


def test_a_stream_whose_chunks_grow_masks_the_start_of_a_token_in_earlier_ones(
    tmp_path: Path,
) -> None:
    """Chunks that each hold the text so far (LlamaIndex's partial tool-call arguments):
    the ones holding the whole token are masked as they come, and in the stored copy the
    earlier ones, holding only its start, get the label too."""
    token = session_token()
    path = tmp_path / "c.yaml"
    text = f'{{"session": "{token}"}}'
    pieces = [text[:14], text[:30], text, text]
    request = chat(f"look up {token}")

    def run(mode: str) -> list[str]:
        return streamed(path, mode, request, pieces)

    with pytest.warns(SecretMaskedWarning, match="random-token"):
        live = run("record")
    assert live[2:] == ['{"session": "<redacted:random-token>"}'] * 2
    replayed = run("replay")
    assert replayed[1] == '{"session": "<redacted:random-token>' and replayed[2:] == live[2:]
    assert token[:16] not in path.read_text()
