"""A miss, or the live-call guard's refusal, reaches the caller of an SDK method as itself.

The SDKs retry every ``Exception`` their transport raises, with back-off, then raise
``APIConnectionError`` from it. So inside an SDK's request method (``RETRY_LOOPS``: the one
place every resource method goes through) chaincassette's errors leave ``send`` wrapped in
``Escape``, a ``BaseException`` no retry loop catches, and the method unwraps it. An SDK
version without that method is left alone: its misses arrive wrapped, after its retries.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, NoReturn

from chaincassette.patching import Patches

#: SDK → (its base-client module, its sync and async base clients): the retry loops.
RETRY_LOOPS: dict[str, tuple[str, tuple[str, str]]] = {
    "openai": ("openai._base_client", ("SyncAPIClient", "AsyncAPIClient")),
    "anthropic": ("anthropic._base_client", ("SyncAPIClient", "AsyncAPIClient")),
}

_inside: ContextVar[bool] = ContextVar("chaincassette_sdk_request", default=False)


class Escape(BaseException):
    """Carries ``error`` past an SDK's retry loop (see the module docstring)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def raise_past_retries(error: BaseException) -> NoReturn:
    """Raise ``error`` so that it reaches the SDK method's caller unretried."""
    if _inside.get() and isinstance(error, Exception):
        raise Escape(error) from None
    raise error


def _shielded(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def request(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = _inside.set(True)
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
        token = _inside.set(True)
        try:
            return await original(self, *args, **kwargs)
        except Escape as escape:
            raise escape.error from None
        finally:
            _inside.reset(token)

    return request


def _applier(sdk: str) -> Callable[[Patches], None]:
    module_name, (sync_name, async_name) = RETRY_LOOPS[sdk]

    def apply(patches: Patches) -> None:
        module = importlib.import_module(module_name)
        for name, wrap in ((sync_name, _shielded), (async_name, _ashielded)):
            cls = getattr(module, name, None)
            original = getattr(cls, "__dict__", {}).get("request")
            if cls is not None and callable(original):
                patches.replace(cls, "request", wrap(original))

    return apply


PATCHES = {sdk: Patches(_applier(sdk)) for sdk in RETRY_LOOPS}
