"""Record and replay provider SDK calls at ``httpx.Client.send`` and ``AsyncClient.send``.

Every client the ``openai`` and ``anthropic`` packages build sends through these two methods.
A request is served when a provider SDK sent it (``wire.client_of``), no outer layer answers
it (``chaincassette.layers``) and a cassette serves this context: a hit becomes an
``httpx.Response`` the SDK parses itself (an error status raises the SDK's own error), a
miss runs live and is recorded (error bodies redacted), and the SDK gets what a replay
would give it. Anything else passes through untouched.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx

from chaincassette import Call, RecordMode, serving_cassette
from chaincassette.decoding import malformed
from chaincassette.layers import answered_above, answering
from chaincassette.live_guard import check_live
from chaincassette.patching import Patches
from chaincassette.streams import replays_as_stream

from . import bodies, links, requests, retries, trace, wire

#: Statuses an SDK retries; their replays carry ``retry-after-ms: 1`` so that a replayed
#: retry does not wait the back-off the live one waited.
RETRIED_STATUSES = frozenset({408, 409, 429})


class KeyMismatchWarning(UserWarning):
    """The body an SDK sent keys differently from the arguments its method was given: the
    recording is kept under the arguments' key (what a replay computes), but this is a
    chaincassette bug worth reporting."""


@dataclass
class _Handoff:
    call: Call
    taken: bool = False


_handed: ContextVar[_Handoff | None] = ContextVar("chaincassette_sdk_handed", default=None)


@contextmanager
def handing(call: Call) -> Iterator[None]:
    """The next provider SDK request sent here is ``call`` (begun by ``methods`` from the
    method's arguments): served or recorded as it, not begun again. Later requests of the
    same method (its retries) are calls of their own, as they were live."""
    handoff = _Handoff(call)
    token = _handed.set(handoff)
    try:
        yield
    finally:
        _handed.reset(token)
        if not handoff.taken:
            call.abandon()  # the SDK raised before it sent anything: nothing to keep


# -- installing -------------------------------------------------------------------------------


def _apply(patches: Patches) -> None:
    patches.replace(httpx.Client, "send", _wrap_sync(httpx.Client.send))
    patches.replace(httpx.AsyncClient, "send", _wrap_async(httpx.AsyncClient.send))


PATCHES = Patches(_apply)
install = PATCHES.install


# -- which requests are served ----------------------------------------------------------------


def _client(request: httpx.Request) -> wire.Client | None:
    """The SDK behind ``request`` when this layer should look at it."""
    if answered_above():
        return None
    return wire.client_of(request.headers)


def _begin(request: httpx.Request, client: wire.Client, content: bytes) -> Call | None:
    """The call for ``request`` in the serving cassette; ``None`` lets it through.

    Anything chaincassette raises here (a miss, the guard, an unattributable thread) goes
    past the SDK's retry loop (``retries``), straight to the caller.
    """
    handoff = _handed.get()
    if handoff is not None and not handoff.taken:
        handoff.taken = True
        if handoff.call.recording:
            _check_key(handoff.call, request, client, content)
        return handoff.call
    try:
        cassette = serving_cassette()
        if cassette is None:
            check_live(f"{client.sdk} SDK call ({request.method} {request.url.path})")
            return None
        if cassette.mode is RecordMode.OFF:
            return None
        canonical, endpoint = _canonical(request, client, content)
        canonical = links.linked(cassette, canonical)
        meta = {"framework": client.sdk, "endpoint": endpoint}
        call = cassette.begin(canonical, meta=meta)
        trace.note(call, client.sdk, endpoint, canonical)
        return call
    except Exception as error:
        retries.raise_past_retries(error)


def _canonical(
    request: httpx.Request, client: wire.Client, content: bytes
) -> tuple[dict[str, Any], str]:
    content_type = str(request.headers.get("content-type") or "")
    body = wire.json_body(content) if content_type.startswith("application/json") else None
    return requests.canonical_request(
        client,
        request.method,
        request.url.path,
        dict(request.url.params),
        body,
        content,
        content_type,
    )


def _check_key(call: Call, request: httpx.Request, client: wire.Client, content: bytes) -> None:
    """Recording only: the wire's key must be the arguments' key (see ``KeyMismatchWarning``)."""
    canonical = links.linked(call.cassette, _canonical(request, client, content)[0])
    wire_key = call.cassette.key_for(canonical)
    if wire_key != call.key:
        warnings.warn(
            KeyMismatchWarning(
                f"{client.sdk} {request.url.path}: the request body keys as {wire_key[:12]}, "
                f"its arguments as {call.key[:12]}; recorded under the arguments' key"
            ),
            stacklevel=2,
        )


# -- the wrappers ---------------------------------------------------------------------------


def _wrap_sync(original: Callable[..., httpx.Response]) -> Callable[..., httpx.Response]:
    @functools.wraps(original)
    def send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        client = _client(request)
        call = _begin(request, client, request.read()) if client is not None else None
        if call is None:
            retries.live_attempt()
            return original(self, request, **kwargs)
        if call.hit:
            retries.replayed_attempt()
            if replays_as_stream(call):  # its turn comes at the first event (``streams``)
                return _replayed(call, request, is_async=False)
            with call.turn():
                return _replayed(call, request, is_async=False)
        try:
            call.started += retries.live_attempt()  # the SDK's back-off: not the call's time
            with answering():
                live = original(self, request, **kwargs)
                if not wire.is_sse(live.status_code, live.headers):
                    live.read()
        except BaseException as error:
            call.fail(error)  # a transport error is an answer too: replayed as raised
            raise
        return _kept(call, request, live, bodies.RecordingBody)

    return send


def _wrap_async(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def send(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> Any:
        client = _client(request)
        call = _begin(request, client, await request.aread()) if client is not None else None
        if call is None:
            await retries.live_attempt_async()
            return await original(self, request, **kwargs)
        if call.hit:
            retries.replayed_attempt()
            if replays_as_stream(call):
                return _replayed(call, request, is_async=True)
            async with call.turn():
                return _replayed(call, request, is_async=True)
        try:
            call.started += await retries.live_attempt_async()
            with answering():
                live = await original(self, request, **kwargs)
                if not wire.is_sse(live.status_code, live.headers):
                    await live.aread()
        except BaseException as error:
            call.fail(error)
            raise
        return _kept(call, request, live, bodies.ARecordingBody)

    return send


# -- responses --------------------------------------------------------------------------------


def _response(
    request: httpx.Request,
    status: int,
    headers: dict[str, str],
    *,
    content: bytes | None = None,
    stream: httpx.SyncByteStream | httpx.AsyncByteStream | None = None,
    elapsed: timedelta | None = None,
) -> httpx.Response:
    response = httpx.Response(status, headers=headers, content=content, stream=stream)
    response.request = request
    response.elapsed = elapsed if elapsed is not None else timedelta(0)
    return response


def _kept(
    call: Call, request: httpx.Request, live: httpx.Response, recording: Callable[..., Any]
) -> httpx.Response:
    """Record a live response (an SSE body as ``recording`` reads it); the SDK gets what a
    replay of it gives."""
    if wire.is_sse(live.status_code, live.headers):
        body = recording(call, live, _stream_meta(call))
        return _response(request, 200, {"content-type": wire.SSE_TYPE}, stream=body)
    stored = wire.stored_response(live.status_code, live.headers, live.content)
    if live.status_code >= 400:  # "Incorrect API key provided: sk-…" must not reach the file
        stored = call.cassette.redactor.redact(stored)
    kept = call.record(stored, meta=links.whole_meta(call, stored.get("body")))
    status, headers, content = wire.response_parts(kept)
    return _response(request, status, headers, content=content, elapsed=live.elapsed)


def _replayed(call: Call, request: httpx.Request, *, is_async: bool) -> httpx.Response:
    stored = call.response
    if replays_as_stream(call):  # an error that came at the first event is raised there
        body = bodies.AReplayBody(call) if is_async else bodies.ReplayBody(call)
        return _response(request, 200, {"content-type": wire.SSE_TYPE}, stream=body)
    if not wire.is_whole_response(stored):
        stored = _error_exchange(call)
    status, headers, content = wire.response_parts(stored)
    if status in RETRIED_STATUSES or status >= 500:
        headers["retry-after-ms"] = "1"
    return _response(request, status, headers, content=content)


def _error_exchange(call: Call) -> dict[str, Any]:
    """An interaction whose response is an error (``chaincassette fault``, or a transport
    error recorded live): an HTTP error the SDK raises as its own class, or, without a
    status (a timeout, a refused connection), the recorded exception raised again."""
    response = call.response
    error = response.get("error") if isinstance(response, dict) else None
    status = error.get("status") if isinstance(error, dict) else None
    if not isinstance(error, dict) or not isinstance(status, int):
        call.raise_if_error()  # raised inside ``send``: the SDK retries it as it did live
        shape = TypeError("it is neither an HTTP response (status, headers, body) nor an error")
        retries.raise_past_retries(malformed(call, shape))  # a hand edit: no retry, no wrapping
    body = error.get("body")
    if not isinstance(body, dict):
        body = {"message": error.get("message"), "type": error.get("type")}
    headers = {str(k): str(v) for k, v in dict(error.get("headers") or {}).items()}
    return {"status": status, "headers": headers, "body": {"error": body.get("error", body)}}


def _stream_meta(call: Call) -> Callable[[list[Any]], dict[str, Any] | None]:
    def meta(chunks: list[Any]) -> dict[str, Any] | None:
        tokens = wire.stream_tokens(chunks)
        found = {"tokens": tokens} if tokens else {}
        return {**found, **(links.stream_meta(call, chunks) or {})} or None

    return meta
