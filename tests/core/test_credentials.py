"""Placeholder provider keys while a cassette replays (``chaincassette.credentials``).

The rules on a private environment (a dict), then the entry points on the real one: a
replaying ``use_cassette`` block, a ``CassetteCache`` and a ``CassetteLLM`` set the unset
keys and undo them when they end; a recording one sets nothing.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

from chaincassette import Cassette, credentials, use_cassette
from chaincassette.credentials import PLACEHOLDER, PlaceholderKeys, placeholder_environment
from chaincassette.redact import Redactor


def test_the_first_hold_sets_only_unset_or_empty_keys_and_the_last_release_undoes_it() -> None:
    env = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "sk-ant-real", "PATH": "/bin"}
    keys = PlaceholderKeys(env, names=("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GROQ_API_KEY"))
    first = keys.hold()
    assert env == {
        "OPENAI_API_KEY": PLACEHOLDER,
        "ANTHROPIC_API_KEY": "sk-ant-real",
        "GROQ_API_KEY": PLACEHOLDER,
        "PATH": "/bin",
    }
    assert keys.placed() == ("OPENAI_API_KEY", "GROQ_API_KEY")
    second = keys.hold()
    first()
    first()  # a release is idempotent: it cannot end the other holder's replay
    assert env["OPENAI_API_KEY"] == PLACEHOLDER
    second()
    assert env == {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "sk-ant-real", "PATH": "/bin"}
    assert keys.placed() == ()


def test_a_key_the_program_set_meanwhile_is_left_alone() -> None:
    env: dict[str, str] = {}
    keys = PlaceholderKeys(env, names=("OPENAI_API_KEY", "MISTRAL_API_KEY"))
    release = keys.hold()
    env["OPENAI_API_KEY"] = "sk-set-by-the-test"
    release()
    assert env == {"OPENAI_API_KEY": "sk-set-by-the-test"}


@pytest.mark.parametrize("switch", ["0", "false", "OFF", "no"])
def test_one_setting_turns_placeholders_off(switch: str) -> None:
    env = {credentials.SWITCH_ENV_VAR: switch}
    keys = PlaceholderKeys(env, names=("OPENAI_API_KEY",))
    keys.hold()()
    assert "OPENAI_API_KEY" not in env
    assert placeholder_environment({credentials.SWITCH_ENV_VAR: switch}) == env


def test_a_replaying_child_process_gets_placeholders_for_unset_keys_only() -> None:
    child = placeholder_environment({"OPENAI_API_KEY": " ", "GROQ_API_KEY": "gsk_real"})
    assert child["OPENAI_API_KEY"] == PLACEHOLDER and child["GROQ_API_KEY"] == "gsk_real"
    assert child["ANTHROPIC_API_KEY"] == PLACEHOLDER


def test_the_placeholder_has_a_secrets_format_so_redaction_removes_it() -> None:
    redactor = Redactor()
    stored = redactor.redact({"note": f"Incorrect API key provided: {PLACEHOLDER}."})
    assert PLACEHOLDER not in str(stored)
    assert list(redactor.find({"answer": PLACEHOLDER}, "response", check_names=False))


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in credentials.PROVIDER_KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(credentials.SWITCH_ENV_VAR, raising=False)
    monkeypatch.delenv("CHAINCASSETTE_MODE", raising=False)
    # the pytest session of this suite may hold them itself (it replays): start from none
    monkeypatch.setattr(credentials, "PLACEHOLDERS", PlaceholderKeys())


class AuthenticationError(Exception):
    """Shaped like openai's and anthropic's (matched by name and status, as in error_codec)."""

    status_code = 401


def test_an_authentication_error_under_the_placeholder_is_explained(
    no_keys: None,
) -> None:
    assert not credentials.explained(AuthenticationError("no placeholder set: a real answer"))
    with credentials.PLACEHOLDERS.held():
        error = AuthenticationError("Incorrect API key provided: sk-chain***-v1")
        assert credentials.explained(error)
        assert not credentials.explained(ValueError("not an authentication error"))
    if sys.version_info >= (3, 11):  # notes exist from 3.11 on
        assert error.__notes__[0].startswith("chaincassette: OPENAI_API_KEY, AZURE_OPENAI_API_KEY")
        assert "This error is not recorded" in error.__notes__[0]


def test_replays_is_judged_from_the_mode_and_the_file_without_reading_it(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.yaml"
    corrupt.write_text("version: [\n")
    assert credentials.replays(Cassette(corrupt, mode="once"))  # the first call reports it
    assert not credentials.replays(Cassette(tmp_path / "new.yaml", mode="once"))
    assert credentials.replays(Cassette(tmp_path / "new.yaml", mode="replay"))
    for mode in ("record", "new_episodes", "off"):
        assert not credentials.replays(Cassette(corrupt, mode=mode))


def test_use_cassette_holds_them_while_it_replays_and_not_while_it_records(
    tmp_path: Path, no_keys: None
) -> None:
    import os

    with use_cassette(tmp_path / "new.yaml", mode="once"):  # records: no placeholder
        assert "OPENAI_API_KEY" not in os.environ
    with use_cassette(tmp_path / "new.yaml", mode="replay"):
        assert os.environ["OPENAI_API_KEY"] == PLACEHOLDER
        with use_cassette(tmp_path / "other.yaml", mode="replay"):
            assert os.environ["ANTHROPIC_API_KEY"] == PLACEHOLDER
        assert os.environ["ANTHROPIC_API_KEY"] == PLACEHOLDER  # the outer block still replays
    assert "OPENAI_API_KEY" not in os.environ and "ANTHROPIC_API_KEY" not in os.environ


def test_cassette_cache_holds_them_until_it_is_closed_or_collected(
    tmp_path: Path, no_keys: None
) -> None:
    import os

    pytest.importorskip("langchain_core")
    from chaincassette.integrations.langchain import CassetteCache

    cache = CassetteCache(tmp_path / "agent.yaml", mode="replay")
    assert os.environ["OPENAI_API_KEY"] == PLACEHOLDER
    cache.close()
    assert "OPENAI_API_KEY" not in os.environ
    CassetteCache(tmp_path / "agent.yaml", mode="replay")  # dropped at once, never closed
    gc.collect()
    assert "OPENAI_API_KEY" not in os.environ
    recording = CassetteCache(tmp_path / "agent.yaml", mode="record")
    assert "OPENAI_API_KEY" not in os.environ
    recording.close()


def test_cassette_llm_holds_them_while_it_lives(tmp_path: Path, no_keys: None) -> None:
    import os

    pytest.importorskip("llama_index.core")
    from llama_index.core.llms import MockLLM

    from chaincassette.integrations.llama_index import CassetteLLM

    llm = CassetteLLM(MockLLM(), cassette=tmp_path / "li.yaml", mode="replay")
    assert os.environ["GEMINI_API_KEY"] == PLACEHOLDER
    del llm
    gc.collect()
    assert "GEMINI_API_KEY" not in os.environ
