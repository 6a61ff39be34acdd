"""Matching never depends on call order: gather, threads and processes replay correctly."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from chaincassette import Cassette, recorded, use_cassette
from chaincassette.filelock import FileLock


@recorded(name="ask")
async def ask(question: str) -> dict[str, str]:
    await asyncio.sleep(random.random() / 1000)
    return {"answer": f"{question} -> {random.random()}"}


@recorded(name="compute")
def compute(n: int) -> int:
    return n * 1000 + random.randint(0, 999)  # a live answer differs every run


def test_twenty_gathered_calls_replay_correctly(tmp_path: Path) -> None:
    path = tmp_path / "gather.yaml"
    questions = [f"q{i % 15}" for i in range(20)]  # some identical requests, several occurrences

    async def run() -> list[dict[str, str]]:
        return list(await asyncio.gather(*(ask(q) for q in questions)))

    with use_cassette(path, mode="record"):
        recorded_answers = asyncio.run(run())
    by_question: dict[str, list[str]] = {}
    for q, a in zip(questions, recorded_answers, strict=True):
        by_question.setdefault(q, []).append(a["answer"])
    for _ in range(5):
        with use_cassette(path) as cassette:
            replayed = asyncio.run(run())
            assert cassette.stats.replayed == 20 and cassette.stats.unused == 0
        assert {a["answer"] for a in replayed} == {a["answer"] for a in recorded_answers}
        for q, a in zip(questions, replayed, strict=True):
            assert a["answer"] in by_question[q]


def test_eight_threads_replay_correctly(tmp_path: Path) -> None:
    path = tmp_path / "threads.yaml"
    with use_cassette(path, mode="record"):
        expected = {n: compute(n) for n in range(8)}
    cassette = Cassette(path)
    results: dict[int, int] = {}
    barrier = threading.Barrier(8)

    def worker(n: int) -> None:
        barrier.wait()
        results[n] = cassette.begin(
            {"kind": "call", "function": "compute", "args": {"n": n}}
        ).answer(lambda: -1)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == expected
    assert cassette.stats.replayed == 8


RECORDER = textwrap.dedent(
    """
    import sys
    from chaincassette import Cassette
    path, worker, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    cassette = Cassette(path, mode=mode)  # one object saving many times, as a real run does
    for i in range(10):
        cassette.begin({"kind": "call", "worker": worker, "i": i}).answer(lambda: f"{worker}-{i}")
        cassette.save()
    """
)


def test_four_processes_recording_into_one_cassette_lose_nothing(tmp_path: Path) -> None:
    mode = "new_episodes"
    path = tmp_path / "shared.yaml"
    stale = Cassette(path, mode="record")
    stale.begin({"kind": "call", "worker": "old"}).answer(lambda: "recorded by an earlier run")
    stale.save()
    procs = [
        subprocess.Popen([sys.executable, "-c", RECORDER, str(path), f"w{w}", mode])
        for w in range(4)
    ]
    assert [p.wait() for p in procs] == [0, 0, 0, 0]
    got = sorted(i.response for i in Cassette(path).interactions)
    expected = [f"w{w}-{i}" for w in range(4) for i in range(10)]
    assert got == sorted([*expected, "recorded by an earlier run"])
    assert [p.name for p in tmp_path.iterdir()] == ["shared.yaml"]  # no lock or temp file


def test_threads_saving_sibling_cassettes_share_the_folder_lock(tmp_path: Path) -> None:
    """One lock per folder, reentrant in a thread and shared by threads: no thread waits
    for a lock its own process holds, and every save lands."""
    barrier = threading.Barrier(6)

    def worker(n: int) -> None:
        cassette = Cassette(tmp_path / f"c{n % 3}.yaml", mode="new_episodes")
        barrier.wait()
        for i in range(5):
            cassette.begin({"kind": "call", "n": n, "i": i}).answer(lambda i=i: f"{n}-{i}")
            cassette.save()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    for k in range(3):
        got = sorted(i.response for i in Cassette(tmp_path / f"c{k}.yaml").interactions)
        assert got == sorted(f"{n}-{i}" for n in (k, k + 3) for i in range(5))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c0.yaml", "c1.yaml", "c2.yaml"]
    with FileLock(tmp_path / "c0.yaml"), FileLock(tmp_path / "c1.yaml"):
        pass  # nested locks of one folder in one thread do not wait for each other


REPLAYER = textwrap.dedent(
    """
    import json, sys
    from chaincassette import Cassette, use_cassette, recorded
    calls = []
    @recorded(name="model")
    def model(prompt, temperature=0.0, tools=()):
        calls.append(prompt)
        import random, uuid
        return {"id": str(uuid.uuid4()), "text": prompt[::-1], "seed": random.random(),
                "usage": {"total_tokens": len(prompt)}}
    with use_cassette(sys.argv[1]) as cassette:
        out = [model(p, temperature=0.2, tools=[{"name": "t", "schema": {"b": 1, "a": 2}}])
               for p in ["alpha", "beta", "alpha"]]
    print(json.dumps({"out": out, "calls": len(calls), "stats": cassette.stats.__dict__}))
    """
)


def test_record_then_replay_in_fresh_processes_with_different_hash_seeds(tmp_path: Path) -> None:
    path = tmp_path / "fresh.yaml"
    results = []
    written = b""
    for seed, mode in [("1", "record"), ("2", "replay"), ("3", "replay"), ("4", "replay")]:
        env = {**os.environ, "PYTHONHASHSEED": seed, "CHAINCASSETTE_MODE": mode}
        done = subprocess.run(
            [sys.executable, "-c", REPLAYER, str(path)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        results.append(json.loads(done.stdout))
        written = written or path.read_bytes()
    recorded_run, *replays = results
    assert recorded_run["calls"] == 3
    for replay in replays:
        assert replay["out"] == recorded_run["out"]
        assert replay["calls"] == 0
        assert replay["stats"]["replayed"] == 3 and replay["stats"]["missed"] == 0
    assert path.read_bytes() == written  # replays never rewrite the cassette
