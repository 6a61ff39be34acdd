"""A LlamaIndex ``Workflow`` step with ``num_workers=4`` replays its answers in the recorded order.

Twelve questions go to a step that four workers run, each asking a real ``OpenAI`` LLM of the
fake provider, which takes a random time; the events are collected in the
order they arrive, as ``ctx.collect_events`` gives them. When recording, a question waits
for a free worker, so it begins after others completed; replayed answers are ready at once,
so on replay the workers free up sooner and every question is in flight together: a call
that in the recording began after another had completed must still be handed back after it.
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.nowhere import closed_port_url
from fakes.turns import Reply, Turn
from fakes.wire import FakeServer
from llama_index.core.llms import ChatMessage
from llama_index.core.workflow import Context, Event, StartEvent, StopEvent, Workflow, step
from llama_index.llms.openai import OpenAI

from chaincassette import use_cassette

QUESTIONS = 12
REPLAYS = 8
RECORDINGS = 4  # each frees the workers in another order


def timed(turn: Turn) -> Reply:
    """Answers after a random time: each recording frees the workers in another order."""
    time.sleep(random.uniform(0.02, 0.25))
    return Reply(text=f"Answer to {turn.last_user}")


class Question(Event):
    number: int


class Answer(Event):
    text: str


class Pool(Workflow):
    """Fans the questions out to four workers and collects the answers as they come."""

    url: str = ""

    @step
    async def fan_out(self, ctx: Context, ev: StartEvent) -> Question | None:
        for number in range(QUESTIONS):
            ctx.send_event(Question(number=number))
        return None

    @step(num_workers=4)
    async def ask(self, ev: Question) -> Answer:
        llm = OpenAI(
            model="gpt-4o-mini", api_base=self.url, api_key="not-a-real-key", max_retries=0
        )
        if ev.number % 2:
            return Answer(text=(await llm.acomplete(f"Question {ev.number}")).text)
        reply = await llm.achat([ChatMessage(role="user", content=f"Question {ev.number}")])
        return Answer(text=str(reply.message.content))

    @step
    async def collect(self, ctx: Context, ev: Answer) -> StopEvent | None:
        answers = ctx.collect_events(ev, [Answer] * QUESTIONS)
        return None if answers is None else StopEvent(result=[a.text for a in answers])


def run(url: str) -> Any:
    async def main() -> Any:
        pool = Pool(timeout=60)
        pool.url = url
        return await pool.run()

    return asyncio.run(main())


def completed(cassette: Any) -> list[str]:
    """The answers in the order the recording completed them (``meta.order.done``)."""
    done = {asked(i.request): i.meta["order"]["done"] for i in cassette.interactions}
    return [f"Answer to {prompt}" for prompt in sorted(done, key=done.__getitem__)]


@pytest.mark.parametrize("recording", range(RECORDINGS))
def test_the_workers_answers_arrive_in_the_recorded_order(tmp_path: Path, recording: int) -> None:
    path = tmp_path / "pool.yaml"
    with FakeServer(timed) as fake, use_cassette(path, mode="record") as cassette:
        recorded = run(fake.url)
    order = completed(cassette)
    assert sorted(recorded) == sorted(order) and order != sorted(order, key=number)
    dead = closed_port_url()
    for _ in range(REPLAYS):
        with use_cassette(path) as replay:
            assert run(dead) == order
        # not ``replay_order.given_up == 0``: that says every predecessor began within
        # ``order.START_GRACE`` (0.25 s), a timing the full suite's load broke once; the
        # order above is what the bounded wait must keep, given up or not
        assert replay.stats.missed == 0


def asked(request: dict[str, Any]) -> str:
    return str(request.get("prompt") or request["messages"][-1]["content"])


def number(answer: str) -> int:
    return int(answer.split()[-1])
