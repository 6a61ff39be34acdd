"""Nothing recorded is lost: every recording is journaled as it completes, and a process
that dies before saving (SIGKILL, SIGTERM, ``os._exit``, Ctrl-C during the save) leaves a
journal the next open merges. ``record`` mode drops only what is older than the run."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import yaml
from state_files import files_under

from chaincassette import (
    Cassette,
    journal,
    runs,
    statedir,
    store,
    use_cassette,
)
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
    """The answers the cassette holds once opened (journals merged, which the open says),
    saved to disk. The process died before its save: every answer comes from a journal."""
    cassette = Cassette(path, mode="new_episodes")
    with pytest.warns(store.JournalWarning, match=r"recovered \d+ recording") as caught:
        cassette.load()
    cassette.save()
    answers = [i.response["answer"] // 2 for i in Cassette(path).interactions]
    assert store.journals(path).pending == []  # merged and gone
    said = re.search(r"recovered (\d+) recording", str(caught[0].message))
    assert said is not None and int(said.group(1)) == len(answers)
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
        journals = list(statedir.cassette_folder(path).glob(f"*{journal.SUFFIX}"))
        assert len(journals) == 1 and journals[0].stat().st_mode & 0o777 == 0o600
        assert [p.name for p in tmp_path.iterdir()] == []  # nothing beside the cassette
    assert list(statedir.cassette_folder(path).glob(f"*{journal.SUFFIX}")) == []


@pytest.mark.parametrize(
    "response",
    [{"v": 1, "text": 'a "quoted" \\ é\n'}, [1.5, None, True, {"2": [], "k": {}}], "plain", 0],
)
def test_a_journal_line_is_the_interaction_encoded_whole(tmp_path: Path, response: object) -> None:
    """The journal writes a recording's response with the JSON text the recording made of it
    (not encoded twice): each line is byte for byte the whole interaction encoded."""
    path = tmp_path / "c.yaml"
    with use_cassette(path, mode="record") as cassette:
        cassette.begin({"kind": "call", "function": "f", "args": {}}).answer(lambda: response)
        [found] = statedir.cassette_folder(path).glob(f"*{journal.SUFFIX}")
        line = found.read_bytes().splitlines(keepends=True)[1]
        [interaction] = cassette.interactions
        assert line == journal._line({"interaction": interaction.to_plain()})
    for plain in ({"response": 1}, {"a": 1, "response": [2]}, {"response": {}, "b": None}):
        assert journal._line_of(plain, json.dumps(plain["response"])) == journal._line(
            {"interaction": plain}
        )


def test_record_mode_keeps_what_the_same_run_recorded(tmp_path: Path) -> None:
    """A program that opens the cassette once per call in record mode keeps every call; a
    later run in record mode, once that program has ended, starts from scratch."""
    path = tmp_path / "c.yaml"
    code = (
        "import sys\n"
        "from chaincassette import Cassette, use_cassette\n"
        "path = sys.argv[1]\n"
        "with use_cassette(path, mode='record') as cassette:\n"
        "    cassette.begin({'kind': 'call', 'function': 'old', 'args': {}}).answer(lambda: {'v': 0})\n"
        "for number in range(5):\n"
        "    with use_cassette(path, mode='record') as cassette:\n"
        "        request = {'kind': 'call', 'function': 'f', 'args': {'n': number}}\n"
        "        cassette.begin(request).answer(lambda n=number: {'v': n})\n"
        "print(len(Cassette(path).interactions))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != runs.RUN_ENV}  # a run of its own
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.split() == ["6"], done.stderr  # the process is one run: all 6 stay
    later = (
        "from chaincassette import use_cassette\n"
        f"with use_cassette({str(path)!r}, mode='record') as c:\n"
        "    c.begin({'kind': 'call', 'function': 'new', 'args': {}}).answer(lambda: {'v': 9})\n"
    )
    subprocess.run([sys.executable, "-c", later], env=env, check=True, timeout=120)
    assert [i.request["function"] for i in Cassette(path).interactions] == ["new"]


REFUSED = """
import sys
from chaincassette import Cassette, CassetteSecretError
cassette = Cassette(sys.argv[1], mode="new_episodes")
cassette.begin({"kind": "call", "function": "g", "args": {}}).answer(lambda: {"text": sys.argv[2]})
try:
    cassette.save()
except CassetteSecretError as error:
    print(error)
"""


def test_a_refused_save_leaves_no_secret_and_the_next_run_replays_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    with use_cassette(path, mode="record") as cassette:
        cassette.begin({"kind": "call", "function": "f", "args": {}}).answer(lambda: {"text": "ok"})
    before = path.read_bytes()
    leaked = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    env = {k: v for k, v in os.environ.items() if k != runs.RUN_ENV}
    out = subprocess.run(
        [sys.executable, "-c", REFUSED, str(path), leaked],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    ).stdout
    assert "refusing to write" in out and "set aside in" in out and "--finalize" in out
    assert path.read_bytes() == before
    state = Path(os.environ[statedir.STATE_ENV])
    for found, data in files_under(state):  # the journal kept it masked: no plain text on disk
        assert leaked.encode() not in data, found
    # the next run replays what the file holds, says once what was refused, and exits cleanly
    replay = (
        "import sys\n"
        "from chaincassette import use_cassette\n"
        "with use_cassette(sys.argv[1]) as c:\n"
        "    c.begin({'kind': 'call', 'function': 'f', 'args': {}}).answer(lambda: None)\n"
    )
    for time_ in ("first", "second"):
        done = subprocess.run(
            [sys.executable, "-c", replay, str(path)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        said = [line for line in done.stderr.splitlines() if "set aside" in line]
        if time_ == "first":
            (line,) = said
            assert "a response in it holds a secret" in line and "openai-key" in line
            assert "--finalize" in line and "--drop" in line and "allow_secrets" in line
        else:
            assert said == []  # said once
    assert cli(["journal", str(path)]) == 1
    assert "holds a secret" in capsys.readouterr().out
    assert cli(["journal", str(path), "--finalize"]) == 0
    stored = yaml.safe_load(path.read_text())["interactions"]
    assert [i["response"]["text"] for i in stored] == ["ok", "<redacted:openai-key>"]
    assert leaked not in path.read_text() and store.journals(path).aside == []
    assert cli(["verify", str(tmp_path)]) == 0  # the masked response has a matching hash


KILLED_WITH_A_SECRET = """
import sys, time
from chaincassette import Cassette
cassette = Cassette(sys.argv[1], mode="new_episodes")
for n, text in enumerate(["fine", sys.argv[2]]):
    cassette.begin({"kind": "call", "function": "g", "args": {"n": n}}).answer(
        lambda text=text: {"text": text}
    )
print("recorded", flush=True)
time.sleep(60)  # killed before any save
"""


def test_a_secret_in_a_response_never_reaches_the_journal_in_plain_text(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    leaked = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"
    env = {k: v for k, v in os.environ.items() if k != runs.RUN_ENV}
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_WITH_A_SECRET, str(path), leaked],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "recorded"
    state = Path(os.environ[statedir.STATE_ENV])
    journals = [p for p in state.rglob("*.journal") if str(child.pid) in p.name]
    assert journals and all(b"fine" in p.read_bytes() for p in journals)
    for found, data in files_under(state):  # masked from its first write, before any save
        assert leaked.encode() not in data, found
    child.kill()
    child.wait()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opened = Cassette(path, mode="replay")
        opened.load()
    (line,) = [str(w.message) for w in caught if "set aside" in str(w.message)]
    assert "holds a secret" in line and "slack" in line.lower() and "--drop" in line
    assert opened.interactions == [] and not path.exists()  # nothing applied, nothing broken


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
    assert "opening the cassette applies them as that run meant" in out
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
    assert journal.read(path).entries == [good["interaction"]]


def test_verify_reports_the_journal_of_a_cassette_never_saved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Killed before its first save, a new cassette has no file, only a journal: verify of
    its folder still reports it."""
    path = tmp_path / "cassettes" / "new.yaml"
    code = (
        "import os\n"
        "from chaincassette import Cassette\n"
        f"c = Cassette({str(path)!r}, mode='record')\n"
        "c.begin({'kind': 'call', 'function': 'g', 'args': {}}).answer(lambda: {'v': 2})\n"
        "os._exit(1)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=False, timeout=120)
    assert not path.exists()
    assert cli(["verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "new.yaml" in out and "unsaved: 1 recording" in out
    assert cli(["verify", str(tmp_path / "elsewhere")]) == 0  # another folder's are not its own
