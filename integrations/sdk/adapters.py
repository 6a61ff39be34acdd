"""The adapters of the SDK layer, light enough to load anywhere (``chaincassette.hooks``).

``provider_sdks`` (needs ``httpx``) installs the transport wrappers and the trace part;
``openai_sdk``/``anthropic_sdk`` the method-level replay (``methods``) and ``retries``, as
adapters of their own because an SDK may be imported long after the block began.
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
