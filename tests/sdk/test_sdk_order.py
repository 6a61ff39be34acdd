"""Provider SDK calls gathered concurrently replay in the order they completed when recorded.

The real ``openai.AsyncOpenAI`` against the fake wire server, through an httpx transport
that makes each answer take the time of its subject (the ``slow`` question is asked first
and answered last): ``asyncio.gather`` of three ``chat.completions.create`` calls, whole
(served at the resource method) and streamed (served at the transport, event by event).
Every replay (two, against a dead port) completes them in the recorded order.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakes.wire import FakeServer
from sdk_clients import DEAD, OPENAI_KEY

from chaincassette import use_cassette

LATENCY = {"slow": 0.4, "mid": 0.2, "fast": 0.05}
START_ORDER = ["slow", "mid", "fast"]


class Latent(httpx.AsyncHTTPTransport):
    """The network: an answer about a subject takes that subject's time to arrive."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content or b"{}")
        text = json.dumps(body.get("messages"))
        await asyncio.sleep(next(LATENCY[s] for s in START_ORDER if s in text))
        return await super().handle_async_request(request)


async def ask_all(url: str, *, stream: bool) -> dict[str, Any]:
    import openai

    client = openai.AsyncOpenAI(
        base_url=url, api_key=OPENAI_KEY, http_client=httpx.AsyncClient(transport=Latent())
    )
    completed: list[str] = []

    async def ask(subject: str) -> str:
        messages = [{"role": "user", "content": f"A joke about the {subject} one"}]
        if stream:
            events = await client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, stream=True
            )
            text = "".join([c.choices[0].delta.content or "" async for c in events if c.choices])
        else:
            done = await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
            text = done.choices[0].message.content or ""
        completed.append(subject)
        return text

    answers = await asyncio.gather(*(ask(s) for s in START_ORDER))
    await client.close()
    return {"completed": completed, "answers": answers}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_gathered_sdk_calls_replay_in_the_recorded_order(
    tmp_path: Path, fake: FakeServer, stream: bool
) -> None:
    path = tmp_path / "sdk.yaml"
    with use_cassette(path, mode="record"):
        recorded = asyncio.run(ask_all(fake.url, stream=stream))
    assert recorded["completed"] != START_ORDER
    sent = fake.requests
    for _ in range(2):
        with use_cassette(path, mode="replay") as cassette:
            replayed = asyncio.run(ask_all(DEAD + "/v1", stream=stream))
        assert replayed == recorded
        assert cassette.replay_order.given_up == 0 and cassette.stats.replayed == 3
    assert fake.requests == sent, "a replay reached the server"
