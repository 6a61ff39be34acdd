"""A Responses call chained by ``previous_response_id``, keyed by the call it continues.

Every live run mints new ``resp_…`` ids, so a recorded answer notes in its meta its id and
the call that got it (``call.id``, the same in every run); a later request naming that id
is keyed by that call (``{"answer_of": …}``). An id no recording gave is keyed as it is.
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
