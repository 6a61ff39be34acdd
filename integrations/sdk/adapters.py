"""The adapters of the SDK layer, light enough to load anywhere (entry points
``chaincassette.hooks``).

- ``provider_sdks`` (requires ``httpx``): the transport wrappers and this layer's trace
  part, for each block; the transport wrappers alone for the live-call guard.
- ``openai_retries`` / ``anthropic_retries`` (require their SDK): a miss or the guard's
  refusal reaches the caller at once instead of after the SDK's retries (``retries``).
  Separate adapters because each SDK may be imported long after the block began
  (``chaincassette run`` opens the cassette before the program's first import).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any

from chaincassette import Adapter, Cassette


@contextmanager
def _active(cassette: Cassette) -> Iterator[None]:
    from . import trace, transport

    with ExitStack() as stack:
        stack.enter_context(transport.installed())
        stack.enter_context(trace.capturing(cassette))
        yield


def _activate(cassette: Cassette) -> AbstractContextManager[Any]:
    return _active(cassette)


def _guard() -> AbstractContextManager[Any]:
    from . import transport

    return transport.installed()


def _retry_loop(sdk: str) -> Adapter:
    def shield(_cassette: Any = None) -> AbstractContextManager[Any]:
        from .retries import PATCHES

        return PATCHES[sdk].installed()

    return Adapter(name=f"{sdk}_retries", requires=sdk, activate=shield, guard=shield)


provider_sdks = Adapter(name="provider_sdks", requires="httpx", activate=_activate, guard=_guard)
openai_retries = _retry_loop("openai")
anthropic_retries = _retry_loop("anthropic")
