"""A call the program itself cancelled while recording replays as it was recorded.

Real ``ChatOpenAI`` (in a block, and under a global ``CassetteCache``), LangGraph,
LlamaIndex ``OpenAI`` (in a block, and wrapped in a ``CassetteLLM``) and OpenAI SDK clients
against the fake server, which answers the slow question 10 s late (``STALL_ALWAYS``): the
programs' own timers (``asyncio.wait_for``, ``asyncio.timeout``, a ``TaskGroup`` whose other
call fails, LangGraph's ``step_timeout``) cancel it after 0.5 s. Each is recorded once, then
replayed twice in fresh processes with the server gone, every socket blocked and no key:
the same timeout or fallback, as late as when recorded (``cancel_programs.py``). Also: a
replay in which nothing cancels the call gets a miss that says so, and Ctrl-C during a
recording keeps no cancelled interaction.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.nowhere import closed_port_url
from fakes.scripts import echo
from fakes.wire import FakeServer
from langchain_openai import ChatOpenAI

from chaincassette import Cassette, CassetteMiss, cli, use_cassette
from chaincassette.cancellation import bound, recorded_ms, stored

SCRIPT = Path(__file__).with_name("cancel_programs.py")
PROGRAMS = ("lc_wait_for", "lc_timeout", "lc_task_group", "lg_step_timeout", "li_wait_for")
PROGRAMS += ("sdk_wait_for", "li_wrapped", "lc_global_cache")
SLOW = "STALL_ALWAYS: a question the model takes too long to answer"
TIMEOUT = 0.5

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="TaskGroup, asyncio.timeout")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("CHAINCASSETTE_MODE", None)
    return {**env, "PYTHONWARNINGS": "ignore", **extra}


def _run(directory: Path, mode: str, **extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(directory), mode],
        env=_env(**extra),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = tmp_path_factory.mktemp("cancelled")
    with FakeServer(echo) as server:
        recorded = _run(directory, "record", OPENAI_BASE_URL=server.url, OPENAI_API_KEY="sk-test")
    replays = [_run(directory, "replay", OFFLINE="1") for _ in range(2)]
    return {"dir": directory, "recorded": recorded, "replays": replays}


def test_a_cancelled_call_is_recorded_with_how_long_it_ran(runs: dict[str, Any]) -> None:
    for name in PROGRAMS:
        report = runs["recorded"][name]
        assert len(report["cancelled"]) == 1, name
        (cancelled,) = report["cancelled"]
        low = 0 if name == "lc_task_group" else TIMEOUT * 1000 * 0.9  # its sibling's 429
        assert low <= cancelled["duration_ms"] < 5000, name
    recorded = runs["recorded"]
    assert recorded["lc_wait_for"]["result"] == {
        "timed_out": True,
        "fallback": "Echo: the fallback question",
    }
    assert recorded["li_wait_for"]["result"] == recorded["lc_wait_for"]["result"]
    assert recorded["li_wrapped"]["result"] == recorded["lc_wait_for"]["result"]
    assert recorded["lc_global_cache"]["result"] == recorded["lc_wait_for"]["result"]
    assert recorded["lc_timeout"]["result"] == {"raised": "TimeoutError"}
    assert recorded["sdk_wait_for"]["result"] == {"timed_out": True}
    assert recorded["lg_step_timeout"]["result"] == {"raised": "TimeoutError"}
    assert [f.split(":")[0] for f in recorded["lc_task_group"]["result"]["failed"]] == [
        "OpenAIRateLimitError"
    ]


@pytest.mark.parametrize("name", PROGRAMS)
def test_each_replay_offline_gets_what_the_recording_got(runs: dict[str, Any], name: str) -> None:
    recorded = runs["recorded"][name]
    for replay in runs["replays"]:
        assert replay["connections"] == 0
        report = replay[name]
        assert report["result"] == recorded["result"]
        assert report["interactions"] == recorded["interactions"]  # nothing new recorded
        assert report["cancelled"] == recorded["cancelled"]
        assert report["trace_divergence"] is None  # the run took the recorded path
        # the program's own timer fired: as late as when recorded, well before the bound
        assert report["slow_seconds"] < bound(recorded["cancelled"][0]["duration_ms"])
        if name != "lc_task_group":
            assert report["slow_seconds"] >= TIMEOUT * 0.9


def _copy(runs: dict[str, Any], name: str, target: Path) -> Path:
    path = target / f"{name}.yaml"
    shutil.copy(runs["dir"] / f"{name}.yaml", path)
    return path


def test_a_replay_that_nothing_cancels_gets_a_miss_that_says_so(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    path = _copy(runs, "lc_wait_for", tmp_path)
    (duration,) = [
        recorded_ms(i.response) for i in Cassette(path).interactions if "cancelled" in i.response
    ]
    assert duration is not None

    async def no_timeout() -> Any:
        return await ChatOpenAI(model="gpt-4o-mini", base_url=closed_port_url()).ainvoke(SLOW)

    with use_cassette(path, mode="replay") as cassette:
        started = time.monotonic()
        with pytest.raises(CassetteMiss) as raised:
            asyncio.run(no_timeout())
        waited = time.monotonic() - started
    assert bound(duration) <= waited < bound(duration) + 3
    message = str(raised.value)
    assert str(path) in message
    assert f"cancelled by the program after {duration:.0f} ms when it was recorded" in message
    assert "nothing cancelled it in this replay" in message
    assert raised.value.cause == "not_cancelled"
    assert cassette.misses == [raised.value]  # a test runner sees it, even if it is caught


def test_a_sync_call_of_a_recorded_cancellation_gets_the_miss_at_once(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    path = _copy(runs, "lc_wait_for", tmp_path)
    with use_cassette(path, mode="replay"):
        model = ChatOpenAI(model="gpt-4o-mini", base_url=closed_port_url())
        started = time.monotonic()
        with pytest.raises(CassetteMiss, match="a sync call cannot be cancelled"):
            model.invoke(SLOW)
        assert time.monotonic() - started < 1


def test_new_episodes_replays_the_cancellation_and_records_nothing(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    path = _copy(runs, "lc_timeout", tmp_path)
    before = path.read_bytes()

    async def program() -> str:
        try:
            async with asyncio.timeout(TIMEOUT):
                await ChatOpenAI(model="gpt-4o-mini", base_url=closed_port_url()).ainvoke(SLOW)
        except TimeoutError as error:
            return type(error).__name__
        return "answered"

    with use_cassette(path, mode="new_episodes") as cassette:
        assert asyncio.run(program()) == "TimeoutError"
    assert cassette.stats.replayed == 1
    assert cassette.stats.recorded == 0
    assert path.read_bytes() == before


@pytest.mark.parametrize("block", ["outside", "inside", "none"])
def test_ctrl_c_during_a_recording_keeps_no_cancelled_interaction(
    tmp_path: Path, block: str
) -> None:
    """Ctrl-C while the slow call waits: under ``asyncio.run`` it cancels the main task
    (so the call sees a ``CancelledError``), and the run ends by ``KeyboardInterrupt``."""
    with FakeServer(echo) as server:
        env = _env(OPENAI_BASE_URL=server.url, OPENAI_API_KEY="sk-test", BLOCK=block)
        process = subprocess.Popen(
            [sys.executable, str(SCRIPT), str(tmp_path), "record", "interrupted"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        assert process.stdout.readline() == "asked\n"
        for _ in range(1000):  # the slow request reached the server: the call waits for it
            if server.requests >= 2:
                break
            time.sleep(0.01)
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "KeyboardInterrupt" in err
    responses = [i.response for i in Cassette(tmp_path / "interrupted.yaml").interactions]
    assert len(responses) == 1  # the quick question, answered before Ctrl-C
    assert "cancelled" not in responses[0]


def test_the_stored_form_of_a_cancellation() -> None:
    assert stored(497.74) == {"cancelled": {"duration_ms": 497.7}}
    assert recorded_ms(stored(12.0)) == 12.0
    assert recorded_ms({"cancelled": {"duration_ms": "soon"}}) == 0.0  # hand-broken: no wait
    assert recorded_ms({"cancelled": True}) == 0.0
    assert recorded_ms({"error": {"type": "x"}}) is None
    assert recorded_ms({"cancelled": {}, "other": 1}) is None
    assert recorded_ms(["cancelled"]) is None
    assert bound(500.0) == pytest.approx(2.0)


def test_review_commands_say_a_call_was_cancelled(
    runs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _copy(runs, "lc_timeout", tmp_path)
    assert cli.main(["show", str(path)]) == 0
    assert "cancelled by the program after" in capsys.readouterr().out
    assert cli.main(["verify", str(path)]) == 0
    assert cli.main(["ls", str(tmp_path)]) == 0
    assert "unknown" not in capsys.readouterr().out  # no answer, so no usage to miss
