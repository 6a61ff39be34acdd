"""When a cancelled call is kept: the rules of ``chaincassette.cancellation.Pending``, one by
one, with the engine's own calls (``Cassette.begin``) and real asyncio cancellations."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from chaincassette import Cassette, recorded, use_cassette

REQUEST = {"kind": "chat", "model": "m", "messages": [{"role": "user", "content": "slow"}]}


async def _cancelled_call(cassette: Cassette, *, autosave: bool = False) -> None:
    """A live call that waits for its provider until the program cancels it."""
    call = cassette.begin(REQUEST, autosave=autosave)
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError as error:
        call.fail(error)
        raise


async def _cancel_soon(cassette: Cassette, *, autosave: bool = False) -> None:
    task = asyncio.create_task(_cancelled_call(cassette, autosave=autosave))
    await asyncio.sleep(0.05)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _kept(path: Path) -> list[Any]:
    return [i.response for i in Cassette(path).interactions] if path.exists() else []


def test_a_block_that_ends_normally_keeps_the_cancelled_call(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with use_cassette(path, mode="record") as cassette:
        asyncio.run(_cancel_soon(cassette))
        assert len(cassette.cancellations) == 1  # the block decides: its task ended cancelled
    (response,) = _kept(path)
    assert 40 <= response["cancelled"]["duration_ms"] < 5000


@pytest.mark.parametrize("ending", [KeyboardInterrupt, SystemExit])
def test_a_block_ended_by_an_interrupt_or_an_exit_keeps_none(
    tmp_path: Path, ending: type[BaseException]
) -> None:
    path = tmp_path / "c.yaml"
    with pytest.raises(ending), use_cassette(path, mode="record") as cassette:
        asyncio.run(_cancel_soon(cassette))
        raise ending()
    assert _kept(path) == []
    assert len(cassette.cancellations) == 0


def test_a_block_ended_by_the_cancellation_itself_keeps_none(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"

    async def main() -> None:
        async with use_cassette(path, mode="record") as cassette:
            await _cancelled_call(cassette)

    async def run() -> None:
        task = asyncio.create_task(main())
        await asyncio.sleep(0.05)
        task.cancel()  # as Ctrl-C under asyncio.run cancels the main task
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert _kept(path) == []


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Task.cancelling")
def test_without_a_block_it_is_kept_when_the_loop_carries_on(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    asyncio.run(_cancel_soon(cassette, autosave=True))  # main went on past the cancellation
    assert len(cassette.cancellations) == 0
    (response,) = _kept(path)  # autosaved
    assert "cancelled" in response


def test_a_call_whose_task_survives_is_kept_at_once(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with use_cassette(path, mode="record") as cassette:

        async def main() -> None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.05):  # the call runs in this very task
                    await _cancelled_call(cassette)

        asyncio.run(main())
        assert len(cassette.cancellations) == 0
        assert cassette.stats.recorded == 1


def test_a_later_recording_of_the_same_key_waits_for_the_verdict(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with use_cassette(path, mode="record") as cassette:
        asyncio.run(_cancel_soon(cassette))
        cassette.begin(REQUEST).record({"text": "answered"})
        assert cassette.stats.recorded == 0  # behind the cancelled one, in lookup order
    assert _kept(path) == [{"cancelled": _kept(path)[0]["cancelled"]}, {"text": "answered"}]


def test_an_async_recorded_function_the_program_cancels_replays_as_cancelled(
    tmp_path: Path,
) -> None:
    @recorded
    async def ask(question: str) -> str:
        await asyncio.sleep(30)
        return question

    async def program() -> str:
        try:
            return await asyncio.wait_for(ask("slow"), 0.3)
        except TimeoutError:
            return "timed out"

    path = tmp_path / "f.yaml"
    with use_cassette(path, mode="record"):
        assert asyncio.run(program()) == "timed out"
    with use_cassette(path, mode="replay") as cassette:
        started = time.monotonic()
        assert asyncio.run(program()) == "timed out"
        assert 0.25 <= time.monotonic() - started < 1.5
    assert cassette.stats.replayed == 1
