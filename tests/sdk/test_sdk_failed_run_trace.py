"""A run of raw SDK calls that failed keeps its error in the trace; its replay does not warn.

A program asks the real ``openai`` client (against the fake wire server), then refuses the
answer with an error of its own, which ends the ``use_cassette`` block. The SDK layer's
part of the trace is closed by an ``error`` node naming it; two replays against a dead port
fail the same way and match it without a ``TraceDivergenceWarning``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from fakes.wire import FakeServer
from sdk_clients import DEAD, openai_client

from chaincassette import Cassette, use_cassette
from chaincassette.trace import TraceDivergenceWarning


class NotANumber(ValueError):
    """The program's own refusal of the answer."""


def fail(path: Path, mode: str, url: str) -> Cassette:
    client = openai_client(url)
    with pytest.raises(NotANumber), use_cassette(path, mode=mode) as cassette:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "How many?"}]
        )
        content = reply.choices[0].message.content or ""
        if not content.isdigit():
            raise NotANumber(content)
    return cassette


def test_a_failed_sdk_run_is_recorded_failed_and_replays_without_warning(
    tmp_path: Path, fake: FakeServer
) -> None:
    path = tmp_path / "failed.yaml"
    fail(path, "record", fake.url)
    stored = Cassette(path, mode="replay").recorded_trace or []
    assert [(n["type"], n["name"]) for n in stored] == [
        ("llm", "openai chat.completions"),
        ("error", "NotANumber"),
    ]
    sent = fake.requests
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error", TraceDivergenceWarning)
            replay = fail(path, "replay", DEAD + "/v1")
        assert replay.trace_divergence is None and replay.stats.replayed == 1
    assert fake.requests == sent
