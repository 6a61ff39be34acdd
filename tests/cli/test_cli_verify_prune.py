"""``verify`` on good and broken cassettes, ``prune`` from the usage record of a real pytest run."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import yaml
from cli_helpers import git, record_agent

from chaincassette.cli import main
from chaincassette.filelock import FileLock


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


def edit(path: Path, change: object) -> None:
    document = yaml.safe_load(path.read_text())
    change(document)  # type: ignore[operator]
    path.write_text(yaml.safe_dump(document, sort_keys=False, explicit_end=True))


def test_verify_clean_cassettes(agent_cassette: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "verify", "-v")
    assert code == 0, out
    assert "ok   tests/cassettes/test_agent/test_weather.yaml" in out
    assert "1 cassette checked: 0 problems, 0 warnings" in out


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (lambda d: d.update(version=7), "written by a newer chaincassette"),
        (lambda d: d["interactions"][0].update(key="nothex"), "invalid key"),
        (
            lambda d: d["interactions"][1]["response"]["generations"][0]["message"]["data"].update(
                content="your key is sk-proj-abcdefghijklmnopqrstuvwxyz123456"
            ),
            "secret: openai-key at interactions[1].response",
        ),
        (
            lambda d: d["interactions"][0]["request"].update(model="gpt-5"),
            "the key does not match the stored request",
        ),
        (
            lambda d: d["interactions"][0]["meta"].update(api_key="hunter2-but-longer"),
            "secret: field named 'api_key'",
        ),
    ],
    ids=["future-version", "bad-key", "secret-in-response", "hand-edited", "secret-field"],
)
def test_verify_finds_problems(
    agent_cassette: Path, capsys: pytest.CaptureFixture[str], breakage: object, message: str
) -> None:
    edit(agent_cassette, breakage)
    code, out = run(capsys, "verify")
    assert code == 1
    assert "FAIL tests/cassettes/test_agent/test_weather.yaml" in out and message in out


def test_verify_reports_staleness_without_failing(
    agent_cassette: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(agent_cassette, lambda d: d["recorded_with"].update({"pyyaml": "0.1"}))
    edit(agent_cassette, lambda d: d["interactions"][0]["meta"].update(recorded="2020-01-01"))
    code, out = run(capsys, "verify")
    assert code == 0
    assert "warning: stale: recorded with pyyaml 0.1, installed" in out
    assert "warning: stale: oldest interaction recorded 2020-01-01" in out


def test_verify_strict_fails_on_uncommitted_cassettes(
    agent_cassette: Path, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, "verify", "--strict", "tests")
    assert code == 1 and "uncommitted: untracked" in out
    assert "commit it, or delete it" in out and "git checkout" not in out
    git(repo, "add", "tests")
    git(repo, "commit", "-qm", "cassettes")
    assert run(capsys, "verify", "--strict", "tests")[0] == 0
    record_agent(agent_cassette, question="Weather in Oslo?")
    code, out = run(capsys, "verify", "--strict", "tests")
    assert code == 1 and "uncommitted: modified" in out
    assert "review and commit it, or restore it with git checkout" in out
    assert run(capsys, "verify", "tests")[0] == 0


SUITE = """
import os
import pytest
from provider import ask

def test_kept(cassette):
    ask("one")
    if not os.environ.get("SHORTER"):
        ask("two")
{extra}
"""
PROVIDER = """
from chaincassette import recorded

@recorded(name="provider.ask")
def ask(prompt):
    return {"text": prompt.upper(), "usage": {"total_tokens": 3}}
"""


def test_prune_from_the_usage_record(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(provider=PROVIDER)
    pytester.syspathinsert()
    pytester.makepyfile(
        test_agent=SUITE.format(extra="def test_gone(cassette):\n    ask('gone')\n")
    )
    pytester.makepyfile(
        test_old_module="def test_x(cassette):\n    from provider import ask\n    ask('x')\n"
    )
    assert main(["prune"]) == 1  # no record yet
    assert "run the test suite" in capsys.readouterr().err
    pytester.runpytest("--cassette-mode=once").assert_outcomes(passed=3)
    folder = pytester.path / "cassettes"
    (pytester.path / "test_old_module.py").unlink()
    pytester.makepyfile(test_agent=SUITE.format(extra=""))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SHORTER", "1")
        pytester.runpytest().assert_outcomes(passed=1)
    record = json.loads((pytester.path / ".chaincassette" / "usage.json").read_text())
    assert record["cassettes"]["cassettes/test_agent/test_kept.yaml"]["unused"] == [1]

    code, out = run(capsys, "prune", "--dry-run")
    assert code == 0
    assert "would remove cassettes/test_agent/test_gone.yaml (no test uses it)" in out
    assert (
        "would remove cassettes/test_old_module/test_x.yaml (its test module no longer exists)"
        in out
    )
    assert "would remove 1 unused interaction from cassettes/test_agent/test_kept.yaml" in out
    assert (folder / "test_agent" / "test_gone.yaml").exists()

    assert run(capsys, "prune")[0] == 0
    assert not (folder / "test_agent" / "test_gone.yaml").exists()
    assert not (folder / "test_old_module" / "test_x.yaml").exists()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SHORTER", "1")
        pytester.runpytest("--cassette-strict").assert_outcomes(passed=1)
    capsys.readouterr()
    assert run(capsys, "prune")[1].strip() == "nothing to prune"


def record_then_drop_modules(pytester: pytest.Pytester, *modules: str) -> Path:
    """Record ``test_agent`` and ``modules`` (``sub/test_x``: in a folder), then delete the
    modules and run ``test_agent`` alone: their cassettes are orphans in the usage record."""
    pytester.makepyfile(provider=PROVIDER)
    pytester.syspathinsert()
    pytester.makepyfile(test_agent=SUITE.format(extra=""))
    x = "def test_x(cassette):\n    from provider import ask\n    ask('x')\n"
    pytester.makepyfile(**dict.fromkeys(modules, x))
    pytester.runpytest("--cassette-mode=once").assert_outcomes(passed=1 + len(modules))
    for module in modules:
        (pytester.path / f"{module}.py").unlink()
    pytester.runpytest("test_agent.py").assert_outcomes(passed=1)
    return pytester.path / "cassettes"


def test_prune_removes_the_folders_it_emptied_and_no_other(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = record_then_drop_modules(pytester, "test_new", "test_noted")
    (folder / "test_noted" / "NOTES.md").write_text("why these cassettes exist\n")

    code, out = run(capsys, "prune", "--dry-run")
    assert code == 0
    assert "would remove cassettes/test_new/ (emptied)" in out
    assert "test_noted/ (emptied)" not in out and (folder / "test_new").is_dir()
    code, out = run(capsys, "prune")
    assert code == 0
    assert "removed cassettes/test_new/test_x.yaml (its test module no longer exists)" in out
    assert "removed cassettes/test_new/ (emptied)" in out
    assert not (folder / "test_new").exists()
    assert [p.name for p in (folder / "test_noted").iterdir()] == ["NOTES.md"]
    assert (folder / "test_agent" / "test_kept.yaml").is_file()
    (folder / "test_noted" / "NOTES.md").unlink()
    assert run(capsys, "prune")[1].strip() == "nothing to prune"  # it emptied no folder
    assert (folder / "test_noted").is_dir()


def test_prune_keeps_a_cassettes_folder_it_emptied(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    record_then_drop_modules(pytester, "sub/test_new")
    code, out = run(capsys, "prune")
    assert code == 0 and "removed sub/cassettes/test_new/ (emptied)" in out
    assert list((pytester.path / "sub" / "cassettes").iterdir()) == []


def record_then_run_shorter(pytester: pytest.Pytester) -> Path:
    """Record ``test_kept``'s two calls, then run it making one: the second is unused."""
    pytester.makepyfile(provider=PROVIDER)
    pytester.syspathinsert()
    pytester.makepyfile(test_agent=SUITE.format(extra=""))
    pytester.runpytest("--cassette-mode=once").assert_outcomes(passed=1)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SHORTER", "1")
        pytester.runpytest().assert_outcomes(passed=1)
    return pytester.path / "cassettes" / "test_agent" / "test_kept.yaml"


def test_prune_leaves_a_cassette_that_changed_since_the_run(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = record_then_run_shorter(pytester)
    cassette.write_text(cassette.read_text() + "\n")
    code, out = run(capsys, "prune")
    assert code == 0 and "changed since the last test run" in out
    assert len(yaml.safe_load(cassette.read_text())["interactions"]) == 2


def test_prune_waits_for_a_process_saving_the_cassette_and_keeps_its_save(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recording saved while prune runs is never overwritten by prune's older copy."""
    cassette = record_then_run_shorter(pytester)
    outcome: list[int] = []
    with FileLock(cassette):  # a recorder is saving this cassette
        pruning = threading.Thread(target=lambda: outcome.append(main(["prune"])))
        pruning.start()
        pruning.join(0.5)
        assert pruning.is_alive() and not outcome  # prune waits for the save
        saved = cassette.read_text() + "# saved by the recorder\n"
        cassette.write_text(saved)
    pruning.join(60)
    assert outcome == [0]
    assert "changed since the last test run" in capsys.readouterr().err
    assert cassette.read_text() == saved
