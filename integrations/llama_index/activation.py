"""The ``use_cassette`` hook for LlamaIndex (entry point ``chaincassette.hooks``).

The first block intercepts every provider LLM and embedding class (``boundary``,
``embeddings``), once per process. Each block wraps ``Settings.llm`` when one is already
set (reading it would build the default OpenAI LLM), captures the trace, and turns on tool
replay when the cassette asks for it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chaincassette.cassette import Cassette


class SettingsWrapping:
    """``Settings.llm`` replaced by one ``CassetteLLM`` for all the blocks open at a time (it
    records each call in the cassette serving where it runs); the last block to end puts the
    original back, unless the program set another LLM meanwhile."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wrapper: Any = None
        self._original: Any = None
        self._blocks = 0

    @contextmanager
    def wrapped(self, cassette: Cassette) -> Iterator[Any]:
        from llama_index.core import Settings

        from .llm import CassetteLLM

        with self._lock:
            # ``_llm``: ``Settings.llm`` builds OpenAI's default when none is set, and its
            # setter gives the LLM the global callback manager
            current = Settings._llm
            shared: Any = None
            if self._wrapper is not None and current is self._wrapper:
                self._blocks += 1
                shared = current
            elif current is not None and not isinstance(current, CassetteLLM):
                shared = CassetteLLM(current, cassette=cassette)
                shared.route_to_blocks()
                self._wrapper, self._original, self._blocks = shared, current, 1
                Settings._llm = shared
        if shared is None:
            yield current
            return
        try:
            yield shared
        finally:
            self._release(shared)

    def _release(self, shared: Any) -> None:
        from llama_index.core import Settings

        with self._lock:
            if self._wrapper is not shared:
                return
            self._blocks -= 1
            if self._blocks:
                return
            if Settings._llm is shared:
                Settings._llm = self._original
            self._wrapper = self._original = None


#: The one replacement of the process's ``Settings.llm`` (a patch, like the class wrappers).
SETTINGS = SettingsWrapping()


def install() -> None:
    """Intercept every provider LLM and embedding class (once per process)."""
    from chaincassette.call_sites import register

    from . import boundary, embeddings, trace

    register(trace.add_call_below)  # an SDK call in a workflow step joins the run tree
    boundary.install()
    embeddings.install()


def activate(cassette: Cassette) -> ExitStack:
    """Install what a LlamaIndex program needs to run on ``cassette``."""
    from . import tools, trace

    install()
    if tools.wants_tool_replay(cassette):
        tools.install()
    stack = ExitStack()
    try:
        stack.enter_context(SETTINGS.wrapped(cassette))
        stack.enter_context(trace.capture_trace(cassette))
    except BaseException:
        stack.close()
        raise
    return stack


def guard() -> AbstractContextManager[Any]:
    """The class-level interception the live-call guard needs outside any block: provider
    LLM endpoints and embedding models, which then ask the guard when no cassette serves."""
    install()
    return nullcontext()
