"""The ``use_cassette`` hook: what LangChain support installs for a block, and removes after.

Registered through the ``chaincassette.hooks`` entry point, so ``use_cassette(...)``
records LangChain and LangGraph programs without the user importing anything. This
module imports LangChain only when a cassette is activated, and does nothing when
LangChain is not installed.
"""

from __future__ import annotations

import threading
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
    from . import boundary, tools, trace

    with ExitStack() as stack:
        stack.enter_context(boundary.installed())
        if cassette.options.get(tools.OPTION):
            tools.install()
            stack.callback(tools.uninstall)
        stack.enter_context(routed_cache())
        stack.enter_context(trace.capturing(cassette))
        yield


_lock = threading.Lock()
_cache_users = 0
_routed: Any = None
_user_cache: Any = None


@contextmanager
def routed_cache() -> Iterator[None]:
    """One shared ``ActiveCassetteCache`` while any block is active (use-counted).

    Completion LLMs reach a cassette only through LangChain's global cache, and
    overlapping blocks (other asyncio tasks, threads) all need it until the last one
    exits. ``cache=False`` completion LLMs bypass it: ``completions`` makes them fail
    in replay mode rather than go live. A cache the user set before is kept as the fallback for calls made where no
    cassette is active, and put back when the last block exits.
    """
    install_cache()
    try:
        yield
    finally:
        uninstall_cache()


def install_cache() -> None:
    global _cache_users, _routed, _user_cache
    from langchain_core.globals import get_llm_cache, set_llm_cache

    from . import completions
    from .cache import ActiveCassetteCache

    with _lock:
        _cache_users += 1
        if _cache_users > 1:
            return
        completions.install()
        _user_cache = get_llm_cache()
        _routed = ActiveCassetteCache(fallback=_user_cache)
        set_llm_cache(_routed)


def uninstall_cache() -> None:
    global _cache_users, _routed, _user_cache
    from langchain_core.globals import get_llm_cache, set_llm_cache

    from . import completions

    with _lock:
        if _cache_users == 0:
            return
        _cache_users -= 1
        if _cache_users:
            return
        completions.uninstall()
        if get_llm_cache() is _routed:  # the user may have set another cache meanwhile
            set_llm_cache(_user_cache)
        _routed = _user_cache = None
