"""Two programs record one cassette at once (``mode="once"``, one block each, saved at the
end), and ask the model one same question: the cassette keeps one answer, the one of the
run that began recording first, also when that run has ended before the other saves, and
the other run is told so. Real ``ChatOpenAI`` clients against the fake OpenAI server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from fakes.scripts import from_context
from fakes.wire import FakeServer

from chaincassette import runs

PROGRAM = """
import sys
from langchain_openai import ChatOpenAI
from chaincassette import use_cassette

path, url, own = sys.argv[1], sys.argv[2], sys.argv[3]
with use_cassette(path, mode="once"):
    model = ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key="sk-test", max_retries=0)
    print(model.invoke(own).content, flush=True)
    sys.stdin.readline()  # the test says when to go on
    print(model.invoke("The shared question about Paris").content, flush=True)
    sys.stdin.readline()  # and when to save
print("saved", flush=True)
"""


def _start(program: Path, cassette: Path, url: str, own: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in (runs.RUN_ENV, "CHAINCASSETTE_MODE")}
    env["PYTHONWARNINGS"] = "default"
    return subprocess.Popen(
        [sys.executable, str(program), str(cassette), url, own],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,  # each its own run
    )


def _line(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    return child.stdout.readline().strip()


def _go(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()


def test_the_run_that_began_first_keeps_its_answer_after_it_ended(tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    cassette = tmp_path / "shared.yaml"
    with FakeServer(from_context) as fake:
        first = _start(program, cassette, fake.url, "Own question of A")
        assert _line(first)  # A began recording
        second = _start(program, cassette, fake.url, "Own question of B")
        assert _line(second)  # and B, after it
        _go(first), _go(second)
        first_answer, second_answer = _line(first), _line(second)
        assert first_answer != second_answer  # the fake's nonce: two live answers
        _go(first)  # A saves and ends cleanly while B still records
        assert first.communicate(timeout=120)[0].strip() == "saved"
        _go(second)
        _, told = second.communicate(timeout=120)
        assert second.returncode == 0, told
    interactions = yaml.safe_load(cassette.read_text())["interactions"]
    assert len(interactions) == 3  # each run's own question, and the shared one once
    assert len({i["key"] for i in interactions}) == 3
    responses = [str(i["response"]) for i in interactions]
    assert [first_answer in r for r in responses].count(True) == 1
    assert not any(second_answer in r for r in responses)
    assert "recorded by this run and by run" in told
