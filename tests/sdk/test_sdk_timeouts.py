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

from pathlib import Path

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
