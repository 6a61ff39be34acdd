"""Mode precedence and the CI rule, without pytest in the way."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaincassette import RecordMode
from chaincassette.integrations.pytest_plugin import settings


def build(
    tmp_path: Path, env: dict[str, str], cli: str | None = None, ini: str | None = None
) -> settings.Settings:
    return settings.build(
        cli_mode=cli,
        ini_mode=ini,
        cli_dir=None,
        ini_dir=None,
        ini_dir_base=tmp_path,
        invocation_dir=tmp_path,
        strict=False,
        environ=env,
    )


def test_precedence_cli_env_marker_ini_default(tmp_path: Path) -> None:
    assert build(tmp_path, {}).resolve(None).mode is RecordMode.REPLAY
    assert build(tmp_path, {}, ini="once").resolve(None) == settings.ResolvedMode(
        RecordMode.ONCE, "ini"
    )
    assert build(tmp_path, {}, ini="once").resolve("record").source == "marker"
    env = {"CHAINCASSETTE_MODE": "new_episodes"}
    assert build(tmp_path, env, ini="once").resolve("record").mode is RecordMode.NEW_EPISODES
    assert build(tmp_path, env, cli="none").resolve("record") == settings.ResolvedMode(
        RecordMode.REPLAY, "cli"
    )


def test_cassette_config_mode_sits_between_the_marker_and_the_ini_setting(tmp_path: Path) -> None:
    plain = build(tmp_path, {}, ini="once")
    assert plain.resolve(None, "new_episodes") == settings.ResolvedMode(
        RecordMode.NEW_EPISODES, "config"
    )
    assert plain.resolve("record", "new_episodes").source == "marker"
    assert build(tmp_path, {"CHAINCASSETTE_MODE": "replay"}).resolve(None, "once").source == "env"
    refused = build(tmp_path, {"CI": "1"}).resolve(None, "once")
    assert refused.refused is RecordMode.ONCE
    assert "from the cassette_config fixture was refused" in refused.refusal_note()


@pytest.mark.parametrize("source", ["ini", "env", "marker"])
def test_ci_refuses_recording_unless_the_command_line_asked(tmp_path: Path, source: str) -> None:
    env = {"CI": "true"}
    if source == "env":
        env["CHAINCASSETTE_MODE"] = "once"
    resolved = build(tmp_path, env, ini="once" if source == "ini" else None).resolve(
        "once" if source == "marker" else None
    )
    assert resolved.mode is RecordMode.REPLAY and resolved.refused is RecordMode.ONCE
    assert "--cassette-mode=once" in resolved.refusal_note()
    allowed = build(tmp_path, env, cli="once").resolve(None)
    assert allowed.mode is RecordMode.ONCE and allowed.refused is None


def test_ci_false_values_do_not_count(tmp_path: Path) -> None:
    for value in ("", "0", "false"):
        assert build(tmp_path, {"CI": value}, ini="once").resolve(None).mode is RecordMode.ONCE


def test_bad_modes_name_their_source(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="CHAINCASSETTE_MODE"):
        build(tmp_path, {"CHAINCASSETTE_MODE": "sometimes"})
    with pytest.raises(ValueError, match="cassette_mode ini"):
        build(tmp_path, {}, ini="sometimes")
