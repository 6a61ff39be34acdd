"""A call served below LangChain (a provider SDK called in a tool or a graph node) in the trace.

The SDK layer hands its trace node over (``chaincassette.call_sites``); if the call was
made inside a LangChain run of this context's capture, it becomes a child of that run: the
tool, the LangGraph node. LangChain's public ``var_child_runnable_config`` holds the
config the running runnable gives its children; its callback manager's ``parent_run_id``
is that run. The capture's own members (``trace._recorder``, ``_start``) are used from
here, in the same package, rather than widening ``trace``'s interface for one caller.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import uuid4

from langchain_core.runnables.config import var_child_runnable_config

from chaincassette.call_sites import placing

from . import trace


def place(cassette: Any, node: dict[str, Any]) -> bool:
    """Add ``node`` under the LangChain run this call was made in, if there is one."""
    recorder = trace._recorder.get()
    config = var_child_runnable_config.get()
    manager = config.get("callbacks") if config else None
    parent = getattr(manager, "parent_run_id", None)
    if recorder is None or parent is None:
        return False
    run = uuid4()  # renumbered with the tree: never stored
    recorder._start(run, parent, str(node["type"]), str(node["name"]), None, None)
    recorder.link(run, str(node["key"]))
    return True


@contextmanager
def placed() -> Iterator[None]:
    """For the length of a block: SDK calls made inside LangChain runs join their tree."""
    with placing(place):
        yield
