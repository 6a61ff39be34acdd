"""The provider matrix: each real client package, recorded, replayed on a dead port, re-recorded.

For every provider (``provider_program.py`` lists them) a two-tool agent runs three model
turns, the first with two parallel tool calls, then one streamed answer, against the
fake server (``tests/fakes/wire.py``, fresh random ids, signatures, timestamps, usage):

1. recorded into one directory;
2. recorded again into another, against a second server (all ids new);
3. replayed from the first in a fresh process, the client pointed at a port that only
   counts connection attempts.

Each row then holds when the replay saw exactly what the recording saw (messages and
streamed chunks), nothing connected, and both recordings have the same keys. The runs are
six processes in all (LangChain and LlamaIndex, two at a time × record, re-record,
replay), shared by the tests of this module, even across xdist workers.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes.nowhere import DeadPort
from fakes.scripts import weather_tour
from fakes.wire import FakeServer

from chaincassette import key_of, storage

from .conftest import _nice, session_dir

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "provider_program.py"
LANGCHAIN = [
    "openai",
    "openai_responses",
    "azure",
    "anthropic",
    "gemini",
    "mistral",
    "ollama",
    "bedrock",
]
LLAMA_INDEX = ["li_openai", "li_anthropic", "li_gemini", "li_ollama"]
#: Ollama sends no ids, and LlamaIndex streams (which FunctionAgent uses for every turn) are
#: stored without the raw provider chunks that carried its timestamps: nothing random is kept.
NOTHING_RANDOM_STORED = {"li_ollama"}
#: What each provider's recording must hold, to show the scenario was really exercised.
EVIDENCE = {
    "openai_responses": ["rs_", "encrypted_content", "msg_"],
    "anthropic": ["signature", "toolu_01"],
    "li_anthropic": ["signature", "toolu_01"],
    "gemini": ["__gemini_function_call_thought_signatures__"],
    "azure": ["gpt-4o-prod"],
}
TIMEOUT = 900


def _run(mode: str, directory: Path, url: str, providers: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("CHAINCASSETTE_MODE", None)
    done = subprocess.run(
        [sys.executable, str(PROGRAM), mode, str(directory), url, *providers],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
        preexec_fn=_nice,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def _both(mode: str, directory: Path, url: str) -> dict[str, Any]:
    with ThreadPoolExecutor(2) as pool:
        parts = pool.map(lambda ps: _run(mode, directory, url, ps), [LANGCHAIN, LLAMA_INDEX])
        return {k: v for part in parts for k, v in part.items()}


def _compute(root: Path) -> dict[str, Any]:
    first, second = root / "first", root / "second"
    first.mkdir()
    second.mkdir()
    # two processes at a time at most: the suite runs beside other workers on two cores
    with FakeServer(weather_tour) as one:
        recorded = _both("record", first, one.base)
        live_calls = one.requests
    with FakeServer(weather_tour) as two:
        rerecorded = _both("record", second, two.base)
    with DeadPort() as dead:
        replayed = _both("replay", first, dead.url)
        accepted = dead.accepted
    return {
        "first": str(first),
        "second": str(second),
        "recorded": recorded,
        "rerecorded": rerecorded,
        "replayed": replayed,
        "accepted": accepted,
        "live_calls": live_calls,
    }


@pytest.fixture(scope="session")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Computed once per test session: xdist workers share it through a locked file."""
    shared = session_dir(tmp_path_factory)
    result = shared / "matrix.json"
    with open(shared / "heavy.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result.exists():
            run_dir = shared / f"matrix-{os.getpid()}"
            run_dir.mkdir()
            result.write_text(json.dumps(_compute(run_dir)))
        data: dict[str, Any] = json.loads(result.read_text())
    return data


def _interactions(path: Path) -> list[dict[str, Any]]:
    doc = yaml.safe_load(path.read_text())
    items: list[dict[str, Any]] = doc["interactions"]
    return items


@pytest.mark.parametrize("provider", LANGCHAIN + LLAMA_INDEX)
def test_provider_records_replays_offline_and_rerecords_to_the_same_keys(
    matrix: dict[str, Any], provider: str
) -> None:
    recorded = matrix["recorded"][provider]
    assert isinstance(recorded, list), recorded  # the live run itself worked
    calls = [line for line in recorded if line.get("calls")]
    calls += [line for line in recorded if "call" in line]
    assert sum(len(c.get("calls", [1])) for c in calls) == 3  # 2 parallel + 1
    assert any("chunk" in line for line in recorded) or provider in ("openai_responses", "bedrock")

    # replay in a fresh process, client pointed at a dead port: same messages, same chunks
    assert matrix["replayed"][provider] == recorded
    assert matrix["accepted"] == 0

    # re-recorded against a server minting new ids: every key the same, responses not
    first = Path(matrix["first"]) / f"{provider}.yaml"
    second = Path(matrix["second"]) / f"{provider}.yaml"
    one, two = _interactions(first), _interactions(second)
    assert len(one) >= 3
    assert [i["key"] for i in one] == [i["key"] for i in two]
    if provider not in NOTHING_RANDOM_STORED:
        assert [i["response"] for i in one] != [i["response"] for i in two]
    else:  # byte-stable: a re-recording of the same answers is the same file
        assert [i["response"] for i in one] == [i["response"] for i in two]
    text = first.read_text()
    for evidence in EVIDENCE.get(provider, []):
        assert evidence in text, f"{provider}: the recording never held {evidence!r}"


def test_every_provider_was_called_live_only_while_recording(matrix: dict[str, Any]) -> None:
    # 3 agent turns + 1 stream per provider (no stream for the two noted in the program)
    expected = 4 * len(LANGCHAIN + LLAMA_INDEX) - 2
    assert matrix["live_calls"] == expected


def test_show_key_names_what_a_provider_recording_leaves_out(matrix: dict[str, Any]) -> None:
    path = Path(matrix["first"]) / "anthropic.yaml"
    shown = subprocess.run(
        [sys.executable, "-m", "chaincassette", "show", str(path), "--key", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "in the key (what the model reads):" in out
    assert ".signature: opaque provider token" in out
    assert "key check: the stored key is this view's hash" in out


def test_a_re_record_writes_the_keys_of_key_rules_1_where_they_did_not_change(
    matrix: dict[str, Any],
) -> None:
    """The same programs recorded by chaincassette before key rules had versions
    (``rules_1/``, commit 9585c61) and now. ChatOllama's requests now hold the model and its
    temperature (issue 27): other requests, other keys. ChatMistralAI's requests are the
    same, but its default ``top_p: 1`` is keyed as ``1.0`` now (0 and 0.0 of a real-valued
    parameter key alike): other keys, which ``chaincassette upgrade`` computes from the
    stored requests. Every other provider: the same keys, turn for turn."""
    rules_1 = HERE / "rules_1"
    for provider in LANGCHAIN + LLAMA_INDEX:
        before = storage.read(rules_1 / f"{provider}.yaml", "yaml")
        now = storage.read(Path(matrix["first"]) / f"{provider}.yaml", "yaml")
        assert before is not None and now is not None
        keys = [i["key"] for i in now.interactions]
        assert ([i["key"] for i in before.interactions] == keys) is (
            provider not in ("ollama", "mistral")
        ), provider
        if provider != "ollama":  # rules 2 key the stored requests so: upgrade writes these
            assert [key_of(i["request"]) for i in before.interactions] == keys
    ollama = storage.read(Path(matrix["first"]) / "ollama.yaml", "yaml")
    assert ollama is not None
    assert {i["request"]["model"] for i in ollama.interactions} == {"llama3.2"}
    assert {i["request"]["params"]["temperature"] for i in ollama.interactions} == {0.0}
    mistral = storage.read(rules_1 / "mistral.yaml", "yaml")
    assert mistral is not None
    assert {i["request"]["params"]["top_p"] for i in mistral.interactions} == {1}
