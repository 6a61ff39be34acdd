"""The resource-method fast path: a recorded answer served before the SDK builds its request,
with the key the wire would give, and everything it does not serve handed to the transport."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from fakes.wire import FakeServer
from sdk_clients import DEAD, anthropic_client, async_anthropic, async_openai, openai_client

from chaincassette import Cassette, use_cassette
from chaincassette.integrations.sdk import methods
from chaincassette.integrations.sdk.transport import KeyMismatchWarning

USER = [{"role": "user", "content": "What is Docker?"}]


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The endpoints whose answers the fast path built, in order."""
    seen: list[str] = []
    answer = methods._answer

    def counting(endpoint: Any, resource: Any, call: Any, *, is_async: bool) -> Any:
        seen.append(endpoint.name + (" async" if is_async else ""))
        return answer(endpoint, resource, call, is_async=is_async)

    monkeypatch.setattr(methods, "_answer", counting)
    yield seen


def everything(url: str, base: str) -> list[Any]:
    oa, an = openai_client(url), anthropic_client(base)
    ask = {"model": "claude-sonnet-4-5", "max_tokens": 16, "messages": USER}
    seen: list[Any] = [oa.chat.completions.create(model="gpt-4o-mini", messages=USER)]
    seen += list(oa.chat.completions.create(model="gpt-4o-mini", messages=USER, stream=True))
    seen.append(oa.responses.create(model="gpt-4.1", input="Hi"))
    seen += list(oa.responses.create(model="gpt-4.1", input="Hi", stream=True))
    seen.append(an.messages.create(**ask))
    seen += list(an.messages.create(**ask, stream=True))

    async def more() -> list[Any]:
        message = await async_anthropic(base).messages.create(**ask)
        stream = await async_openai(url).chat.completions.create(
            model="gpt-4o-mini", messages=USER, stream=True
        )
        return [message, *[chunk async for chunk in stream]]

    seen += asyncio.run(more())
    return [s.model_dump(mode="json") for s in seen]


def test_hits_are_built_at_the_method_as_the_sdk_builds_them(
    tmp_path: Path, fake: FakeServer, served: list[str]
) -> None:
    path = tmp_path / "m.yaml"
    with use_cassette(path, mode="record"):
        recorded = everything(fake.url, fake.base)
    assert served == []  # recording goes to the wire
    with use_cassette(path, mode="replay"):
        assert everything(DEAD + "/v1", DEAD) == recorded
    assert served == [
        "chat.completions",
        "chat.completions",
        "responses",
        "responses",
        "messages",
        "messages",
        "messages async",
        "chat.completions async",
    ]


def test_the_request_id_is_the_recorded_one(tmp_path: Path, fake: FakeServer) -> None:
    path = tmp_path / "m.yaml"
    with use_cassette(path, mode="record"):
        live = openai_client(fake.url).chat.completions.create(model="gpt-4o-mini", messages=USER)
    with use_cassette(path, mode="replay"):
        again = openai_client(DEAD + "/v1").chat.completions.create(
            model="gpt-4o-mini", messages=USER
        )
    assert again._request_id == live._request_id and str(live._request_id).startswith("req_")


def test_the_arguments_key_as_the_body_the_sdk_sends(tmp_path: Path, fake: FakeServer) -> None:
    """Models passed back as messages, tuples, explicit omissions, ``extra_body``, ``None``:
    the key from the arguments is the key of the body on the wire (a mismatch warns)."""
    client = openai_client(fake.url)
    with warnings.catch_warnings():
        warnings.simplefilter("error", KeyMismatchWarning)
        with use_cassette(tmp_path / "k.yaml", mode="record"):
            first = client.chat.completions.create(
                model="gpt-4o-mini",
                messages=USER,
                tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}],
            )
            history: list[Any] = [*USER, first.choices[0].message]  # the SDK's own model
            call_id = first.choices[0].message.tool_calls[0].id
            history.append({"role": "tool", "tool_call_id": call_id, "content": "ok"})
            client.chat.completions.create(
                model="gpt-4o-mini",
                messages=tuple(history),
                temperature=openai.omit,
                user=None,
                extra_body={"seed": 7},
                extra_headers={"x-trace": "abc"},
            )
            anthropic_client(fake.base).messages.create(
                model="claude-sonnet-4-5",
                max_tokens=8,
                messages=[{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                system=[{"type": "text", "text": "Terse."}],
            )
    assert len(Cassette(tmp_path / "k.yaml", mode="replay").interactions) == 3


def test_raw_response_and_recorded_errors_go_through_the_transport(
    tmp_path: Path, fake: FakeServer, served: list[str]
) -> None:
    path = tmp_path / "m.yaml"
    ask = [{"role": "user", "content": "RATE_LIMIT_ONCE raw"}]

    def run(url: str) -> list[Any]:
        client = openai_client(url, max_retries=1)
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=USER)
        retried = client.chat.completions.create(model="gpt-4o-mini", messages=ask)
        return [raw.parse().model_dump(), raw.headers.get("x-request-id"), retried.model_dump()]

    with use_cassette(path, mode="record"):
        recorded = run(fake.url)
    with use_cassette(path, mode="replay"):
        assert run(DEAD + "/v1") == recorded
    assert served == []  # raw, the 429 and its retry (sent by the SDK's own loop): the wire
