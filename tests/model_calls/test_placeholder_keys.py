"""The replay placeholder key never reaches a cassette, even when a recording sends it.

A client built while a cassette replays (no ``OPENAI_API_KEY`` set) holds the placeholder.
If a cassette then *records* with that client, the placeholder goes to the provider: a real
``ChatOpenAI`` against the fake server, with a model that checks keys like OpenAI (401 with
the masked key) or echoes them back. The 401 is not recorded (it would replay "invalid key" forever) and
says why; an echoed placeholder is refused by the scan before the write.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fakes.faults import bad_key
from fakes.turns import Answer, Reply, Script, Turn
from fakes.wire import FakeServer

from chaincassette import credentials, use_cassette
from chaincassette.credentials import PLACEHOLDER, PlaceholderKeys
from chaincassette.redact import SecretMaskedWarning

pytest.importorskip("langchain_openai")


def key_checker(echo: bool) -> Script:
    """Answers 401 like OpenAI (the key masked) to any key but ``real``; ``echo`` puts the
    key in the answer."""

    def script(turn: Turn) -> Reply | Answer:
        key = turn.key
        if key != "sk-real-" + "x" * 32 and not echo:
            return bad_key(f"{key[:8]}{'*' * (len(key) - 12)}{key[-4:]}")
        return Reply(text=f"Your key is {key}")

    return script


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in credentials.PROVIDER_KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(credentials.SWITCH_ENV_VAR, raising=False)
    monkeypatch.setattr(credentials, "PLACEHOLDERS", PlaceholderKeys())


def test_an_invalid_key_answer_to_the_placeholder_is_not_recorded(
    tmp_path: Path, no_keys: None
) -> None:
    import openai
    from langchain_openai import ChatOpenAI

    from chaincassette.error_codec import recordable

    recording = tmp_path / "recording.yaml"
    replayed = tmp_path / "replayed.yaml"
    with FakeServer(key_checker(echo=False)) as server, use_cassette(replayed, mode="replay"):
        model = ChatOpenAI(model="gpt-4o-mini", base_url=server.url, max_retries=0)
        with (
            pytest.raises(Exception) as raised,
            use_cassette(recording, mode="record") as inner,
        ):
            model.invoke("Hello")  # with the placeholder key
    assert isinstance(raised.value, openai.AuthenticationError) and recordable(raised.value)
    assert server.requests == 1  # it did reach the provider: a recording calls live
    assert inner.stats.recorded == 0 and not recording.exists()
    if sys.version_info >= (3, 11):
        assert "This error is not recorded" in raised.value.__notes__[-1]


def test_a_placeholder_echoed_by_the_provider_is_never_written(
    tmp_path: Path, no_keys: None
) -> None:
    from langchain_openai import ChatOpenAI

    recording = tmp_path / "recording.yaml"
    replayed = tmp_path / "replayed.yaml"
    with FakeServer(key_checker(echo=True)) as server, use_cassette(replayed, mode="replay"):
        model = ChatOpenAI(model="gpt-4o-mini", base_url=server.url, max_retries=0)
        with pytest.warns(SecretMaskedWarning), use_cassette(recording, mode="record"):
            answer = model.invoke("Hello").content
    # the placeholder is a value the process holds as a key: masked in what is stored, and
    # in what the recording run hands the program, so that its replay is the same
    assert isinstance(answer, str) and answer.startswith("Your key is <redacted:env:")
    assert PLACEHOLDER not in recording.read_text()
