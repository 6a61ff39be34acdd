"""Which cassette serves a LlamaIndex call: the one rule every LlamaIndex adapter asks.

- A model call through a ``CassetteLLM`` goes to its own cassette; through the routed
  ``Settings.llm`` wrapper or a class-level interception, to the serving block's
  (``intercepted_cassette``: none where a layer above answers it or the block is ``off``).
- A tool call goes to the serving block's cassette when it asked for tool replay, else to
  that of the ``CassetteLLM(..., replay_tools=True)`` whose agent makes it (``tool_scope``),
  when no other cassette serves the block.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaincassette import Cassette, RecordMode, layers, serving_cassette
from chaincassette.live_guard import check_live

from . import tool_scope

#: Cassette option: tool results come from the cassette too.
REPLAY_TOOLS = "replay_tools"

__all__ = ["REPLAY_TOOLS", "llm_cassette", "serving_cassette", "tool_cassette"]


def llm_cassette(wrapper: Any) -> Cassette:
    """The cassette of a call through ``wrapper`` (a ``CassetteLLM``); a routed wrapper called
    outside every block uses its own cassette in mode ``off``, which records nothing."""
    if not wrapper.routed:
        return wrapper.cassette
    return serving_cassette() or wrapper.idle_cassette()


def intercepted_cassette(live_call: Callable[[], str] | None = None) -> Cassette | None:
    """The cassette of a call intercepted at class level; outside every block, the live-call
    guard is asked about ``live_call()`` (what the call is, ``LLM call (OpenAI.chat)``)."""
    if layers.answered_above():
        return None
    cassette = serving_cassette()
    if cassette is None:
        if live_call is not None:
            check_live(live_call())
        return None
    return None if cassette.mode is RecordMode.OFF else cassette


def wants_tool_replay(cassette: Cassette | None) -> bool:
    return cassette is not None and bool(cassette.options.get(REPLAY_TOOLS))


def tool_cassette() -> Cassette | None:
    """The cassette that records this tool call, if any (see the module docstring)."""
    active = serving_cassette()
    if wants_tool_replay(active):
        return active
    scoped = tool_scope.scoped_cassette()
    return scoped if active is None or scoped is active else None
