"""Nothing recorded is lost: every recording is journaled as it completes, and a process
that dies before saving (SIGKILL, SIGTERM, ``os._exit``, Ctrl-C during the save) leaves a
journal the next open merges. ``record`` mode drops only what is older than the run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from chaincassette import Cassette, CassetteSecretError, journal, use_cassette
from chaincassette.cli import main as cli

CALLS = 200

PROGRAM = """
import os, sys, time
from chaincassette import recorded, use_cassette
from chaincassette import storage

@recorded
def ask(number: int) -> dict:
    time.sleep(0.002)  # a model that takes a moment
    return {{"answer": number * 2}}

how = sys.argv[2]
if how == "ctrl-c-in-save":
    def interrupted(path, text):
        raise KeyboardInterrupt
    storage.write_atomic = interrupted
with use_cassette({path!r}, mode=sys.argv[1]):
    for number in range({calls}):
        ask(number)
        print(number, flush=True)
        if how == "sigterm" and number == {calls} // 2:
            os.kill(os.getpid(), 15)
        if how == "os-exit" and number == {calls} // 2:
            os._exit(3)
"""


def program(tmp_path: Path, path: Path) -> Path:
    script = tmp_path / "record.py"
    script.write_text(PROGRAM.format(path=str(path), calls=CALLS))
    return script


def start(script: Path, mode: str = "record", how: str = "normal") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script), mode, how],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def recovered(path: Path) -> list[int]:
    """The answers the cassette holds once opened (journals merged), saved to disk."""
    cassette = Cassette(path, mode="new_episodes")
    cassette.load()
    cassette.save()
    answers = [i.response["answer"] // 2 for i in Cassette(path).interactions]
    assert journal.orphans(path) == []  # merged and gone
    return answers


def test_sigkill_at_random_moments_keeps_every_completed_call(tmp_path: Path) -> None:
    rng = random.Random(20261201)
    kept, completed = 0, 0
    for trial in range(20):
        path = tmp_path / f"killed-{trial}.yaml"
        process = start(program(tmp_path, path))
        assert process.stdout is not None
        target = rng.randrange(1, CALLS)
        done = -1
        for line in process.stdout:
            done = int(line)
            if done >= target:
                break
        process.send_signal(signal.SIGKILL)
        process.wait()
        answers = recovered(path)
        assert answers == list(range(len(answers)))  # in order, no duplicates
        assert len(answers) >= done + 1, (trial, done, len(answers))
        kept, completed = kept + len(answers), completed + done + 1
    assert kept >= completed


@pytest.mark.parametrize("how", ["sigterm", "os-exit"])
def test_sigterm_and_os_exit_keep_every_completed_call(tmp_path: Path, how: str) -> None:
    path = tmp_path / "c.yaml"
    process = start(program(tmp_path, path), how=how)
    out, _ = process.communicate(timeout=300)
    printed = len(out.split())
    assert process.returncode != 0 and printed == CALLS // 2 + 1
    assert recovered(path) == list(range(printed))


def test_ctrl_c_during_the_save_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    process = start(program(tmp_path, path), how="ctrl-c-in-save")
    out, _ = process.communicate(timeout=300)
    assert process.returncode != 0 and len(out.split()) == CALLS
    assert not path.exists()  # the save was interrupted every time it was tried
    assert recovered(path) == list(range(CALLS))


def test_a_journal_is_removed_once_saved_and_is_private(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with use_cassette(path, mode="record") as cassette:
        cassette.begin({"kind": "call", "function": "f", "args": {}}).answer(lambda: {"v": 1})
        journals = list(journal.folder_for(path).glob(f"*{journal.SUFFIX}"))
        assert len(journals) == 1 and journals[0].stat().st_mode & 0o777 == 0o600
        assert [p.name for p in tmp_path.iterdir()] == []  # nothing beside the cassette
    assert list(journal.folder_for(path).glob(f"*{journal.SUFFIX}")) == []


def test_record_mode_keeps_what_the_same_run_recorded(tmp_path: Path) -> None:
    """A program that opens the cassette once per call in record mode keeps every call; a
    later run in record mode starts from scratch."""
    path = tmp_path / "c.yaml"
    with use_cassette(path, mode="record") as cassette:
        cassette.begin({"kind": "call", "function": "old", "args": {}}).answer(lambda: {"v": 0})
    for number in range(5):
        with use_cassette(path, mode="record") as cassette:
            request = {"kind": "call", "function": "f", "args": {"n": number}}
            cassette.begin(request).answer(lambda n=number: {"v": n})  # type: ignore[misc]
    # this process is one run: the first interaction was recorded by it too
    assert len(Cassette(path).interactions) == 6
    env = {**os.environ, journal.RUN_ENV: "another-run"}
    code = (
        "from chaincassette import use_cassette\n"
        f"with use_cassette({str(path)!r}, mode='record') as c:\n"
        "    c.begin({'kind': 'call', 'function': 'new', 'args': {}}).answer(lambda: {'v': 9})\n"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert [i.request["function"] for i in Cassette(path).interactions] == ["new"]


def test_a_secret_in_a_response_refuses_the_write_and_the_journal_finalizes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    leaked = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    code = (
        "import sys\n"
        "from chaincassette import Cassette, CassetteSecretError\n"
        f"c = Cassette({str(path)!r}, mode='record')\n"
        "c.begin({'kind': 'call', 'function': 'f', 'args': {}}).answer(lambda: {'text': 'fine'})\n"
        f"c.begin({{'kind': 'call', 'function': 'g', 'args': {{}}}}).answer(lambda: {{'text': {leaked!r}}})\n"
        "try:\n"
        "    c.save()\n"
        "except CassetteSecretError as error:\n"
        "    print(error)\n"
        "    c.discard_unsaved()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert "refusing to write" in out and "chaincassette journal" in out and not path.exists()
    assert cli(["journal", str(path)]) == 1
    assert "2 unsaved recordings" in capsys.readouterr().out
    with pytest.raises(CassetteSecretError):  # opening merges it, and still refuses it
        _save_new_episodes(path)
    assert cli(["journal", str(path), "--finalize", "--redact-secrets"]) == 0
    stored = yaml.safe_load(path.read_text())["interactions"]
    assert [i["response"]["text"] for i in stored] == ["fine", "<redacted:openai-key>"]
    assert leaked not in path.read_text() and journal.orphans(path) == []


def _save_new_episodes(path: Path) -> None:
    cassette = Cassette(path, mode="new_episodes")
    cassette.load()
    cassette.save()


def test_the_trace_is_redacted_like_requests(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with use_cassette(path, mode="record") as cassette:
        cassette.begin({"kind": "call", "function": "f", "args": {}}).answer(lambda: {"v": 1})
        node = {"id": 1, "parent": None, "type": "tool", "name": "login", "api_key": "hunter2"}
        node["inputs"] = {"note": "Bearer abcdefghijklmnopqrstuvwxyz012345"}
        cassette.set_trace([node])  # what a callback observer hands over
    text = path.read_text()
    assert "hunter2" not in text and "abcdefghijklmnopqrstuvwxyz012345" not in text
    assert "<redacted:bearer-token>" in text


def test_verify_reports_a_leftover_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    code = (
        "import os\n"
        "from chaincassette import Cassette\n"
        f"c = Cassette({str(path)!r}, mode='record')\n"
        "c.begin({'kind': 'call', 'function': 'f', 'args': {}}).answer(lambda: {'v': 1})\n"
        "c.save()\n"
        "c.begin({'kind': 'call', 'function': 'g', 'args': {}}).answer(lambda: {'v': 2})\n"
        "os._exit(1)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=False, timeout=120)
    assert cli(["verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "unsaved: 1 recording left in a journal" in out and "--finalize" in out
    assert cli(["journal", str(path), "--finalize"]) == 0
    assert cli(["verify", str(tmp_path)]) == 0
    assert len(Cassette(path).interactions) == 2


def test_journal_lines_a_cassette_could_not_hold_are_skipped_like_torn_ones(
    tmp_path: Path,
) -> None:
    """A journal is read back on the next open: only what a cassette may hold comes back."""
    good = {"run": "r", "interaction": {"key": "k", "request": {}, "response": {"v": 1}}}
    deep = "[" * 5000 + "]" * 5000
    lines = [
        '{"run": "r", "interaction": {"key": "k", "requ',  # torn by a kill
        '{"run": "r", "interaction": {"key": "k", "request": {}, "response": NaN}}',
        '{"run": "r", "interaction": {"key": "k", "request": {}, "response": ' + deep + "}}",
        '{"run": "r", "interaction": {"key": "k", "request": {}, "response": 1' + "0" * 5000 + "}}",
        json.dumps(good),
    ]
    path = tmp_path / f"x{journal.SUFFIX}"
    path.write_text("\n".join(lines) + "\n")
    assert list(journal.entries(path)) == [good]
