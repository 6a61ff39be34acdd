"""Tokens of streamed calls: the stream's final usage where the provider sent one, else unknown.

OpenAI sends a stream's usage only when asked (``stream_options={"include_usage": True}``;
``stream_usage=True`` in langchain-openai), and the fake server does the same. Real
``ChatOpenAI`` and LlamaIndex ``OpenAI`` clients stream against it with and without asking;
``chaincassette ls`` and the pytest summary then count what was reported and say how many
calls are of unknown usage, never 0 tokens for them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml
from fakes.scripts import forecast
from fakes.wire import FakeServer

from chaincassette import use_cassette
from chaincassette.cli import main

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("langchain_openai") is None
    or importlib.util.find_spec("llama_index.llms.openai") is None,
    reason="needs langchain-openai and llama-index-llms-openai",
)
KEY = "sk-test-" + "x" * 32


def record(folder: Path, url: str) -> None:
    from langchain_openai import ChatOpenAI
    from llama_index.core.llms import ChatMessage
    from llama_index.llms.openai import OpenAI

    def langchain(**options: object) -> ChatOpenAI:
        return ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key=KEY, max_retries=0, **options)

    def llama(**options: object) -> OpenAI:
        return OpenAI(model="gpt-4o-mini", api_base=url, api_key=KEY, max_retries=0, **options)

    asked = {"stream_options": {"include_usage": True}}
    with use_cassette(folder / "asked.yaml", mode="record"):
        assert "".join(str(c.content) for c in langchain(stream_usage=True).stream("Hi there"))
        chunks = list(llama(additional_kwargs=asked).stream_chat([ChatMessage(content="Hi")]))
        assert chunks[-1].message.content == "You asked: Hi"
    with use_cassette(folder / "not_asked.yaml", mode="record"):
        assert "".join(str(c.content) for c in langchain().stream("Hi there"))
        assert list(llama().stream_chat([ChatMessage(content="Hi")]))
    with use_cassette(folder / "mixed.yaml", mode="record"):
        assert langchain().invoke("Not streamed").content
        assert list(langchain().stream("Streamed"))


def metas(path: Path) -> list[dict[str, object]]:
    return [i["meta"] for i in yaml.safe_load(path.read_text())["interactions"]]


def test_ls_counts_the_final_usage_and_says_unknown_where_none_was_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer(forecast) as provider:
        record(tmp_path, provider.url)
    assert [m.get("tokens") for m in metas(tmp_path / "asked.yaml")] == [18, 18]
    assert [m.get("tokens") for m in metas(tmp_path / "not_asked.yaml")] == [None, None]
    assert main(["ls", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = {Path(line.split()[0]).name: line for line in out.splitlines() if ".yaml" in line}
    assert "  36  " in rows["asked.yaml"]
    assert "  unknown  " in rows["not_asked.yaml"]
    assert "  18 + 1 unknown  " in rows["mixed.yaml"]
    assert "unknown: 3 model calls whose provider reported no usage" in out


SUITE = """
import os
from langchain_openai import ChatOpenAI

def model(**options):
    return ChatOpenAI(model="gpt-4o-mini", base_url=os.environ["PROVIDER_URL"], max_retries=0, **options)

def test_reported(cassette):
    assert list(model(stream_usage=True).stream("Hi there"))

def test_unreported(cassette):
    assert list(model().stream("Hi there"))
"""


def test_the_pytest_summary_counts_unknown_usage_apart(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_streams=SUITE)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeServer(forecast) as provider:
        monkeypatch.setenv("PROVIDER_URL", provider.url)
        pytester.runpytest_subprocess("--cassette-mode=once").assert_outcomes(passed=2)
    replayed = pytester.runpytest_subprocess()
    replayed.assert_outcomes(passed=2)
    replayed.stdout.fnmatch_lines(
        [
            "2 cassettes used by 2 tests: 2 replayed, 0 recorded, 0 missed, 0 unused "
            "interactions; 18 tokens not spent thanks to replay (+ 1 model call of unknown usage)"
        ]
    )
