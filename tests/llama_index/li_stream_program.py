"""Two chat calls through a real LlamaIndex ``OpenAI`` client, streamed or not, in a cassette.

``python li_stream_program.py MODE CASSETTE URL stream|plain [raw]`` prints, as JSON, every
chunk (or response) the program saw: delta, content, additional kwargs and the type of
``raw``. Run once to record against the fake server, then again to replay.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from llama_index.core.llms import ChatMessage
from llama_index.llms.openai import OpenAI

from chaincassette.integrations.llama_index import CassetteLLM

QUESTIONS = ("Tell me about the weather in Oslo please", "And about Lima, in a few more words")


def seen(response: Any) -> dict[str, Any]:
    return {
        "delta": response.delta,
        "content": response.message.content,
        "role": response.message.role.value,
        "additional_kwargs": json.loads(json.dumps(response.additional_kwargs, default=str)),
        "raw": sorted(response.raw)
        if isinstance(response.raw, dict)
        else type(response.raw).__name__,
    }


async def main(mode: str, cassette: str, url: str, kind: str, raw: bool) -> list[Any]:
    options = {"raw_stream_chunks": True} if raw else {}
    llm = CassetteLLM(
        OpenAI(model="gpt-4o-mini", api_base=url, max_retries=0),
        cassette=cassette,
        mode=mode,
        **options,
    )
    sync, later = ([ChatMessage(role="user", content=q)] for q in QUESTIONS)
    if kind == "plain":
        return [seen(llm.chat(sync)), seen(await llm.achat(later))]
    first = [seen(chunk) for chunk in llm.stream_chat(sync)]
    second = [seen(chunk) async for chunk in await llm.astream_chat(later)]
    return [first, second]


if __name__ == "__main__":
    mode, cassette, url, kind, *rest = sys.argv[1:]
    print(json.dumps(asyncio.run(main(mode, cassette, url, kind, rest == ["raw"]))))
