"""The completion order of concurrent calls: what a recording stores, and the bound of a replay.

Calls go through the engine's own protocol (``Cassette.begin`` → ``Call``, ``call.turn()``
where a layer hands a hit back), from real threads and asyncio tasks; the framework-level
programs are in ``tests/langchain/test_replay_order.py`` and the LlamaIndex and SDK tests.
A wait that passed its bound is counted (``cassette.replay_order.given_up``), so each test
says whether the replay waited for a turn, skipped it, or gave up on it: never by a clock.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

import chaincassette
from chaincassette import Cassette, order, use_cassette
from chaincassette.order import RecordClock, parse

NAMES = ("a", "b", "c")


def request(name: str) -> dict[str, Any]:
    return {"kind": "call", "function": "ask", "args": {"name": name}}


def record(path: Path, begun: tuple[str, ...], completed: tuple[str, ...]) -> None:
    """Calls begun in one order and completed in another, all in flight together."""
    cassette = Cassette(path, mode="record")
    calls = {name: cassette.begin(request(name)) for name in begun}
    for name in completed:
        calls[name].record({"answer": name})
    cassette.save()


def orders(path: Path) -> dict[str, dict[str, Any]]:
    return {
        i.request["args"]["name"]: i.meta["order"]
        for i in Cassette(path, mode="replay").interactions
        if "order" in i.meta
    }


def hand_back(cassette: Cassette, name: str, seen: list[str]) -> None:
    call = cassette.begin(request(name))
    with call.turn():
        seen.append(call.response["answer"])


# -- what a recording stores ------------------------------------------------------------------


def test_calls_that_ran_alone_store_no_order(tmp_path: Path) -> None:
    path = tmp_path / "alone.yaml"
    cassette = Cassette(path, mode="record")
    for name in NAMES:
        cassette.begin(request(name)).record({"answer": name})
    cassette.save()
    assert orders(path) == {}
    assert "order" not in path.read_text()  # a sequential program's file stays as it was


def test_overlapping_calls_store_when_they_began_and_completed(tmp_path: Path) -> None:
    path = tmp_path / "overlap.yaml"
    record(path, begun=("c", "b", "a"), completed=("a", "b", "c"))
    found = orders(path)
    assert {o["recording"] for o in found.values()} == {found["a"]["recording"]}
    assert [found[n]["began"] for n in ("c", "b", "a")] == [1, 2, 3]
    assert [found[n]["done"] for n in ("a", "b", "c")] == [4, 5, 6]


def test_a_call_overlapping_a_failed_one_still_stores_its_order(tmp_path: Path) -> None:
    clock = RecordClock()
    first, second = clock.begin(), clock.begin()
    assert clock.end(first) is not None  # the other one was in flight
    assert clock.end(second) is not None  # one completed while it ran
    third = clock.begin()
    assert clock.end(third) is None  # alone again


def test_a_broken_order_is_no_order() -> None:
    good = {"order": {"recording": "ab12cd34", "began": 1, "done": 4}}
    assert parse(good) == ("ab12cd34", 1, 4)
    for broken in (
        {"order": "1-4"},
        {"order": {"recording": 7, "began": 1, "done": 4}},
        {"order": {"recording": "x", "began": True, "done": 4}},
        {"order": {"recording": "x", "began": 4, "done": 1}},
        {},
    ):
        assert parse(broken) is None


# -- replay: the recorded order ------------------------------------------------------------------


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """Begun c, b, a; completed a, b, c (the last begun completed first)."""
    path = tmp_path / "recorded.yaml"
    record(path, begun=("c", "b", "a"), completed=("a", "b", "c"))
    return path


def test_threads_get_their_answers_in_the_recorded_order(recorded: Path) -> None:
    for _ in range(10):
        cassette = Cassette(recorded, mode="replay")
        seen: list[str] = []
        threads = [
            threading.Thread(target=hand_back, args=(cassette, n, seen)) for n in ("c", "b", "a")
        ]
        for thread in threads:  # c begins first and would be handed back first
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert seen == ["a", "b", "c"]
        assert cassette.replay_order.given_up == 0


def test_tasks_get_their_answers_in_the_recorded_order(recorded: Path) -> None:
    async def ask(cassette: Cassette, name: str, seen: list[str]) -> str:
        call = cassette.begin(request(name))
        async with call.turn():
            seen.append(name)
        return str(call.response["answer"])

    async def main(cassette: Cassette) -> tuple[list[str], list[str]]:
        seen: list[str] = []
        answers = await asyncio.gather(*(ask(cassette, n, seen) for n in ("c", "b", "a")))
        return seen, list(answers)

    for _ in range(10):
        cassette = Cassette(recorded, mode="replay")
        assert asyncio.run(main(cassette)) == (["a", "b", "c"], ["c", "b", "a"])
        assert cassette.replay_order.given_up == 0


def test_a_predecessor_that_never_comes_is_given_up_once(recorded: Path) -> None:
    cassette = Cassette(recorded, mode="replay")
    seen: list[str] = []
    hand_back(cassette, "c", seen)  # waits for a and b to begin: the grace, then gives up
    assert cassette.replay_order.given_up == 2
    hand_back(cassette, "b", seen)  # a was given up: b does not wait for it again
    assert cassette.replay_order.given_up == 2
    hand_back(cassette, "a", seen)  # late, and served all the same
    assert seen == ["c", "b", "a"]
    assert cassette.stats.replayed == 3


def test_a_program_awaiting_in_another_order_finishes(recorded: Path) -> None:
    async def main(cassette: Cassette) -> list[str]:
        seen: list[str] = []
        for name in ("c", "b", "a"):  # one after another: c's predecessors come after it
            call = cassette.begin(request(name))
            async with call.turn():
                seen.append(call.response["answer"])
        return seen

    cassette = Cassette(recorded, mode="replay")
    assert asyncio.run(main(cassette)) == ["c", "b", "a"]
    assert cassette.replay_order.given_up == 2


def test_a_predecessor_begun_in_the_same_thread_is_never_waited_for(recorded: Path) -> None:
    cassette = Cassette(recorded, mode="replay")
    a = cassette.begin(request("a"))  # a stream this thread will read later, say
    b = cassette.begin(request("b"))
    with b.turn():  # waiting for a would wait for this very thread
        pass
    with a.turn():
        pass
    assert cassette.replay_order.given_up == 0


def test_a_sync_call_in_an_event_loop_waits_for_no_task_to_begin(recorded: Path) -> None:
    async def main(cassette: Cassette) -> None:
        b = cassette.begin(request("b"))
        with b.turn():  # it blocks the loop: a task that would begin a cannot run meanwhile
            pass
        a = cassette.begin(request("a"))
        async with a.turn():
            pass

    cassette = Cassette(recorded, mode="replay")
    asyncio.run(main(cassette))
    assert cassette.replay_order.given_up == 0


def test_a_predecessor_held_by_the_program_is_given_up_after_the_bound(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(order, "IN_FLIGHT_WAIT", 0.2)
    cassette = Cassette(recorded, mode="replay")
    began = threading.Event()
    b_done = threading.Event()
    seen: list[str] = []

    def holder() -> None:  # begins a, then hands it back only after b is answered
        call = cassette.begin(request("a"))
        began.set()
        b_done.wait(timeout=30)
        with call.turn():
            seen.append("a")

    thread = threading.Thread(target=holder)
    thread.start()
    assert began.wait(timeout=30)
    hand_back(cassette, "b", seen)  # would deadlock without the bound
    b_done.set()
    thread.join(timeout=30)
    assert seen == ["b", "a"]
    assert cassette.replay_order.given_up == 1


def test_a_cancelled_waiter_is_handed_back(recorded: Path) -> None:
    async def main(cassette: Cassette) -> list[str]:
        seen: list[str] = []
        b = cassette.begin(request("b"))
        waiting = asyncio.ensure_future(b.turn().__aenter__())
        await asyncio.sleep(0)
        waiting.cancel()  # b gave up on its turn: c must not wait for it
        with pytest.raises(asyncio.CancelledError):
            await waiting
        for name in ("a", "c"):
            call = cassette.begin(request(name))
            async with call.turn():
                seen.append(name)
        return seen

    cassette = Cassette(recorded, mode="replay")
    assert asyncio.run(main(cassette)) == ["a", "c"]
    assert cassette.replay_order.given_up == 0


def test_a_hit_its_layer_never_hands_back_frees_its_successors(recorded: Path) -> None:
    cassette = Cassette(recorded, mode="replay")
    seen: list[str] = []

    def drop_a() -> None:
        cassette.begin(request("a"))  # the call object goes; nothing handed it back

    for target in (drop_a, lambda: hand_back(cassette, "b", seen)):
        worker = threading.Thread(target=target)
        worker.start()
        worker.join(timeout=30)
    assert seen == ["b"] and cassette.replay_order.given_up == 0


def test_repeated_plays_keep_no_order(recorded: Path) -> None:
    cassette = Cassette(recorded, mode="replay", allow_playback_repeats=True)
    seen: list[str] = []
    for name in ("a", "b", "c", "c", "a"):
        hand_back(cassette, name, seen)
    assert seen == ["a", "b", "c", "c", "a"]
    assert cassette.replay_order.given_up == 0


def test_recorded_coroutines_replay_in_their_recorded_completion_order(tmp_path: Path) -> None:
    """``@recorded`` coroutines gathered: begun c, b, a, completed a, b, c (each sleeps for
    its own time); a replay runs none of them, and still hands them back a, b, c."""
    delays = {"c": 0.2, "b": 0.1, "a": 0.0}

    @chaincassette.recorded
    async def answer(name: str) -> str:
        await asyncio.sleep(delays[name])
        return name.upper()

    async def main() -> list[str]:
        finished: list[str] = []

        async def one(name: str) -> None:
            finished.append(await answer(name))

        await asyncio.gather(*(one(n) for n in ("c", "b", "a")))
        return finished

    path = tmp_path / "coroutines.yaml"
    with use_cassette(path, mode="record"):
        assert asyncio.run(main()) == ["A", "B", "C"]
    for _ in range(5):
        with use_cassette(path, mode="replay") as cassette:
            assert asyncio.run(main()) == ["A", "B", "C"]
        assert cassette.stats.replayed == 3 and cassette.replay_order.given_up == 0
