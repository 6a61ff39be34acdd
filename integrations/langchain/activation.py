"""The ``use_cassette`` hook: what LangChain support installs for a block, and removes after.

Registered through the ``chaincassette.hooks`` entry point, so ``use_cassette(...)``
records LangChain and LangGraph programs without the user importing anything. This
module imports LangChain only when a cassette is activated, and does nothing when
LangChain is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any

from chaincassette import Cassette


def activate(cassette: Cassette) -> AbstractContextManager[Any] | None:
    """Everything LangChain needs while ``cassette`` is active, as one context manager."""
    try:
        import langchain_core  # noqa: F401
    except ImportError:
        return None
    return _active(cassette)


@contextmanager
def _active(cassette: Cassette) -> Iterator[None]:
    from langchain_core.globals import get_llm_cache, set_llm_cache

    from . import boundary, tools, trace
    from .cache import ActiveCassetteCache

    with ExitStack() as stack:
        stack.enter_context(boundary.installed())
        if cassette.options.get(tools.OPTION):
            tools.install()
            stack.callback(tools.uninstall)
        if get_llm_cache() is None:  # completion LLMs reach a cassette only through the cache
            routed = ActiveCassetteCache()
            set_llm_cache(routed)

            def restore() -> None:
                if get_llm_cache() is routed:
                    set_llm_cache(None)

            stack.callback(restore)
        stack.enter_context(trace.capturing(cassette))
        yield
