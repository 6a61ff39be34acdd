"""Never live in replay, from any thread: calls from threads that lost the context (plain
``threading.Thread``, ``ThreadPoolExecutor`` without ``copy_context``, a framework first
imported inside a thread) are served by the block open in the process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fake_provider import PROVIDER_CALLS, FakeProviderChat

from chaincassette import CassetteMiss, use_cassette

CALLS = 1_000
THREADS = 16
PROMPTS = [f"question {i}" for i in range(50)]


def prompt_of(call: int) -> str:
    return PROMPTS[call % len(PROMPTS)]


def test_plain_threads_replay_a_thousand_calls_without_a_live_one(tmp_path: Path) -> None:
    path = tmp_path / "threads.json"
    model = FakeProviderChat()
    with use_cassette(path, mode="record") as cassette:
        recorded = [model.invoke(prompt_of(i)).content for i in range(CALLS)]
    assert cassette.stats.recorded == CALLS and len(PROVIDER_CALLS) == CALLS
    answers: dict[str, set[str]] = {}
    for i, text in enumerate(recorded):
        answers.setdefault(prompt_of(i), set()).add(str(text))
    PROVIDER_CALLS.clear()

    got: list[tuple[str, str]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker(index: int) -> None:
        start.wait()
        for call in range(index, CALLS, THREADS):  # 1,000 calls in all, spread over threads
            try:
                text = str(model.invoke(prompt_of(call)).content)
            except BaseException as error:
                with lock:
                    errors.append(error)
                continue
            with lock:
                got.append((prompt_of(call), text))

    with use_cassette(path, mode="replay") as cassette:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert len(got) == CALLS and PROVIDER_CALLS == []
    assert cassette.stats.replayed == CALLS and cassette.stats.missed == 0
    assert all(text in answers[prompt] for prompt, text in got)  # each got a recording of its own


def test_a_pool_without_context_misses_instead_of_going_live(tmp_path: Path) -> None:
    path = tmp_path / "pool.yaml"
    model = FakeProviderChat()
    with use_cassette(path, mode="record"):
        model.invoke("recorded")
    PROVIDER_CALLS.clear()
    with use_cassette(path, mode="replay"), ThreadPoolExecutor(4) as pool:
        assert pool.submit(model.invoke, "recorded").result().content
        with pytest.raises(CassetteMiss, match="no recording matches"):
            pool.submit(model.invoke, "never recorded").result()
    assert PROVIDER_CALLS == []


def test_a_thread_cannot_be_attributed_when_blocks_are_open_in_several_threads(
    tmp_path: Path,
) -> None:
    model = FakeProviderChat()
    opened, release = threading.Barrier(3), threading.Event()

    def hold(name: str) -> None:
        with use_cassette(tmp_path / f"{name}.yaml", mode="record"):
            opened.wait()
            release.wait(30)

    holders = [threading.Thread(target=hold, args=(n,)) for n in ("a", "b")]
    for holder in holders:
        holder.start()
    opened.wait()
    outcome: list[BaseException] = []
    stray = threading.Thread(target=lambda: _capture(outcome, model))
    stray.start()
    stray.join()
    release.set()
    for holder in holders:
        holder.join()
    assert len(outcome) == 1 and isinstance(outcome[0], CassetteMiss)
    assert "cannot be attributed" in str(outcome[0]) and PROVIDER_CALLS == []


def _capture(outcome: list[BaseException], model: FakeProviderChat) -> None:
    try:
        model.invoke("from a stray thread")
    except BaseException as error:
        outcome.append(error)


PROGRAM = """
import sys, threading
sys.path.insert(0, {tests!r})
from chaincassette import use_cassette

def work(out):
    from fake_provider import PROVIDER_CALLS, FakeProviderChat  # LangChain first imported here
    out.append(FakeProviderChat().invoke("imported in a thread").content)
    out.append(len(PROVIDER_CALLS))

with use_cassette({path!r}, mode=sys.argv[1]) as cassette:
    assert "langchain_core" not in sys.modules
    out = []
    thread = threading.Thread(target=work, args=(out,))
    thread.start()
    thread.join()
print(out[0], out[1], cassette.stats.recorded, cassette.stats.replayed)
"""


def test_a_framework_first_imported_inside_a_thread_replays(tmp_path: Path) -> None:
    script = tmp_path / "program.py"
    script.write_text(
        PROGRAM.format(tests=str(Path(__file__).parent), path=str(tmp_path / "c.yaml"))
    )
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}

    def run(mode: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, str(script), mode],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    recorded = run("record")
    assert recorded[-3:] == ["1", "1", "0"]
    for _ in range(2):
        replayed = run("replay")
        assert replayed[:-3] == recorded[:-3]  # the same answer, in a fresh process
        assert replayed[-3:] == ["0", "0", "1"]  # no provider call, one replayed
