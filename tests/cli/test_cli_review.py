"""``ls``, ``show`` and ``diff`` on cassettes the engine wrote, broken ones included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import ai, chat_request, git, record_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from chaincassette import storage, use_cassette
from chaincassette.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ls_lists_interactions_models_tokens_size_and_date(
    agent_cassette: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (agent_cassette.parent / "notes.yaml").write_text(
        "not: a cassette\n"
    )  # inside cassettes/: flagged
    (agent_cassette.parent.parent.parent / "config.yaml").write_text("plain: config\n")  # ignored
    code, out, err = run(capsys, "ls")
    lines = out.splitlines()
    assert lines[0].split() == ["CASSETTE", "INTERACTIONS", "MODELS", "TOKENS", "SIZE", "RECORDED"]
    row = next(line for line in lines if "test_weather.yaml" in line).split()
    assert row[1:4] == ["2", "gpt-4o-mini", "65"]
    assert any("notes.yaml" in line and "unreadable" in line for line in lines)
    assert "config.yaml" not in out
    assert code == 1 and "chaincassette verify" in err


def test_ls_empty_folder(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "ls")[:2] == (0, "no cassettes under .\n")


def test_show_is_a_transcript(agent_cassette: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", str(agent_cassette))
    assert code == 0
    assert "2 interactions" in out.splitlines()[0]
    assert (
        "[0] chat · gpt-4o-mini · 2 messages · agent weather · framework langchain · 40 tokens"
        in out
    )
    for expected in (
        "  params: temperature=0.0",
        "  tools: get_weather",
        "  user: Weather in Paris?",
        '  assistant: → get_weather(city="Paris")',
        "  tool: 12C and sunny",
        "  assistant: It is 12C and sunny.",
    ):
        assert expected in out.splitlines()
    assert "· continues [0] ·" in out  # the second call shows only what is new
    assert out.count("user: Weather in Paris?") == 1


def test_show_counts_one_run_and_one_token_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "one.yaml"
    with use_cassette(path, mode="record") as cassette:  # one model call: a trace of one run
        GenericFakeChatModel(messages=iter([AIMessage("hi")])).invoke("hello")
        cassette.begin(chat_request("Weather?")).answer(lambda: ai("Sunny.", tokens=1))
    code, out, _ = run(capsys, "show", str(path))
    assert code == 0
    assert "\ntrace: 1 run (chaincassette show --json for all of it)\n" in out
    assert "[1] chat · gpt-4o-mini · 2 messages · 1 token ·" in out


def test_show_json_is_the_document(
    agent_cassette: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "show", "--json", str(agent_cassette))
    document = storage.read(agent_cassette, "yaml")
    assert code == 0 and document is not None
    assert json.loads(out) == storage.expanded(document)  # every request in full


def test_show_broken_cassette_names_file_and_line(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = repo / "broken.yaml"
    broken.write_text("version: 1\ninteractions:\n- key: [unclosed\n")
    code, _, err = run(capsys, "show", str(broken))
    assert code == 1 and "cannot read cassette" in err and "broken.yaml:" in err


def test_diff_two_files_by_message(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = record_agent(repo / "old.yaml")
    new = record_agent(
        repo / "new.yaml", question="Weather in Rome?", answer="It is 12C and sunny."
    )
    code, out, _ = run(capsys, "diff", str(old), str(new))
    assert code == 1
    assert "2 changed, 0 added, 0 removed, 0 unchanged interactions" in out
    assert (
        "    messages[1] (user).content: Weather in Paris? → Weather in Rome?" in out.splitlines()
    )
    assert run(capsys, "diff", str(old), str(old))[:2] == (
        0,
        f"--- {old.name}\n+++ {old.name}\nno differences\n",
    )


def test_diff_response_only_change_and_added_interaction(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = record_agent(repo / "old.yaml")
    new = record_agent(repo / "new.yaml", answer="Sunny, 12 degrees.")
    document = storage.read(new, "yaml")
    assert document is not None
    extra = json.loads(json.dumps(document.interactions[0]))
    extra["request"]["params"]["temperature"] = 0.7
    extra["request"]["model"] = "other-model"
    extra["key"] = "f" * 64
    document.interactions.append(extra)
    storage.write_atomic(new, storage.dumps(document, "yaml"))
    code, out, _ = run(capsys, "diff", str(old), str(new))
    assert code == 1
    assert "1 changed, 1 added, 0 removed, 1 unchanged interactions" in out
    assert any(
        "answer" in line and "It is 12C and sunny. → Sunny, 12 degrees." in line
        for line in out.splitlines()
    )
    assert "+ added [2] chat · other-model · 2 messages" in out


def test_diff_against_git_head(
    agent_cassette: Path, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "diff", str(agent_cassette))
    assert code == 1 and "0 changed, 2 added, 0 removed" in out  # not committed yet
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "cassette")
    assert run(capsys, "diff", str(agent_cassette))[0] == 0
    record_agent(agent_cassette, question="Weather in Oslo?")
    code, out, _ = run(capsys, "diff", str(agent_cassette))
    assert code == 1 and "(HEAD)" in out and "Weather in Paris? → Weather in Oslo?" in out


def test_diff_errors_are_usage_errors(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "bad.yaml").write_text("version: 99\n")
    good = record_agent(repo / "good.yaml")
    code, _, err = run(capsys, "diff", str(good), str(repo / "bad.yaml"))
    assert code == 2 and "newer chaincassette" in err


def test_every_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("ls", "show", "diff", "verify", "accept", "upgrade", "prune", "run"):
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0
        assert "usage: chaincassette" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["frobnicate"])
    assert exit_.value.code == 2
    assert main([]) == 2
