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
from chaincassette.patching import SharedPatches


def activate(cassette: Cassette) -> AbstractContextManager[Any] | None:
    """Everything LangChain needs while ``cassette`` is active, as one context manager."""
    try:
        import langchain_core  # noqa: F401
    except ImportError:
        return None
    return _active(cassette)


@contextmanager
def model_patches() -> Iterator[None]:
    """The class-level interception of every model and embedding call (chat models,
    completion streams, embeddings): what a block installs, and the live-call guard too."""
    from . import boundary, completion_streams, embeddings

    with ExitStack() as stack:
        stack.enter_context(boundary.installed())
        stack.enter_context(completion_streams.installed())
        stack.enter_context(embeddings.installed())
        yield


@contextmanager
def guard_patches() -> Iterator[None]:
    """What the live-call guard needs installed outside any block: every interception
    point that can see a model call no cassette serves (``completions`` for completion
    LLMs, which blocks otherwise reach through their routed cache)."""
    from . import completions

    with model_patches():
        completions.install()
        try:
            yield
        finally:
            completions.uninstall()


def guard() -> AbstractContextManager[Any] | None:
    try:
        import langchain_core  # noqa: F401
    except ImportError:
        return None
    return guard_patches()


@contextmanager
def _active(cassette: Cassette) -> Iterator[None]:
    from . import sdk_calls, tools, trace

    with ExitStack() as stack:
        stack.enter_context(model_patches())
        stack.enter_context(sdk_calls.placed())
        if cassette.options.get(tools.OPTION):
            tools.install()
            stack.callback(tools.uninstall)
        stack.enter_context(routed_cache())
        stack.enter_context(trace.capturing(cassette))
        yield


def _route_cache(patches: SharedPatches) -> None:
    """Install one ``ActiveCassetteCache`` in front of the user's global cache.

    Completion LLMs reach a cassette only through LangChain's global cache, and
    overlapping blocks (other asyncio tasks, threads) all need it until the last one
    exits. ``cache=False`` completion LLMs bypass it: ``completions`` serves them. A cache
    the user set before is the fallback for calls made where no cassette serves, and is
    put back when the last block exits (unless the user set another one meanwhile).
    """
    from langchain_core.globals import get_llm_cache, set_llm_cache

    from . import completions
    from .cache import ActiveCassetteCache

    completions.install()
    user_cache = get_llm_cache()
    routed = ActiveCassetteCache(fallback=user_cache)
    set_llm_cache(routed)

    def restore() -> None:
        if get_llm_cache() is routed:
            set_llm_cache(user_cache)
        completions.uninstall()

    patches.on_undo(restore)


_ROUTED_CACHE = SharedPatches(_route_cache)
routed_cache = _ROUTED_CACHE.installed
install_cache = _ROUTED_CACHE.install
uninstall_cache = _ROUTED_CACHE.uninstall
