"""The adapters of the SDK layer, light enough to load anywhere (entry points
``chaincassette.hooks``).

- ``provider_sdks`` (requires ``httpx``): the transport wrappers and this layer's trace
  part, for each block; the transport wrappers alone for the live-call guard.
- ``openai_sdk`` / ``anthropic_sdk`` (require their SDK): recorded answers served at the
  resource methods before the SDK builds its request (``methods``), and a miss or the
  guard's refusal reaching the caller at once instead of after the SDK's retries
  (``retries``; the guard installs only this). Separate adapters because each SDK may be
  imported long after the block began (``chaincassette run`` opens the cassette before the
  program's first import).
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


def _sdk(sdk: str) -> Adapter:
    def shield() -> AbstractContextManager[Any]:
        from . import retries

        return retries.PATCHES[sdk].installed()

    @contextmanager
    def active(_cassette: Cassette) -> Iterator[None]:
        from . import methods

        with shield(), methods.PATCHES[sdk].installed():
            yield

    return Adapter(name=f"{sdk}_sdk", requires=sdk, activate=active, guard=shield)


provider_sdks = Adapter(name="provider_sdks", requires="httpx", activate=_activate, guard=_guard)
openai_sdk = _sdk("openai")
anthropic_sdk = _sdk("anthropic")
