"""A model that repeats what the prompt sent (a session token that reads as random, a key
of a known format): recorded in one fresh process against the fake provider, the secret
is nowhere on disk (cassette, journal, state folder), the recording run got the masked
answer, and two replays in fresh processes reproduce it without reaching the provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.scripts import echo
from fakes.wire import FakeServer
from session_tokens import session_token
from state_files import files_under

HERE = Path(__file__).parent


@pytest.fixture
def echoing() -> Iterator[FakeServer]:
    """The fake provider with the model that answers "Echo: <what the user said>"."""
    with FakeServer(echo) as server:
        yield server


def run(scenario: str, cassette: Path, mode: str, url: str, secrets: list[str]) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINCASSETTE")}
    env.pop("CI", None)
    env.pop("OPENAI_API_KEY", None)
    env["CHAINCASSETTE_STATE_DIR"] = str(cassette.parent / "state")
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "echo_programs.py"),
            scenario,
            str(cassette),
            mode,
            url,
            *secrets,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SecretMaskedWarning" in done.stderr or mode == "replay", done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("scenario", ["langchain", "llama_index"])
def test_a_secret_the_model_repeats_is_masked_everywhere_and_replays(
    tmp_path: Path, echoing: FakeServer, scenario: str
) -> None:
    token = session_token()
    key = "sk-proj-" + session_token() + "7"  # the key rules mask it in the request
    cassette = tmp_path / "echo.yaml"
    recorded = run(scenario, cassette, "record", echoing.url, [token, key])
    said = json.dumps(recorded)
    assert token not in said and key not in said
    assert "<redacted:random-token>" in recorded["invoke"]
    assert "<redacted:openai-key>" in recorded["invoke"]
    assert "<redacted:random-token>" in "".join(recorded["stream"])
    files = dict(files_under(tmp_path))
    assert any(p.suffix == ".journal" for p in files), sorted(files)  # the run's journal, read
    for path, blob in files.items():
        assert token.encode() not in blob and key.encode() not in blob, path
    before = echoing.connections
    for _ in range(2):
        assert run(scenario, cassette, "replay", echoing.url, [token, key]) == recorded
    assert echoing.connections == before
