"""A LlamaIndex media block given by a local path is keyed by the file's bytes (key rules 3).

The model reads the file, not its name: a real LlamaIndex ``OpenAI`` client sends an
``ImageBlock(path=...)`` to the fake OpenAI server, and fresh processes replay that
recording for the same bytes at another path (a test's ``tmp_path`` is new every run) and
for the same bytes given inline, and miss for other bytes at the recorded path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.llms.openai")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from fake_openai_server import FakeOpenAI, closed_port_url

PROGRAM = Path(__file__).with_name("li_media_program.py")
#: Two 1x1 PNGs, one red, one green.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478"
    "da63f8cfc0f01f0005000201e5272ade0000000049454e44ae426082"
)
OTHER_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478"
    "da6360f8cff01f0003030201a3e6fb7d0000000049454e44ae426082"
)


def run(mode: str, cassette: Path, image: Path, *extra: str, url: str | None = None) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("CHAINCASSETTE_MODE", None)
    env["OPENAI_API_KEY"] = "sk-test-" + "x" * 32
    address = url or closed_port_url()  # replays: nothing listens
    done = subprocess.run(
        [sys.executable, str(PROGRAM), mode, str(cassette), address, str(image), *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def picture(folder: Path, data: bytes = PNG) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "picture.png"
    path.write_bytes(data)
    return path


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, Path, Any]:
    """(cassette, image, what the recording run printed): one call recorded live."""
    cassette, image = tmp_path / "media.yaml", picture(tmp_path / "first")
    with FakeOpenAI() as provider:
        result = run("record", cassette, image, url=provider.url)
    assert result["recorded"] == 1 and provider.calls == 1
    return cassette, image, result


def test_the_same_bytes_at_another_path_replay_the_recording(
    recorded: tuple[Path, Path, Any], tmp_path: Path
) -> None:
    cassette, _, first = recorded
    elsewhere = picture(tmp_path / "second")
    replayed = run("replay", cassette, elsewhere)
    assert replayed.get("miss") is None, replayed.get("message")
    assert replayed == {**first, "replayed": 1, "recorded": 0}
    inline = run("replay", cassette, elsewhere, "inline")  # the same bytes, given inline
    assert inline == replayed


def test_other_bytes_at_the_recorded_path_miss(recorded: tuple[Path, Path, Any]) -> None:
    cassette, image, _ = recorded
    image.write_bytes(OTHER_PNG)
    missed = run("replay", cassette, image)
    assert missed["miss"] == "changed", missed["message"]
    assert missed["replayed"] == 0
