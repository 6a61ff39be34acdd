"""A LlamaIndex media block given by a local path is keyed by the file's bytes (key rules 3).

The model reads the file, not its name: a real LlamaIndex ``OpenAI`` client sends an
``ImageBlock(path=...)`` to the fake OpenAI server, and fresh processes replay that
recording for the same bytes at another path (a test's ``tmp_path`` is new every run) and
for the same bytes given inline, and miss for other bytes at the recorded path. A cassette
chaincassette wrote with key rules 2 (``rules_2/``, keyed by the path) replays as it was
keyed, says why the same file elsewhere misses, keeps rules 2 through ``upgrade`` and keys
its new recordings by the file's bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.llms.openai")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from cli_process import chaincassette
from fakes.nowhere import closed_port_url
from fakes.scripts import forecast
from fakes.wire import FakeServer

from chaincassette import storage
from chaincassette.keyrules import KEY_RULES_VERSION

PROGRAM = Path(__file__).with_name("li_media_program.py")
#: Recorded by chaincassette with key rules 2 (``picture.png``, relative, holding ``PNG``).
RULES_2 = Path(__file__).with_name("rules_2") / "li_image_path.yaml"
#: Two 1x1 PNGs, one red, one green.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478"
    "da63f8cfc0f01f0005000201e5272ade0000000049454e44ae426082"
)
OTHER_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478"
    "da6360f8cff01f0003030201a3e6fb7d0000000049454e44ae426082"
)


def run(
    mode: str,
    cassette: Path,
    image: Path,
    *extra: str,
    url: str | None = None,
    cwd: Path | None = None,
) -> Any:
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
        cwd=cwd,
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
    with FakeServer(forecast) as provider:
        result = run("record", cassette, image, url=provider.url)
    assert result["recorded"] == 1 and provider.requests == 1
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


def test_show_key_of_a_recording_reads_no_file(recorded: tuple[Path, Path, Any]) -> None:
    """The hash was stored when the request was built: the key is shown, and checked, with
    the file gone."""
    cassette, image, _ = recorded
    image.unlink()
    shown = chaincassette("show", str(cassette), "--key", "0", cwd=cassette.parent)
    assert shown.returncode == 0, shown.stderr
    assert "key check: the stored key is this view's hash" in shown.stdout
    assert '"content_hash": "sha256:' + hashlib.sha256(PNG).hexdigest() in shown.stdout


@pytest.fixture
def rules_2(tmp_path: Path) -> Path:
    """A copy of the rules-2 cassette, beside the image it names (``picture.png``)."""
    cassette = tmp_path / RULES_2.name
    shutil.copyfile(RULES_2, cassette)
    picture(tmp_path)
    return cassette


def test_a_cassette_of_key_rules_2_replays_by_the_path_it_keyed(rules_2: Path) -> None:
    committed = rules_2.read_bytes()
    replayed = run("replay", rules_2, Path("picture.png"), cwd=rules_2.parent)
    assert replayed.get("miss") is None, replayed.get("message")
    assert replayed["replayed"] == 1 and "You asked" in replayed["content"]
    assert rules_2.read_bytes() == committed


def test_a_cassette_of_key_rules_2_says_why_the_same_file_elsewhere_misses(rules_2: Path) -> None:
    picture(rules_2.parent / "elsewhere")
    missed = run("replay", rules_2, Path("elsewhere/picture.png"), cwd=rules_2.parent)
    text = missed["message"]
    assert missed["miss"] == "changed", text
    assert "that recording was keyed by key rules 2 (this chaincassette keys by key rules 3)" in (
        text
    )
    assert "key rules 2 keyed the local file picture.png by its path" in text
    assert "key rules 3 key it by its bytes: re-record this call" in text


def test_upgrade_keeps_key_rules_2_for_a_file_keyed_by_its_path(rules_2: Path) -> None:
    done = chaincassette("upgrade", str(rules_2), cwd=rules_2.parent)
    assert done.returncode == 0, done.stderr
    assert "interaction 0 keeps key rules 2 (it replays by them): it sends a local file" in (
        done.stdout
    )
    document = storage.read(rules_2, "yaml")
    assert document is not None and document.key_rules == KEY_RULES_VERSION
    assert [storage.interaction_rules(i) for i in document.interactions] == [2]
    replayed = run("replay", rules_2, Path("picture.png"), cwd=rules_2.parent)
    assert replayed.get("miss") is None, replayed.get("message")


def test_new_recordings_in_a_cassette_of_key_rules_2_are_keyed_by_the_file(
    rules_2: Path,
) -> None:
    other = picture(rules_2.parent / "other", OTHER_PNG)
    with FakeServer(forecast) as provider:
        added = run("new_episodes", rules_2, other, url=provider.url, cwd=rules_2.parent)
    assert added["recorded"] == 1
    document = storage.read(rules_2, "yaml")
    assert document is not None
    assert [storage.interaction_rules(i) for i in document.interactions] == [2, KEY_RULES_VERSION]
    moved = picture(rules_2.parent / "moved", OTHER_PNG)
    again = run("replay", rules_2, moved, cwd=rules_2.parent)
    assert again.get("miss") is None, again.get("message")
    old = run("replay", rules_2, Path("picture.png"), cwd=rules_2.parent)
    assert old.get("miss") is None, old.get("message")
