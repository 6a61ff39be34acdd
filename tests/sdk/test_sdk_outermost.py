"""Outermost layer wins: a framework's call that reaches the SDK underneath is recorded once,
by the framework's layer; a raw SDK call made inside a tool or ``@recorded`` only once too.

Every client is real (``langchain-openai``, ``langchain-anthropic``, LlamaIndex's OpenAI and
Anthropic LLMs and embeddings, the SDKs), talking to the fake wire server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from fakes.wire import FakeServer
from sdk_clients import ANTHROPIC_KEY, DEAD, OPENAI_KEY, openai_client

from chaincassette import Cassette, recorded, use_cassette
from chaincassette.live_guard import LiveCallBlocked, blocking
from chaincassette.registry import registered_hooks

USER = [{"role": "user", "content": "What is Docker?"}]


def frameworks(path: Path) -> list[str]:
    return [i.meta.get("framework", "?") for i in Cassette(path, mode="replay").interactions]


def chat_openai(url: str) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key=OPENAI_KEY, max_retries=0)


def test_a_chat_openai_call_records_exactly_one_interaction(
    tmp_path: Path, fake: FakeServer
) -> None:
    path = tmp_path / "lc.yaml"

    def run(url: str) -> list[str]:
        model = chat_openai(url)
        said = [model.invoke("Hi").content]
        said.append("".join(str(c.content) for c in model.stream("Stream it")))
        said.append(asyncio.run(model.ainvoke("Async")).content)
        return [str(s) for s in said]

    with use_cassette(path, mode="record"):
        recorded_answers = run(fake.url)
    assert fake.requests == 3
    assert frameworks(path) == ["langchain"] * 3
    with use_cassette(path, mode="replay"):
        assert run(DEAD + "/v1") == recorded_answers
    assert fake.requests == 3


def test_other_framework_clients_over_the_sdks_record_once(
    tmp_path: Path, fake: FakeServer
) -> None:
    from langchain_anthropic import ChatAnthropic
    from langchain_openai import OpenAIEmbeddings
    from llama_index.core.llms import ChatMessage
    from llama_index.embeddings.openai import OpenAIEmbedding
    from llama_index.llms.anthropic import Anthropic
    from llama_index.llms.openai import OpenAI

    path = tmp_path / "frameworks.yaml"
    with use_cassette(path, mode="record"):
        ChatAnthropic(
            model="claude-sonnet-4-5", base_url=fake.base, api_key=ANTHROPIC_KEY, max_retries=0
        ).invoke("Hi")
        OpenAIEmbeddings(
            model="text-embedding-3-small",
            base_url=fake.url,
            api_key=OPENAI_KEY,
            max_retries=0,
            check_embedding_ctx_length=False,
        ).embed_documents(["a", "b"])
        li = OpenAI(model="gpt-4o-mini", api_base=fake.url, api_key=OPENAI_KEY, max_retries=0)
        li.chat([ChatMessage(role="user", content="Hi")])
        "".join(r.delta or "" for r in li.stream_chat([ChatMessage(role="user", content="Go")]))
        Anthropic(
            model="claude-sonnet-4-5", base_url=fake.base, api_key=ANTHROPIC_KEY, max_retries=0
        ).complete("Hi")
        OpenAIEmbedding(
            model_name="text-embedding-3-small", api_base=fake.url, api_key=OPENAI_KEY
        ).get_text_embedding("a")
    assert fake.requests == 6
    assert frameworks(path) == ["langchain", "langchain", *["llama_index"] * 4]


def test_a_recorded_function_records_its_result_not_its_sdk_calls(
    tmp_path: Path, fake: FakeServer
) -> None:
    @recorded(ignore_args=["url"])
    def summarise(url: str, topic: str) -> str:
        completion = openai_client(url).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": topic}]
        )
        return str(completion.choices[0].message.content)

    path = tmp_path / "fn.yaml"
    with use_cassette(path, mode="record"):
        answer = summarise(fake.url, "Docker")
    assert [i.request["kind"] for i in Cassette(path, mode="replay").interactions] == ["call"]
    with use_cassette(path, mode="replay") as cassette:
        assert summarise(DEAD + "/v1", "Docker") == answer
    assert cassette.stats.unused == 0


@contextmanager
def guarded() -> Iterator[None]:
    """What ``--cassette-block-live`` installs: every adapter's guard, then the guard itself."""
    with ExitStack() as stack:
        for hook in registered_hooks():
            guard = getattr(hook, "guard", None)
            manager = guard() if guard is not None else None
            if manager is not None:
                stack.enter_context(manager)
        stack.enter_context(blocking("test sdk", "record it"))
        yield


def test_the_guard_refuses_a_raw_sdk_call_no_cassette_serves(fake: FakeServer) -> None:
    import anthropic

    with guarded():
        with pytest.raises(LiveCallBlocked, match=r"live openai SDK call \(POST /v1/chat"):
            openai_client(fake.url, max_retries=3).chat.completions.create(
                model="gpt-4o-mini", messages=USER
            )
        with pytest.raises(LiveCallBlocked, match="in test sdk"):
            asyncio.run(
                anthropic.AsyncAnthropic(base_url=fake.base, api_key=ANTHROPIC_KEY).messages.create(
                    model="claude-sonnet-4-5", max_tokens=8, messages=USER
                )
            )
    assert fake.connections == 0 and fake.requests == 0


def test_the_guard_lets_through_what_an_outer_layer_records(
    tmp_path: Path, fake: FakeServer
) -> None:
    """A ``CassetteCache`` without stream replay and a ``CassetteLLM`` given a path record
    their calls outside any block: the SDK underneath must not call them unserved."""
    from langchain_openai import ChatOpenAI
    from llama_index.core.llms import ChatMessage
    from llama_index.llms.openai import OpenAI

    from chaincassette.integrations.langchain import CassetteCache
    from chaincassette.integrations.llama_index import CassetteLLM

    with guarded():
        with CassetteCache(tmp_path / "cache.yaml", mode="record", stream_replay=False) as cache:
            ChatOpenAI(
                model="gpt-4o-mini", base_url=fake.url, api_key=OPENAI_KEY, cache=cache
            ).invoke("Hi")
        llm = OpenAI(model="gpt-4o-mini", api_base=fake.url, api_key=OPENAI_KEY, max_retries=0)
        CassetteLLM(llm, cassette=tmp_path / "li.yaml", mode="record").chat(
            [ChatMessage(role="user", content="Hi")]
        )
    assert fake.requests == 2
    assert frameworks(tmp_path / "cache.yaml") == ["langchain"]
    assert frameworks(tmp_path / "li.yaml") == ["llama_index"]
