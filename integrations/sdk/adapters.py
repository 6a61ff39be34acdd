"""The adapters of the SDK layer, light enough to load anywhere (entry points
``chaincassette.hooks``).

- ``provider_sdks`` (requires ``httpx``): the transport wrappers (once per process) and
  this layer's trace part, for each block; the transport wrappers for the live-call guard.
- ``openai_sdk`` / ``anthropic_sdk`` (require their SDK): recorded answers served at the
  resource methods before the SDK builds its request (``methods``), and a miss or the
  guard's refusal reaching the caller at once instead of after the SDK's retries
  (``retries``; the guard installs only this). Separate adapters because each SDK may be
  imported long after the block began (``chaincassette run`` opens the cassette before the
  program's first import).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from chaincassette.registry import Adapter

if TYPE_CHECKING:
    from chaincassette.cassette import Cassette


def _activate(cassette: Cassette) -> AbstractContextManager[Any]:
    from . import trace, transport

    transport.install()
    return trace.capturing(cassette)


def _guard() -> AbstractContextManager[Any]:
    from . import transport

    transport.install()
    return nullcontext()


def _sdk(sdk: str) -> Adapter:
    def shield() -> AbstractContextManager[Any]:
        from . import retries

        retries.PATCHES[sdk].install()
        return nullcontext()

    def activate(_cassette: Cassette) -> AbstractContextManager[Any]:
        from . import methods

        shield()
        methods.PATCHES[sdk].install()
        return nullcontext()

    return Adapter(name=f"{sdk}_sdk", requires=sdk, activate=activate, guard=shield)


provider_sdks = Adapter(name="provider_sdks", requires="httpx", activate=_activate, guard=_guard)
openai_sdk = _sdk("openai")
anthropic_sdk = _sdk("anthropic")
