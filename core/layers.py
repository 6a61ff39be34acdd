"""Which layer answers a model call: the outermost one that understands it.

A model call can pass several interception points on its way to the provider (LangChain's
chat model, then the provider's SDK, then its HTTP transport). The outermost one that a
cassette serves answers it. While that layer makes the call live (recording), it raises
``answering()``; every model-call layer underneath sees ``answered_above()`` and lets the
call through untouched, so it is recorded once. Tools have their own switch: a model call
made inside a tool is a call of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_answering: ContextVar[bool] = ContextVar("chaincassette_answering", default=False)


def answered_above() -> bool:
    """Whether an outer layer is making this model call live (and records it)."""
    return _answering.get()


@contextmanager
def answering() -> Iterator[None]:
    """Around a live call this layer records: the layers underneath step aside."""
    token = _answering.set(True)
    try:
        yield
    finally:
        _answering.reset(token)
