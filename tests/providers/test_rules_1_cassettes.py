"""Cassettes recorded by key rules 1 replay: every provider's real client, offline.

``rules_1/`` holds the provider matrix (``provider_program.py``: a two-tool agent over three
model turns and one stream, on each provider's real client) as chaincassette recorded it at
commit 9585c61, the last one before key rules had versions, against the fake server; and
``seen.txt``, what the program saw then (JSON, named ``.txt`` since the repository's scans
take every committed ``.json`` for a cassette). Its ChatOllama cassette is the one issue 27
found: ``model: chat-ollama``, ``params: {_type: chat-ollama}``, where key rules 2 key the
model and its parameters, so every ChatOllama request of this run misses by today's keys and
is answered by the rules that keyed the recording. Each cassette replays in a fresh process,
the clients pointed at a port that counts connection attempts, to exactly what was seen:
as committed, and after ``chaincassette upgrade``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from fakes.nowhere import DeadPort

from chaincassette import storage
from chaincassette.keyrules import KEY_RULES_VERSION

from .conftest import _nice
from .test_provider_matrix import LANGCHAIN, LLAMA_INDEX, PROGRAM

RULES_1 = Path(__file__).resolve().parent / "rules_1"
SEEN: dict[str, Any] = json.loads((RULES_1 / "seen.txt").read_text())


def replay(directory: Path, url: str) -> dict[str, Any]:
    """What the program sees replaying ``directory`` (LangChain and LlamaIndex, one after
    the other: two processes, never more than one at a time)."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("CHAINCASSETTE_MODE", None)
    seen: dict[str, Any] = {}
    for providers in (LANGCHAIN, LLAMA_INDEX):
        done = subprocess.run(
            [sys.executable, str(PROGRAM), "replay", str(directory), url, *providers],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
            preexec_fn=_nice,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        seen.update(json.loads(done.stdout))
    return seen


def test_the_fixtures_were_keyed_by_rules_1() -> None:
    assert sorted(SEEN) == sorted(LANGCHAIN + LLAMA_INDEX)
    assert all(isinstance(run, list) for run in SEEN.values())  # each recording run worked
    for provider in SEEN:
        text = (RULES_1 / f"{provider}.yaml").read_text()
        assert text.startswith("version: 2\nrecorded_with:")  # no key_rules: rules 1
        document = storage.read(RULES_1 / f"{provider}.yaml", "yaml")
        assert document is not None and document.key_rules == 1
    ollama = storage.read(RULES_1 / "ollama.yaml", "yaml")
    assert ollama is not None
    assert {i["request"]["model"] for i in ollama.interactions} == {"chat-ollama"}


def test_rules_1_cassettes_replay_as_committed_and_upgraded(
    tmp_path: Path, heavy_turn: Path
) -> None:
    committed, upgraded = tmp_path / "committed", tmp_path / "upgraded"
    shutil.copytree(RULES_1, committed)
    shutil.copytree(RULES_1, upgraded)
    done = subprocess.run(
        [sys.executable, "-m", "chaincassette", "upgrade", str(upgraded)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert f"{len(SEEN)} cassettes upgraded" in done.stdout
    # ChatOllama's requests lack the model and its parameters: they stay on rules 1
    assert f"ollama.yaml (version 2 → 2, key rules 1 → {KEY_RULES_VERSION})" in done.stdout
    assert "its request was built from LangChain's llm_string alone" in done.stdout
    ollama = storage.read(upgraded / "ollama.yaml", "yaml")
    assert ollama is not None
    assert {storage.interaction_rules(i) for i in ollama.interactions} == {1}
    with DeadPort() as dead:
        as_committed = replay(committed, dead.url)
        after_upgrade = replay(upgraded, dead.url)
        assert dead.accepted == 0
    for provider, seen in SEEN.items():
        assert as_committed[provider] == seen, provider
        assert after_upgrade[provider] == seen, provider


def test_verify_passes_the_fixtures_and_blames_no_hand_edit() -> None:
    """Issue 27: after the key rules changed, ``verify`` called last week's cassettes edited
    by hand. Keyed by older rules is a warning that names them and what fixes it."""
    done = subprocess.run(
        [sys.executable, "-m", "chaincassette", "verify", str(RULES_1)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout
    assert "by hand" not in done.stdout and "edited" not in done.stdout
    assert f"{len(SEEN)} cassettes checked: 0 problems, {len(SEEN)} warnings" in done.stdout
    older = f"keyed by older key rules than this chaincassette's ({KEY_RULES_VERSION})"
    assert done.stdout.count(older) == len(SEEN)
