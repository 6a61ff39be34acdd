"""The check that a replaying ``CassetteCache(stream_replay=False)`` refuses a stream."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from fake_provider import PROVIDER_CALLS

from chaincassette import CassetteMiss


def assert_streams_refused(make: Callable[[], Any], prompt: str) -> None:
    """``stream`` and ``astream`` of a model ``make()`` builds each raise the miss that names
    ``stream_replay=False``, and neither reaches the provider."""
    calls = len(PROVIDER_CALLS)
    with pytest.raises(CassetteMiss, match="stream_replay=False"):
        list(make().stream(prompt))

    async def consume() -> None:
        async for _ in make().astream(prompt):
            pass

    with pytest.raises(CassetteMiss, match="stream_replay=False"):
        asyncio.run(consume())
    assert PROVIDER_CALLS[calls:] == []
