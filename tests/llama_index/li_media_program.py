"""One chat call with an image through a real LlamaIndex ``OpenAI`` client, in a cassette.

``python li_media_program.py MODE CASSETTE URL IMAGE [inline]`` asks what the image at
``IMAGE`` is (``ImageBlock(path=IMAGE)``; ``inline``: its bytes, ``ImageBlock(image=...)``)
and prints, as JSON, the answer (or the miss: its cause and message) and the cassette's stats.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from llama_index.core.llms import ChatMessage, ImageBlock, TextBlock
from llama_index.llms.openai import OpenAI

from chaincassette import CassetteMiss
from chaincassette.integrations.llama_index import CassetteLLM


def main(mode: str, cassette: str, url: str, image: str, inline: bool) -> dict[str, Any]:
    llm = CassetteLLM(
        OpenAI(model="gpt-4o-mini", api_base=url, max_retries=0), cassette=cassette, mode=mode
    )
    picture = ImageBlock(image=Path(image).read_bytes()) if inline else ImageBlock(path=image)
    message = ChatMessage(role="user", blocks=[TextBlock(text="What is it?"), picture])
    try:
        answer: dict[str, Any] = {"content": llm.chat([message]).message.content}
    except CassetteMiss as miss:
        answer = {"miss": miss.cause, "message": str(miss)}
    stats = llm.cassette.stats
    return {**answer, "replayed": stats.replayed, "recorded": stats.recorded}


if __name__ == "__main__":
    mode, cassette, url, image, *rest = sys.argv[1:]
    print(json.dumps(main(mode, cassette, url, image, rest == ["inline"])))
