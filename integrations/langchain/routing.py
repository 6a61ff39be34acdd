"""Which cassette serves a LangChain call: the one rule every LangChain adapter asks.

In order: a ``CassetteCache`` given to the model itself (``cache=``), then the cassette of
the ``use_cassette`` block serving this call (this context's, else the process-wide one
for plain threads, see ``chaincassette.serving_cassette``), then a global
``CassetteCache`` set with ``set_llm_cache`` (unless the model says ``cache=False``).
Tool calls are served only where tool replay was asked for (``replay_tools=True``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.caches import BaseCache
from langchain_core.globals import get_llm_cache

from chaincassette import Cassette, CassetteMiss, layers, serving_cassette

#: Cassette option: tool results come from the cassette too.
REPLAY_TOOLS = "replay_tools"


class RoutedCache(BaseCache):
    """What routing needs to know of a ``CassetteCache`` (defined here, so that routing
    never imports the public class that is built on it)."""

    stream_replay: bool
    replay_tools: bool
    autosave: bool

    @property
    def cassette(self) -> Cassette | None:
        raise NotImplementedError

    def failed(self, prompts: list[str], llm_string: str, error: BaseException) -> None:
        """The live call LangChain made for ``prompts`` after ``lookup`` missed them raised
        ``error`` (LangChain then calls no ``update``)."""
        raise NotImplementedError

    def serves(self, *, tools: bool) -> bool:
        """Whether this cache routes chat models (or, with ``tools``, tool calls)."""
        wanted = self.replay_tools if tools else self.stream_replay
        return wanted and self.cassette is not None


@dataclass(frozen=True)
class Route:
    cassette: Cassette
    #: save after each recording: no ``use_cassette`` block will save this cassette
    autosave: bool


def route(model: Any = None, *, tools: bool = False) -> Route | None:
    """The cassette serving a call of ``model`` (or a tool call), or ``None`` to pass through."""
    own = getattr(model, "cache", None)
    given = _cache_route(own, tools)
    if given is not None:
        return given
    active = serving_cassette()
    if active is not None:
        if tools and not active.options.get(REPLAY_TOOLS):
            return None
        return Route(active, False)
    return None if own is False else _cache_route(get_llm_cache(), tools)


def _cache_route(cache: Any, tools: bool) -> Route | None:
    if not isinstance(cache, RoutedCache) or not cache.serves(tools=tools):
        return None
    cassette = cache.cassette
    return None if cassette is None else Route(cassette, cache.autosave)


def cache_consulted(model: Any) -> BaseCache | None:
    """The cache LangChain consults for ``model`` (as ``_resolve_cache`` picks it)."""
    own = getattr(model, "cache", None)
    if isinstance(own, BaseCache):
        return own
    return None if own is False else get_llm_cache()


def report_failure(
    model: Any,
    prompts: Callable[[], list[str]],
    llm_string: Callable[[], str],
    error: BaseException,
) -> None:
    """Tell the ``CassetteCache`` LangChain consulted for ``model`` (if it did) that the live
    call it let through raised ``error``: it records the error as that call's answer, or the
    call would hold back the next recordings of its key (``prompts`` and ``llm_string`` give
    what LangChain looked up, computed only then)."""
    cache = cache_consulted(model)
    if isinstance(cache, RoutedCache):
        cache.failed(prompts(), llm_string(), error)


def refuse_unreplayable_stream(model: Any, kind: str) -> None:
    """Raise ``CassetteMiss`` for a stream (of a ``kind`` model: chat, completion) that a
    replaying ``CassetteCache(stream_replay=False)`` would otherwise let go live: LangChain
    never consults a cache for streams."""
    if layers.answered_above() or serving_cassette() is not None:
        return
    cache = cache_consulted(model)
    if not isinstance(cache, RoutedCache) or cache.stream_replay:
        return
    cassette = cache.cassette
    if cassette is None or not cassette.replaying:
        return
    request = {"kind": kind, "model": type(model).__name__, "stream": True}
    raise CassetteMiss(
        f"{type(model).__name__} streams, and the CassetteCache for {cassette.path} (mode "
        f"{cassette.mode.value!r}) was created with stream_replay=False: streams bypass "
        "LangChain's cache, so they cannot be replayed and are not called live. Use "
        "CassetteCache(..., stream_replay=True) (the default) or use_cassette(...).",
        path=cassette.path,
        mode=cassette.mode.value,
        request=request,
        key=cassette.key_for(request),
    )
