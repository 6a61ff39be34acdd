"""A miss, or the live-call guard's refusal, reaches the caller of an SDK method as itself;
an attempt served from a cassette costs no back-off.

The SDKs retry every ``Exception`` their transport raises, with back-off, then raise
``APIConnectionError`` from it. So inside an SDK's request method (``RETRY_LOOPS``: the one
place every resource method goes through) chaincassette's errors leave ``send`` wrapped in
``Escape``, a ``BaseException`` no retry loop catches, and the method unwraps it.

A replayed failure (a dropped connection, which carries no ``retry-after``) would sleep the
SDK's live back-off before the next attempt; after an attempt the transport replayed, the
SDK's sleep (``BACKOFF``) is put off until the next attempt is sent: dropped if it is
replayed too, waited if it goes live (and then left out of that attempt's recorded
``duration_ms``: the wait is the SDK's, not the call's). An SDK version without a method is left alone: without
``request`` its misses arrive wrapped, after its retries; without ``BACKOFF`` its replayed
retries wait.
"""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NoReturn

from chaincassette.patching import Patches

#: SDK → (its base-client module, its sync and async base clients): the retry loops.
RETRY_LOOPS: dict[str, tuple[str, tuple[str, str]]] = {
    "openai": ("openai._base_client", ("SyncAPIClient", "AsyncAPIClient")),
    "anthropic": ("anthropic._base_client", ("SyncAPIClient", "AsyncAPIClient")),
}

#: The SDKs' sleep between attempts (``request`` calls it after a failed one).
BACKOFF = "_sleep_for_retry"


@dataclass
class _Loop:
    """One run of an SDK's request method: how its last attempt was answered."""

    replayed: bool = False  #: from a cassette
    backoff: Callable[[], Any] | None = None  #: the SDK's sleep after it, not yet waited


_inside: ContextVar[_Loop | None] = ContextVar("chaincassette_sdk_request", default=None)


class Escape(BaseException):
    """Carries ``error`` past an SDK's retry loop (see the module docstring)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def raise_past_retries(error: BaseException) -> NoReturn:
    """Raise ``error`` so that it reaches the SDK method's caller unretried."""
    if _inside.get() is not None and isinstance(error, Exception):
        raise Escape(error) from None
    raise error


def replayed_attempt() -> None:
    """The attempt being sent is served from a cassette: the back-off before it is dropped."""
    loop = _inside.get()
    if loop is not None:
        loop.replayed, loop.backoff = True, None


def _put_off_backoff() -> Callable[[], Any] | None:
    """The back-off put off before the attempt being sent, which goes live: it is due now."""
    loop = _inside.get()
    if loop is None:
        return None
    backoff, loop.replayed, loop.backoff = loop.backoff, False, None
    return backoff


def live_attempt() -> float:
    """The attempt being sent goes live: first the back-off put off before it (sync SDKs).
    Returns the seconds it waited: the SDK's, not the attempt's (its ``duration_ms``)."""
    backoff = _put_off_backoff()
    if backoff is None:
        return 0.0
    started = time.perf_counter()
    backoff()
    return time.perf_counter() - started


async def live_attempt_async() -> float:
    """``live_attempt`` for an async SDK, whose back-off is awaited."""
    backoff = _put_off_backoff()
    if backoff is None:
        return 0.0
    started = time.perf_counter()
    await backoff()
    return time.perf_counter() - started


def _put_off_after_replay(sleep: Callable[[], Any]) -> bool:
    """Keep the SDK's ``sleep`` for the next attempt if the one that failed was replayed."""
    loop = _inside.get()
    if loop is None or not loop.replayed:
        return False
    loop.backoff = sleep
    return True


def _put_off(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def sleep_for_retry(self: Any, *args: Any, **kwargs: Any) -> None:
        sleep = functools.partial(original, self, *args, **kwargs)
        return None if _put_off_after_replay(sleep) else sleep()

    return sleep_for_retry


def _aput_off(original: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    @functools.wraps(original)
    async def sleep_for_retry(self: Any, *args: Any, **kwargs: Any) -> None:
        sleep = functools.partial(original, self, *args, **kwargs)
        return None if _put_off_after_replay(sleep) else await sleep()

    return sleep_for_retry


def _shielded(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def request(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = _inside.set(_Loop())
        try:
            return original(self, *args, **kwargs)
        except Escape as escape:
            raise escape.error from None
        finally:
            _inside.reset(token)

    return request


def _ashielded(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def request(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = _inside.set(_Loop())
        try:
            return await original(self, *args, **kwargs)
        except Escape as escape:
            raise escape.error from None
        finally:
            _inside.reset(token)

    return request


def patch_loop(patches: Patches, cls: Any, *, is_async: bool) -> None:
    """Wrap ``cls``'s request method and its back-off, each only if ``cls`` defines it."""
    Wrap = Callable[[Callable[..., Any]], Callable[..., Any]]
    wraps: tuple[Wrap, Wrap] = (_ashielded, _aput_off) if is_async else (_shielded, _put_off)
    for name, wrap in zip(("request", BACKOFF), wraps, strict=True):
        original = getattr(cls, "__dict__", {}).get(name)
        if cls is not None and callable(original):
            patches.replace(cls, name, wrap(original))


def _applier(sdk: str) -> Callable[[Patches], None]:
    module_name, (sync_name, async_name) = RETRY_LOOPS[sdk]

    def apply(patches: Patches) -> None:
        module = importlib.import_module(module_name)
        patch_loop(patches, getattr(module, sync_name, None), is_async=False)
        patch_loop(patches, getattr(module, async_name, None), is_async=True)

    return apply


PATCHES = {sdk: Patches(_applier(sdk)) for sdk in RETRY_LOOPS}
