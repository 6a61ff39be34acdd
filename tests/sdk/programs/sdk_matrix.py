"""A program calling both SDKs every way: sync, async, streamed, the ``.stream()`` helpers,
the Responses API and embeddings, with ``asyncio.gather``; prints everything it received."""

import asyncio
import json

import anthropic
import openai

ASK = [{"role": "user", "content": "What is Docker?"}]
CLAUDE = {"model": "claude-sonnet-4-5", "max_tokens": 64}


def dump(value):
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else value


def sync_calls():
    oa, an = openai.OpenAI(max_retries=0), anthropic.Anthropic(max_retries=0)
    seen = [dump(oa.chat.completions.create(model="gpt-4o-mini", messages=ASK))]
    stream = oa.chat.completions.create(
        model="gpt-4o-mini", messages=ASK, stream=True, stream_options={"include_usage": True}
    )
    seen += [dump(chunk) for chunk in stream]
    with oa.chat.completions.stream(model="gpt-4o-mini", messages=ASK) as helper:
        seen.append(dump(helper.get_final_completion()))
    seen.append(dump(oa.responses.create(model="gpt-4.1", input="Hi", instructions="Brief.")))
    with oa.responses.stream(model="gpt-4.1", input="Stream hi") as helper:
        seen += [event.type for event in helper]
    seen.append(dump(oa.embeddings.create(model="text-embedding-3-small", input=["a", "b"])))
    seen.append(dump(an.messages.create(**CLAUDE, messages=ASK, system="Terse.")))
    seen += [dump(event) for event in an.messages.create(**CLAUDE, messages=ASK, stream=True)]
    with an.messages.stream(**CLAUDE, messages=ASK) as helper:
        seen.append("".join(helper.text_stream))
    return seen


async def async_calls():
    oa, an = openai.AsyncOpenAI(max_retries=0), anthropic.AsyncAnthropic(max_retries=0)

    async def both(question):
        ask = [{"role": "user", "content": question}]
        chat = await oa.chat.completions.create(model="gpt-4o-mini", messages=ask)
        chunks = [
            c
            async for c in await oa.chat.completions.create(
                model="gpt-4o-mini", messages=ask, stream=True
            )
        ]
        message = await an.messages.create(**CLAUDE, messages=ask)
        async with an.messages.stream(**CLAUDE, messages=ask) as helper:
            text = "".join([t async for t in helper.text_stream])
        vectors = await oa.embeddings.create(model="text-embedding-3-small", input=question)
        return [dump(chat), [dump(c) for c in chunks], dump(message), text, dump(vectors)]

    return await asyncio.gather(*(both(q) for q in ("one", "two", "three")))


print(json.dumps({"sync": sync_calls(), "async": asyncio.run(async_calls())}, sort_keys=True))
