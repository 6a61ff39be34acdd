"""A Responses call chained by ``previous_response_id``, keyed by the call it continues.

A ``resp_…`` id is minted afresh by every live run, so a turn that names the previous one
by it would get a new key on every re-record. Each Responses answer this layer records
notes in its meta the id it came with and the call that got it (``call.id``: its key and
occurrence, the same in every run of the program); a later request naming that id is keyed
by that call instead (``{"answer_of": "cassette-…-1"}``). Only the cassette's own metas are
read (``Cassette.recorded_metas``): nothing is remembered outside it. An id no recording
gave (a response from another run or program) is keyed as the id it is.
"""

from __future__ import annotations

from typing import Any

from chaincassette import Call, Cassette

LINKED = "previous_response_id"
API = "openai.responses"


def linked(cassette: Cassette, request: dict[str, Any]) -> dict[str, Any]:
    """``request`` with its ``previous_response_id`` named by the call that answered it."""
    params = request.get("params")
    if request.get("api") != API or not isinstance(params, dict):
        return request
    previous = params.get(LINKED)
    if not isinstance(previous, str):
        return request
    for meta in cassette.recorded_metas():
        if meta.get("response_id") == previous and isinstance(meta.get("answer_of"), str):
            return {**request, "params": {**params, LINKED: {"answer_of": meta["answer_of"]}}}
    return request


def whole_meta(call: Call, body: Any) -> dict[str, Any] | None:
    """What a recorded Responses answer notes in its meta (see the module docstring)."""
    if call.request.get("api") != API or not isinstance(body, dict):
        return None
    ident = body.get("id")
    return {"response_id": ident, "answer_of": call.id} if isinstance(ident, str) else None


def stream_meta(call: Call, events: list[Any]) -> dict[str, Any] | None:
    """``whole_meta`` for a stream: the response its ``response.created`` event announced."""
    for event in events[:3]:
        data = event.get("data") if isinstance(event, dict) else None
        if isinstance(data, dict) and data.get("type") == "response.created":
            return whole_meta(call, data.get("response"))
    return None
