"""A call with bad arguments raises what the wrapped LLM itself raises, and records nothing.

``CassetteLLM`` and the class-level interception of ``use_cassette`` must not turn a
programming error into something else: a completion without a prompt is LlamaIndex's
``ValueError`` (its ``llm_completion_callback`` reads the prompt), a chat without messages
its dispatcher's ``TypeError``, with the same message, in record and replay alike; nothing
is looked up, nothing recorded, and the cassette's file is not created.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from li_fake_provider import FakeProvider, Reply

from chaincassette import use_cassette
from chaincassette.integrations.llama_index import CassetteLLM

ENDPOINTS = (
    "complete",
    "stream_complete",
    "acomplete",
    "astream_complete",
    "chat",
    "stream_chat",
    "achat",
    "astream_chat",
)


def answer(messages: Any, tools: Any) -> Reply:
    return Reply(text="an answer")


def raised(call: Callable[[], Any]) -> tuple[type[BaseException], str]:
    try:
        result = call()
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    except Exception as error:
        return type(error), str(error)
    raise AssertionError("no error")


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("mode", ["record", "replay"])
def test_no_prompt_raises_what_the_wrapped_llm_raises(
    tmp_path: Path, endpoint: str, mode: str
) -> None:
    provider = FakeProvider(policy=answer)
    expected = raised(getattr(provider, endpoint))  # the provider's own, no cassette around
    assert expected[0] is (TypeError if "chat" in endpoint else ValueError)
    path = tmp_path / "bad.yaml"
    wrapper = CassetteLLM(FakeProvider(policy=answer), cassette=path, mode=mode)
    assert raised(getattr(wrapper, endpoint)) == expected
    with use_cassette(path, mode=mode) as cassette:
        assert raised(getattr(FakeProvider(policy=answer), endpoint)) == expected
    assert wrapper.cassette.stats.recorded == cassette.stats.recorded == 0
    assert cassette.stats.missed == wrapper.cassette.stats.missed == 0
    assert FakeProvider.calls == [] and not path.exists()


def test_completion_arguments_are_read_as_llamaindex_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "args.yaml"
    runs = []
    for mode in ("record", "replay", "replay"):
        wrapper = CassetteLLM(FakeProvider(policy=answer), cassette=path, mode=mode)
        runs.append(
            [
                wrapper.complete("Hello").text,
                wrapper.complete(prompt="Hello").text,  # the same request, its 2nd occurrence
                wrapper.complete("Hello", True).text,
                wrapper.complete("Hello", formatted=True).text,
            ]
        )
        with pytest.raises(TypeError):
            wrapper.complete("Hello", True, "extra")
        keys = [i.key for i in wrapper.cassette.interactions]
        assert len(keys) == 4 and len(set(keys)) == 2  # formatted or not: two requests
    assert runs[0] == runs[1] == runs[2]
    assert len(FakeProvider.calls) == 4
