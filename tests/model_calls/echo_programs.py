"""Programs that send a secret in a prompt the fake model repeats, run in fresh processes:
``python echo_programs.py SCENARIO CASSETTE MODE URL SECRET...``.

Each prints one JSON line: the answers the program got (invoked and streamed). Before its
block ends it copies the run's state folder (the journal of what it recorded) next to the
cassette, for the test to read byte by byte.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from chaincassette import use_cassette

KEY = "not-a-real-key"


def prompt(secrets: list[str]) -> str:
    return "my session is " + " and ".join(secrets) + " ok"


def langchain(url: str, secrets: list[str]) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key=KEY, max_retries=0)  # type: ignore[arg-type]
    text = prompt(secrets)
    return {
        "invoke": model.invoke(text).content,
        "stream": [chunk.content for chunk in model.stream(text + " streamed")],
    }


def llama_index(url: str, secrets: list[str]) -> dict[str, Any]:
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.llms.openai import OpenAI

    llm = OpenAI(model="gpt-4o-mini", api_base=url, api_key=KEY, max_retries=0)
    text = prompt(secrets)
    chat = llm.chat([ChatMessage(role="user", content=text)])
    stream = llm.stream_chat([ChatMessage(role="user", content=text + " streamed")])
    return {"invoke": chat.message.content, "stream": [chunk.delta for chunk in stream]}


SCENARIOS = {"langchain": langchain, "llama_index": llama_index}


def main() -> None:
    scenario, cassette, mode, url, *secrets = sys.argv[1:]
    with use_cassette(cassette, mode=mode):
        result = SCENARIOS[scenario](url, secrets)
        state = Path(os.environ["CHAINCASSETTE_STATE_DIR"])
        if state.exists():
            shutil.copytree(state, Path(cassette).parent / f"state-{mode}", dirs_exist_ok=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
