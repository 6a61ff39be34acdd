"""The ``use_cassette`` hook for LlamaIndex (entry point ``chaincassette.hooks``).

For the block it intercepts every provider LLM the program uses, however it was built
(``boundary``: class-level, also for classes defined inside the block), wraps
``Settings.llm`` in a ``CassetteLLM`` when one is already set (only then: reading
``Settings.llm`` would build the default OpenAI LLM), captures the trace, and turns on
tool replay when the cassette asks for it (``use_cassette(..., replay_tools=True)``).
Everything is undone on exit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from chaincassette import Cassette


@contextmanager
def wrapped_settings_llm(cassette: Cassette) -> Iterator[Any]:
    """Replace ``Settings.llm`` by a ``CassetteLLM`` around it for the block, then restore it."""
    from llama_index.core import Settings

    from .llm import CassetteLLM

    original = Settings._llm
    if original is None or isinstance(original, CassetteLLM):
        yield original
        return
    wrapper = CassetteLLM(original, cassette=cassette)
    Settings._llm = wrapper
    try:
        yield wrapper
    finally:
        if Settings._llm is wrapper:
            Settings._llm = original


def activate(cassette: Cassette) -> ExitStack:
    """Install what a LlamaIndex program needs to run on ``cassette``."""
    from . import boundary, playback, tools, trace

    stack = ExitStack()
    try:
        stack.enter_context(boundary.installed())
        stack.enter_context(wrapped_settings_llm(cassette))
        if tools.wants_tool_replay(cassette):
            tools.install()
        stack.enter_context(trace.capture_trace(cassette))
        # runs first on exit: streams closed early but not yet finalized are saved too
        stack.callback(playback.flush_open_streams, cassette)
    except BaseException:
        stack.close()
        raise
    return stack
