"""The ``use_cassette`` hook: what LangChain support installs, and what a block adds.

Registered through the ``chaincassette.hooks`` entry point, so ``use_cassette(...)``
records LangChain and LangGraph programs without the user importing anything. The class
patches (chat models, completion LLMs and their streams, embeddings) are installed once,
by the first block; each wrapper then asks per call which cassette serves it. A block
itself only captures its run tree.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chaincassette.cassette import Cassette


def activate(cassette: Cassette) -> AbstractContextManager[Any]:
    """Everything LangChain needs while ``cassette`` is active, as one context manager."""
    from . import trace

    install(tools=bool(cassette.options.get("replay_tools")))
    return trace.capturing(cassette)


def install(*, tools: bool = False) -> None:
    """Wrap every model and embedding class (once per process); tool replay only once a
    cassette asks for it."""
    from chaincassette.call_sites import register

    from . import boundary, completion_streams, completions, embeddings
    from . import tools as tool_replay

    register(_place_sdk_call)  # an SDK call in a tool or node joins the run tree
    boundary.install()
    completions.install()
    completion_streams.install()
    embeddings.install()
    if tools:
        tool_replay.install()


def _place_sdk_call(cassette: Any, node: dict[str, Any]) -> bool:
    from . import trace

    return trace.add_call_below(node)


def guard() -> AbstractContextManager[Any]:
    """What the live-call guard needs: every interception point that can see a model call
    no cassette serves (the same patches; they ask the guard when nothing serves a call)."""
    install()
    return nullcontext()
