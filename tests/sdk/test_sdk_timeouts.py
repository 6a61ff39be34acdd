"""A client timeout is recorded as what it was and replayed without the network or the wait:
the SDK retries a replayed ``httpx.ReadTimeout`` as it retried the live one, and the call
that spent its retries raises the same ``APITimeoutError`` with the same message.

Recorded with the real clients (openai, anthropic; sync, async; ``timeout=1.0``,
``max_retries=1``) against the fake wire server, which answers the calls' first attempts
late (``STALL_ONCE``) or every attempt late (``STALL_ALWAYS``); replayed twice in fresh
processes once the server is gone, with every socket blocked, counting the program's
sleeps (``programs/backoff_sdk.py``).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
from fakes.scripts import echo
from fakes.wire import FakeServer
from sdk_programs import run_backoff

from chaincassette import Cassette


def test_a_timed_out_attempt_is_replayed_as_it_was_without_the_wait(tmp_path: Path) -> None:
    cassette = tmp_path / "timeouts.yaml"
    with FakeServer(echo) as server:
        recorded, slept = run_backoff(server, cassette, "record", FAULT="stall")
        assert server.requests == 4 * (2 + 2)  # per client: 1 late + the answer, 2 late
    assert slept == 4 * (1 + 1)  # live, every retry waited its back-off
    assert sum('"Echo: STALL_ONCE' in line for line in recorded) == 4
    spent = [line for line in recorded if "APITimeoutError" in line]
    assert len(spent) == 4
    assert all(line.split(": ")[0].endswith(".APITimeoutError") for line in spent)
    kinds = [i.response.get("error", {}).get("type") for i in Cassette(cassette).interactions]
    assert kinds.count("httpx.ReadTimeout") == 4 * (1 + 2)
    for _ in range(2):  # the server is gone: nothing could answer but the cassette
        replayed, slept = run_backoff(server, cassette, "replay", FAULT="stall", OFFLINE="1")
        assert replayed == recorded
        assert slept == 0


def test_the_fake_answers_other_requests_while_one_stalls(fake: FakeServer) -> None:
    def late() -> None:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{fake.url}/chat/completions", json=ask("STALL_ALWAYS"), timeout=2)

    stalled = threading.Thread(target=late)
    stalled.start()
    try:
        for _ in range(500):  # the stalled request is in before the other is sent
            if fake.requests:
                break
            time.sleep(0.01)
        answer = httpx.post(f"{fake.url}/chat/completions", json=ask("hello"), timeout=2)
        assert answer.json()["choices"][0]["message"]["content"] == "Echo: hello"
    finally:
        stalled.join()
    assert fake.requests == 2


def ask(text: str) -> dict[str, object]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}
