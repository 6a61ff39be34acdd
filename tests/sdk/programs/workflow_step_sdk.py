"""A user's LlamaIndex workflow whose step calls the Anthropic SDK itself (no chaincassette).

``Review.grade`` asks ``anthropic.Anthropic().messages.create`` to grade a draft, then
streams a verdict with ``messages.stream(...)``; ``Review.polish`` asks the async client.
Everything reaches ``ANTHROPIC_BASE_URL``.
"""

import asyncio
import sys

import anthropic
from llama_index.core.workflow import Event, StartEvent, StopEvent, Workflow, step


class Graded(Event):
    grade: str
    verdict: str


class Review(Workflow):
    @step
    async def grade(self, ev: StartEvent) -> Graded:
        client = anthropic.Anthropic(max_retries=0)
        message = client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=64,
            system="You grade drafts.",
            messages=[{"role": "user", "content": f"Grade this draft: {ev.draft}"}],
        )
        with client.messages.stream(
            model="claude-sonnet-4-5",
            max_tokens=64,
            messages=[{"role": "user", "content": f"One-word verdict on: {ev.draft}"}],
        ) as stream:
            verdict = "".join(stream.text_stream)
        print(f"graded by {message.id} ({message.usage.input_tokens} tokens in)")
        return Graded(grade=message.content[0].text, verdict=verdict)

    @step
    async def polish(self, ev: Graded) -> StopEvent:
        client = anthropic.AsyncAnthropic(max_retries=0)
        message = await client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=64,
            messages=[{"role": "user", "content": f"Polish after: {ev.grade}"}],
        )
        print(f"polished by {message.id}")
        return StopEvent(result=f"{ev.grade} | {ev.verdict} | {message.content[0].text}")


async def main() -> None:
    print(await Review(timeout=30).run(draft=sys.argv[1]))


asyncio.run(main())
