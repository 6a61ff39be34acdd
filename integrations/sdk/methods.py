"""A recorded answer served at the SDK's resource method, before the SDK builds its request.

An SDK's ``maybe_transform`` and HTTP round trip cost more than a whole ``ChatOpenAI`` replay
(1 ms for one message, 20 ms for fifty), so the ``create`` methods that carry nearly every
model call key it from their keyword arguments (``plain_body``) and build the recorded
answer with the SDK's own last parsing step. Everything else (a miss, a recorded error
status) runs the SDK's method with the call handed to the transport (``transport.handing``).
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from chaincassette import Call, RecordMode, serving_cassette
from chaincassette.cancellation import Replayed
from chaincassette.layers import answered_above
from chaincassette.order import NO_TURN, Handing, NoTurn
from chaincassette.patching import Patches
from chaincassette.streams import replays_as_stream

from . import bodies, links, requests, trace, transport, wire

#: Keyword arguments of a ``create`` that are not its body (the SDKs send them elsewhere).
NOT_BODY = frozenset({"extra_headers", "extra_query", "extra_body", "timeout", "user_profile_id"})
#: The header ``with_raw_response``/``with_streaming_response`` add: they want the raw
#: response, which only the transport path gives.
RAW_RESPONSE = "x-stainless-raw-response"


@dataclass(frozen=True)
class Endpoint:
    """One resource method served here, and how the SDK builds its answer."""

    sdk: str
    name: str  #: ``chat.completions``, as the transport names it
    path: str
    module: str  #: where the resource classes live
    classes: tuple[str, str]  #: the sync and async resource
    required: tuple[str, ...]
    build: requests.Builder
    answer: tuple[str, str]  #: (module, class) a whole answer is parsed into
    chunk: tuple[str, str]  #: (module, name) each streamed event is parsed into
    #: (attribute, response header) the SDK sets on a parsed answer (``_request_id``…)
    ids: tuple[tuple[str, str], ...]


ENDPOINTS = (
    Endpoint(
        "openai",
        "chat.completions",
        "/chat/completions",
        "openai.resources.chat.completions",
        ("Completions", "AsyncCompletions"),
        ("model", "messages"),
        requests.chat_completions,
        ("openai.types.chat", "ChatCompletion"),
        ("openai.types.chat", "ChatCompletionChunk"),
        (("_request_id", "x-request-id"),),
    ),
    Endpoint(
        "openai",
        "responses",
        "/responses",
        "openai.resources.responses",
        ("Responses", "AsyncResponses"),
        ("model",),
        requests.responses,
        ("openai.types.responses", "Response"),
        ("openai.types.responses", "ResponseStreamEvent"),
        (("_request_id", "x-request-id"),),
    ),
    Endpoint(
        "anthropic",
        "messages",
        "/v1/messages",
        "anthropic.resources.messages",
        ("Messages", "AsyncMessages"),
        ("model", "messages", "max_tokens"),
        requests.anthropic_messages,
        ("anthropic.types", "Message"),
        ("anthropic.types", "RawMessageStreamEvent"),
        (("_request_id", "request-id"), ("_workspace_id", "anthropic-workspace-id")),
    ),
)


# -- the body the SDK would send -------------------------------------------------------------


class NotPlain(Exception):
    """A value the SDK's transform would rewrite in a way this module does not follow."""


def _is_sentinel(value: Any) -> bool:
    """The SDKs' ``NotGiven``/``Omit``: an argument left out (matched by name: no import)."""
    kind = type(value)
    return kind.__name__ in ("NotGiven", "Omit") and kind.__module__.split(".")[0] in (
        "openai",
        "anthropic",
    )


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotPlain(key)
            if not _is_sentinel(item):
                out[key] = _plain(item)
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump) and hasattr(type(value), "model_fields"):  # a pydantic model
        exclude = getattr(value, "__api_exclude__", None)
        return dump(exclude_unset=True, mode="json", exclude=exclude)
    raise NotPlain(type(value).__name__)  # an iterator, a file, a date: the SDK's job


def plain_body(endpoint: Endpoint, kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON body the SDK would send for ``kwargs`` (omitted arguments dropped, models
    dumped as its transform dumps them, ``extra_body`` merged on top), or ``None``."""
    if any(name not in kwargs or _is_sentinel(kwargs[name]) for name in endpoint.required):
        return None
    body = {k: v for k, v in kwargs.items() if k not in NOT_BODY and not _is_sentinel(v)}
    extra = kwargs.get("extra_body")
    if isinstance(extra, Mapping):
        body.update(extra)
    elif extra is not None and not _is_sentinel(extra):
        return None
    try:  # plain JSON already (the usual case): the round trip the wire makes, at C speed
        plain: dict[str, Any] = json.loads(json.dumps(body))
        return plain
    except (TypeError, ValueError):
        pass
    try:
        return {k: _plain(v) for k, v in body.items() if not _is_sentinel(v)}
    except NotPlain:
        return None


def _wants_raw(kwargs: Mapping[str, Any]) -> bool:
    headers = kwargs.get("extra_headers")
    return isinstance(headers, Mapping) and any(str(k).lower() == RAW_RESPONSE for k in headers)


# -- one call ----------------------------------------------------------------------------------


def _begin(endpoint: Endpoint, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call | None:
    """The call a cassette serves here; ``None`` runs the SDK's method untouched (no block,
    an outer layer answering, a body this module cannot read)."""
    if args or answered_above() or _wants_raw(kwargs):
        return None
    cassette = serving_cassette()
    if cassette is None or cassette.mode is RecordMode.OFF:
        return None
    body = plain_body(endpoint, kwargs)
    if body is None:
        return None
    request = links.linked(cassette, endpoint.build(body, endpoint.path))
    call = cassette.begin(request, meta={"framework": endpoint.sdk, "endpoint": endpoint.name})
    trace.note(call, endpoint.sdk, endpoint.name, request)
    return call


def _served_here(call: Call) -> bool:
    """Whether the recording is an answer this module builds: a 2xx JSON body or a stream
    (an error that came at its first event is raised there, as the SDK's stream raised it)."""
    stored = call.response
    if replays_as_stream(call):
        return True
    return (
        wire.is_whole_response(stored)
        and 200 <= int(stored.get("status") or 0) < 300
        and isinstance(stored.get("body"), dict)
    )


def _load(where: tuple[str, str]) -> Any:
    return getattr(importlib.import_module(where[0]), where[1])


def _answer(endpoint: Endpoint, resource: Any, call: Call, *, is_async: bool) -> Any:
    """The SDK's own object for a recorded answer, built as the SDK builds it."""
    client = resource._client
    stored = call.response
    if replays_as_stream(call):
        stream_class = _load((endpoint.sdk, "AsyncStream" if is_async else "Stream"))
        body = bodies.AReplayBody(call) if is_async else bodies.ReplayBody(call)
        request = httpx.Request("POST", client.base_url.join(endpoint.path.lstrip("/")))
        response = httpx.Response(200, headers={"content-type": wire.SSE_TYPE}, stream=body)
        response.request = request
        return stream_class(cast_to=_load(endpoint.chunk), response=response, client=client)
    headers = dict(stored.get("headers") or {})
    response = httpx.Response(int(stored["status"]))
    parsed = client._process_response_data(
        data=stored["body"], cast_to=_load(endpoint.answer), response=response
    )
    if hasattr(type(parsed), "model_fields"):  # as the SDK's ``add_request_id`` does
        for attribute, header in endpoint.ids:
            setattr(parsed, attribute, headers.get(header))
    return parsed


def _turn(call: Call) -> Handing | NoTurn | Replayed:
    """A whole answer waits its turn here; a stream waits at its first event (``streams``)."""
    return NO_TURN if replays_as_stream(call) else call.turn()


def _wrap_sync(endpoint: Endpoint, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = _begin(endpoint, args, kwargs)
        if call is None:
            return original(self, *args, **kwargs)
        if call.hit and _served_here(call):
            with _turn(call):
                return _answer(endpoint, self, call, is_async=False)
        with transport.handing(call):
            return original(self, *args, **kwargs)

    return create


def _wrap_async(endpoint: Endpoint, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = _begin(endpoint, args, kwargs)
        if call is None:
            return await original(self, *args, **kwargs)
        if call.hit and _served_here(call):
            async with _turn(call):
                return _answer(endpoint, self, call, is_async=True)
        with transport.handing(call):
            return await original(self, *args, **kwargs)

    return create


# -- installing -------------------------------------------------------------------------------


def _applier(sdk: str) -> Callable[[Patches], None]:
    def apply(patches: Patches) -> None:
        for endpoint in ENDPOINTS:
            if endpoint.sdk != sdk:
                continue
            try:
                module = importlib.import_module(endpoint.module)
            except ImportError:  # another SDK version: the transport serves it alone
                continue
            for name, wrap in zip(endpoint.classes, (_wrap_sync, _wrap_async), strict=True):
                cls = getattr(module, name, None)
                original = getattr(cls, "__dict__", {}).get("create")
                if cls is not None and callable(original):
                    patches.replace(cls, "create", wrap(endpoint, original))

    return apply


PATCHES = {sdk: Patches(_applier(sdk)) for sdk in ("openai", "anthropic")}
