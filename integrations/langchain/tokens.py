"""Token callbacks a provider fires inside a whole (non-streamed) answer, recorded and fired again.

Some chat models stream from their provider even for ``invoke``: ``ChatOllama._generate``
aggregates a stream and calls ``run_manager.on_llm_new_token`` for each chunk, so a
``stream_mode="messages"`` consumer or a token handler sees the answer arrive live. A replay
returns the recorded whole answer, which would fire none. So while a live ``_generate``
runs, a handler on its run manager (``handlers``: the list LangChain hands each event of the
run to) keeps each token and its chunk, stored with the answer as ``new_tokens``; a hit
fires them again, in order, before its answer is returned. An answer that fired no token
stores nothing more.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGenerationChunk, GenerationChunk

from chaincassette import Call
from chaincassette.decoding import decoded

from .serde import decode_generation, encode_generation, to_json

FIELD = "new_tokens"


class _Tokens(BaseCallbackHandler):
    """Keeps the tokens fired for one run, each with its chunk (encoded as it comes)."""

    run_inline = True
    raise_error = False

    def __init__(self, run_id: UUID | None) -> None:
        self.run_id = run_id
        self.fired: list[dict[str, Any]] = []

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if self.run_id is not None and run_id != self.run_id:
            return
        entry: dict[str, Any] = {"token": to_json(token)}
        if chunk is not None:
            entry["chunk"] = encode_generation(chunk)
        self.fired.append(entry)


@contextmanager
def capturing(run_manager: Any) -> Iterator[list[dict[str, Any]]]:
    """The chunks of the tokens fired on ``run_manager`` while the block runs."""
    handlers = getattr(run_manager, "handlers", None)
    if not isinstance(handlers, list):
        yield []
        return
    tokens = _Tokens(getattr(run_manager, "run_id", None))
    handlers.append(tokens)
    try:
        yield tokens.fired
    finally:
        if tokens in handlers:
            handlers.remove(tokens)


def stored(encoded: dict[str, Any], fired: list[dict[str, Any]]) -> dict[str, Any]:
    """The recording of a whole answer, with the tokens fired while it was made."""
    return {**encoded, FIELD: list(fired)} if fired else encoded


def _recorded(response: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(token, chunk or ``None``) of each recorded token."""
    return [
        (entry["token"], decode_generation(entry["chunk"]) if "chunk" in entry else None)
        for entry in response.get(FIELD) or []
    ]


def fire(call: Call, response: dict[str, Any], run_manager: Any) -> None:
    """Fire a hit's recorded tokens on ``run_manager``, as the live provider did."""
    if run_manager is None or not response.get(FIELD):
        return
    for token, chunk in decoded(call, _recorded, response):
        run_manager.on_llm_new_token(token, chunk=chunk)


async def afire(call: Call, response: dict[str, Any], run_manager: Any) -> None:
    if run_manager is None or not response.get(FIELD):
        return
    for token, chunk in decoded(call, _recorded, response):
        await run_manager.on_llm_new_token(token, chunk=chunk)
