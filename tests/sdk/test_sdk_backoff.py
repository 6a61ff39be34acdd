"""A replayed connection error (no HTTP status: the connection dropped) costs no back-off:
the SDK's retry sleeps only before an attempt that goes live.

Recorded with the real clients against the fake wire server, which hangs up on the calls'
first attempts; replayed in fresh processes with every socket blocked, counting the
program's sleeps (``programs/backoff_sdk.py``). In process: a replayed failure followed by
a live attempt (``new_episodes``) keeps the back-off before it, and an SDK class without the
back-off method is left to sleep its own way.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import anthropic
import anyio
import openai
import pytest
from fakes.wire import FakeServer
from sdk_clients import anthropic_client, async_anthropic, async_openai, openai_client
from sdk_programs import run_backoff

from chaincassette import Cassette, use_cassette
from chaincassette.integrations.sdk import retries
from chaincassette.patching import Patches


def test_a_replayed_connection_error_is_retried_without_the_back_off(
    fake: FakeServer, tmp_path: Path
) -> None:
    cassette = tmp_path / "backoff.yaml"
    recorded, slept = run_backoff(fake, cassette, "record")
    assert fake.requests == 4 * (3 + 3)  # per client: 2 hang-ups + the answer, 3 hang-ups
    assert slept == 4 * (2 + 2)  # live, every retry waited its back-off
    assert sum("APIConnectionError" in line for line in recorded) == 4
    assert sum('"Echo: HANG_UP_TWICE' in line for line in recorded) == 4
    kinds = [i.response.get("error", {}).get("type") for i in Cassette(cassette).interactions]
    assert kinds.count("httpx.RemoteProtocolError") == 4 * (2 + 3)
    for _ in range(2):
        replayed, slept = run_backoff(fake, cassette, "replay", OFFLINE="1")
        assert replayed == recorded
        assert slept == 0
    assert fake.requests == 24


# -- in process ------------------------------------------------------------------------------

CLIENTS = ("openai", "async openai", "anthropic", "async anthropic")


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The back-off sleeps (``time.sleep``, ``anyio.sleep``: what the SDKs sleep with) made
    during the test, each lasting 0 s."""
    return counted_sleeps(monkeypatch)


def counted_sleeps(monkeypatch: pytest.MonkeyPatch, forced: float | None = None) -> list[float]:
    """The SDKs' sleeps, counted and lasting 0 s on the wall; ``forced``: each lasts that long
    on ``time.perf_counter`` (what a recording's ``duration_ms`` is measured with)."""
    sleeps: list[float] = []
    sleep, asleep, perf_counter = time.sleep, anyio.sleep, time.perf_counter

    def counted(seconds: float) -> None:
        if seconds > 0:
            sleeps.append(seconds if forced is None else forced)
        sleep(0)

    async def acounted(seconds: float) -> None:
        if seconds > 0:
            sleeps.append(seconds if forced is None else forced)
        await asleep(0)

    monkeypatch.setattr(time, "sleep", counted)
    monkeypatch.setattr(anyio, "sleep", acounted)
    if forced is not None:
        monkeypatch.setattr(time, "perf_counter", lambda: perf_counter() + sum(sleeps))
    return sleeps


def ask(kind: str, fake: FakeServer, retries: int) -> str:
    """One call of the client ``kind``, hung up on twice (then answered): its text."""
    q = [{"role": "user", "content": f"HANG_UP_TWICE {kind}"}]
    if kind == "openai":
        chat = openai_client(fake.url, max_retries=retries).chat.completions
        return str(chat.create(model="gpt-4o-mini", messages=q).choices[0].message.content)
    if kind == "anthropic":
        messages = anthropic_client(fake.base, max_retries=retries).messages
        return str(messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=q).content)

    async def call() -> Any:
        if kind == "async openai":
            achat = async_openai(fake.url, max_retries=retries).chat.completions
            answer = await achat.create(model="gpt-4o-mini", messages=q)
            return answer.choices[0].message.content
        amessages = async_anthropic(fake.base, max_retries=retries).messages
        answer = await amessages.create(model="claude-sonnet-4-5", max_tokens=8, messages=q)
        return answer.content

    return str(asyncio.run(call()))


@pytest.mark.parametrize("kind", CLIENTS)
def test_the_back_off_before_an_attempt_that_goes_live_is_waited(
    kind: str, tmp_path: Path, fake: FakeServer, slept: list[float]
) -> None:
    path = tmp_path / "sdk.yaml"
    connection_errors = (openai.APIConnectionError, anthropic.APIConnectionError)
    with use_cassette(path, mode="record"), pytest.raises(connection_errors):
        ask(kind, fake, retries=1)  # both attempts hung up on
    assert fake.requests == 2 and len(slept) == 1
    slept.clear()
    with use_cassette(path, mode="new_episodes") as cassette:
        said = ask(kind, fake, retries=2)  # the two failures replayed, the third attempt live
    assert "Echo: HANG_UP_TWICE" in said and fake.requests == 3
    assert cassette.stats.replayed == 2 and cassette.stats.recorded == 1
    assert len(slept) == 1  # before the live attempt; the one between the replayed two dropped


#: What each back-off sleep lasts on the recordings' clock (it lasts 0 s on the wall's).
FORCED_BACKOFF = 3600.0


@pytest.fixture
def backed_off(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The back-off sleeps made during the test, each moving ``time.perf_counter``
    ``FORCED_BACKOFF`` seconds on."""
    return counted_sleeps(monkeypatch, FORCED_BACKOFF)


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_recording_made_after_a_replayed_attempt_lasts_its_call_not_the_back_off(
    kind: str, tmp_path: Path, fake: FakeServer, backed_off: list[float]
) -> None:
    path = tmp_path / "sdk.yaml"
    connection_errors = (openai.APIConnectionError, anthropic.APIConnectionError)
    with use_cassette(path, mode="record"), pytest.raises(connection_errors):
        ask(kind, fake, retries=1)  # both attempts hung up on
    backed_off.clear()
    with use_cassette(path, mode="new_episodes", record_timing=True) as cassette:
        ask(kind, fake, retries=2)  # the two failures replayed, the third attempt live
    assert cassette.stats.recorded == 1 and backed_off == [FORCED_BACKOFF]
    timed = [i.meta["duration_ms"] for i in Cassette(path).interactions if "duration_ms" in i.meta]
    assert len(timed) == 1 and 0 <= timed[0] < FORCED_BACKOFF * 1000


class _SyncLoop:
    """An SDK base client in miniature: in its request method a replayed attempt fails,
    then each of ``attempts`` (replayed or live) is sent after the SDK's back-off."""

    def __init__(self) -> None:
        self.naps: list[float] = []

    def request(self, *attempts: str) -> None:
        retries.replayed_attempt()
        for attempt in attempts:
            self._sleep_for_retry(retries_taken=0)
            (retries.live_attempt if attempt == "live" else retries.replayed_attempt)()

    def _sleep_for_retry(self, *, retries_taken: int) -> None:
        self.naps.append(0.5 * 2**retries_taken)


class _AsyncLoop:
    """``_SyncLoop`` for an async SDK."""

    def __init__(self) -> None:
        self.naps: list[float] = []

    async def request(self, *attempts: str) -> None:
        retries.replayed_attempt()
        for attempt in attempts:
            await self._sleep_for_retry(retries_taken=0)
            if attempt == "live":
                await retries.live_attempt_async()
            else:
                retries.replayed_attempt()

    async def _sleep_for_retry(self, *, retries_taken: int) -> None:
        self.naps.append(0.5 * 2**retries_taken)


class _OlderLoop:
    """``_SyncLoop`` of an SDK version that sleeps without ``_sleep_for_retry``."""

    def __init__(self) -> None:
        self.naps: list[float] = []

    def request(self, *attempts: str) -> None:
        retries.replayed_attempt()
        for attempt in attempts:
            self.naps.append(0.5)
            (retries.live_attempt if attempt == "live" else retries.replayed_attempt)()


@pytest.mark.parametrize(
    ("attempts", "naps"),
    [((), 0), (("replayed",), 0), (("replayed", "replayed"), 0), (("replayed", "live"), 1)],
)
def test_a_back_off_after_a_replayed_attempt_is_waited_only_before_a_live_one(
    attempts: tuple[str, ...], naps: int
) -> None:
    patches = Patches(lambda patches: None)
    try:
        retries.patch_loop(patches, _SyncLoop, is_async=False)
        retries.patch_loop(patches, _AsyncLoop, is_async=True)
        sync, asynchronous = _SyncLoop(), _AsyncLoop()
        sync.request(*attempts)
        asyncio.run(asynchronous.request(*attempts))
        assert len(sync.naps) == len(asynchronous.naps) == naps
        sync._sleep_for_retry(retries_taken=0)  # outside a request method: as it was
        asyncio.run(asynchronous._sleep_for_retry(retries_taken=0))
        assert len(sync.naps) == len(asynchronous.naps) == naps + 1
    finally:
        patches.undo()


def test_an_sdk_without_the_back_off_method_keeps_its_own_sleep() -> None:
    patches = Patches(lambda patches: None)
    try:
        retries.patch_loop(patches, _OlderLoop, is_async=False)
        assert hasattr(vars(_OlderLoop)["request"], "__wrapped__")  # still shielded
        assert retries.BACKOFF not in vars(_OlderLoop)  # nothing to put off, nothing added
        loop = _OlderLoop()
        loop.request("replayed", "live")
        assert loop.naps == [0.5, 0.5]  # its own sleeps, as before
    finally:
        patches.undo()
    assert not hasattr(vars(_OlderLoop)["request"], "__wrapped__")
