"""The ``use_cassette`` hook for LlamaIndex (entry point ``chaincassette.hooks``).

For the block it intercepts every provider LLM the program uses, however it was built
(``boundary``: class-level, also for classes defined inside the block), wraps
``Settings.llm`` in a ``CassetteLLM`` when one is already set (only then: reading
``Settings.llm`` would build the default OpenAI LLM), captures the trace, and turns on
tool replay when the cassette asks for it (``use_cassette(..., replay_tools=True)``).
Everything is undone on exit.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from chaincassette import Cassette

_settings_lock = threading.Lock()
#: The wrapper around ``Settings.llm`` while blocks use it: [wrapper, original, blocks].
_settings_wrapper: list[Any] = []


@contextmanager
def wrapped_settings_llm(cassette: Cassette) -> Iterator[Any]:
    """Replace ``Settings.llm`` by a ``CassetteLLM`` around it for the block, then restore it.

    One wrapper for all the blocks open at a time (asyncio tasks, threads, nesting): it
    records each call in the cassette current where the call runs, and the last block
    to end puts the original back.
    """
    from llama_index.core import Settings

    from .llm import CassetteLLM

    with _settings_lock:
        current = Settings._llm
        shared: Any = None
        if _settings_wrapper and current is _settings_wrapper[0]:
            _settings_wrapper[2] += 1
            shared = current
        elif current is not None and not isinstance(current, CassetteLLM):
            shared = CassetteLLM(current, cassette=cassette)
            shared._routed = True
            _settings_wrapper[:] = [shared, current, 1]
            Settings._llm = shared
    if shared is None:
        yield current
        return
    try:
        yield shared
    finally:
        with _settings_lock:
            if _settings_wrapper and _settings_wrapper[0] is shared:
                _settings_wrapper[2] -= 1
                if _settings_wrapper[2] == 0:
                    if Settings._llm is shared:
                        Settings._llm = _settings_wrapper[1]
                    _settings_wrapper.clear()


def activate(cassette: Cassette) -> ExitStack:
    """Install what a LlamaIndex program needs to run on ``cassette``."""
    from . import boundary, embeddings, sdk_calls, tools, trace

    stack = ExitStack()
    try:
        stack.enter_context(boundary.installed())
        stack.enter_context(sdk_calls.placed())
        stack.enter_context(embeddings.installed())
        stack.enter_context(wrapped_settings_llm(cassette))
        if tools.wants_tool_replay(cassette):
            tools.install()
            stack.callback(tools.uninstall)
        stack.enter_context(trace.capture_trace(cassette))
    except BaseException:
        stack.close()
        raise
    return stack


@contextmanager
def guard_patches() -> Iterator[None]:
    """The class-level interception the live-call guard needs outside any block: provider
    LLM endpoints and embedding models, which then ask the guard when no cassette serves."""
    from . import boundary, embeddings

    with boundary.installed(), embeddings.installed():
        yield


def guard() -> Any:
    try:
        import llama_index.core  # noqa: F401
    except ImportError:
        return None
    return guard_patches()
