"""The SDK layer's patches are made once, by the first block, and ``undo_all`` puts back
``httpx``'s two ``send`` methods and the SDKs' request methods and back-off sleeps as they
were."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic._base_client as anthropic_base
import anthropic.resources.messages as anthropic_messages
import httpx
import openai._base_client as openai_base
import openai.resources.chat.completions as openai_chat
import openai.resources.responses as openai_responses
from fakes.wire import FakeServer
from sdk_clients import anthropic_client, async_openai, openai_client
from test_sdk_outermost import guarded

from chaincassette import use_cassette
from chaincassette.patching import undo_all

PATCHED = (
    httpx.Client,
    httpx.AsyncClient,
    openai_base.SyncAPIClient,
    openai_base.AsyncAPIClient,
    anthropic_base.SyncAPIClient,
    anthropic_base.AsyncAPIClient,
    openai_chat.Completions,
    openai_chat.AsyncCompletions,
    openai_responses.Responses,
    openai_responses.AsyncResponses,
    anthropic_messages.Messages,
    anthropic_messages.AsyncMessages,
)
USER = [{"role": "user", "content": "Hi"}]


def snapshot() -> dict[Any, dict[str, int]]:
    return {cls: {name: id(value) for name, value in vars(cls).items()} for cls in PATCHED}


def changed(before: dict[Any, dict[str, int]]) -> list[str]:
    after = snapshot()
    return sorted(
        f"{cls.__qualname__}.{name}"
        for cls, names in before.items()
        for name in names.keys() | after[cls].keys()
        if names.get(name) != after[cls].get(name)
    )


def test_every_attribute_is_restored_after_nested_async_and_guarded_use(
    tmp_path: Path, fake: FakeServer
) -> None:
    undo_all()  # earlier tests of the session installed them
    before = snapshot()
    with use_cassette(tmp_path / "outer.yaml", mode="record"):
        openai_client(fake.url).chat.completions.create(model="gpt-4o-mini", messages=USER)
        inside = changed(before)

        async def nested() -> None:
            async with use_cassette(tmp_path / "inner.yaml", mode="record"):
                await async_openai(fake.url).chat.completions.create(
                    model="gpt-4o-mini", messages=USER
                )

        asyncio.run(nested())
        with guarded():
            anthropic_client(fake.base).messages.create(
                model="claude-sonnet-4-5", max_tokens=8, messages=USER
            )
    assert inside == [
        "AsyncAPIClient._sleep_for_retry",
        "AsyncAPIClient._sleep_for_retry",
        "AsyncAPIClient.request",
        "AsyncAPIClient.request",
        "AsyncClient.send",
        "AsyncCompletions.create",
        "AsyncMessages.create",
        "AsyncResponses.create",
        "Client.send",
        "Completions.create",
        "Messages.create",
        "Responses.create",
        "SyncAPIClient._sleep_for_retry",
        "SyncAPIClient._sleep_for_retry",
        "SyncAPIClient.request",
        "SyncAPIClient.request",
    ]
    assert changed(before) == inside  # kept for the next block
    undo_all()
    assert changed(before) == []
    with guarded():  # the guard needs no answers served: only the transport and the shield
        assert "Client.send" in changed(before) and "Completions.create" not in changed(before)
    undo_all()
    assert changed(before) == []
