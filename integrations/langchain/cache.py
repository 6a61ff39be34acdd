"""``CassetteCache``: a LangChain ``BaseCache`` whose entries live in a cassette.

``set_llm_cache(CassetteCache("tests/cassettes/agent.yaml"))`` records every model call
of a chain, agent or graph once and replays it in any later process. Unlike LangChain's
own caches the key survives an agent loop: it is computed from the canonical request
(see ``requests.py``), not from LangChain's ``prompt`` string, which carries provider
tool-call IDs, timestamps and the ``total_cost: 0`` LangChain adds on every hit.

Chat-model calls are served at the provider boundary when that layer is installed (the
default, ``stream_replay=True``), because only there can streamed answers be replayed
chunk by chunk; the cache then steps aside for them and serves completion LLMs. With
``stream_replay=False`` it is a plain cache for both.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from os import PathLike
from types import TracebackType
from typing import Any

from langchain_core.caches import RETURN_VAL_TYPE, BaseCache

from chaincassette import Call, Cassette, RecordMode, credentials, serving_cassette
from chaincassette.cassette import given_cassette

from . import boundary, tools
from .labels import call_meta
from .requests import build_request, is_chat_prompt
from .routing import RoutedCache
from .serde import record_generations, replayed_generations

Pending = deque[Call]


class CassetteCache(RoutedCache):
    """A ``BaseCache`` that records model calls into a cassette and replays them.

    ``path_or_cassette`` is a cassette file (or a ``Cassette``); ``mode`` is the record
    mode (default: ``CHAINCASSETTE_MODE``, else ``replay``); other keywords go to
    ``Cassette``. In ``replay`` mode a request without a recording raises
    ``CassetteMiss`` from ``lookup`` and the provider is never called.

    ``stream_replay`` serves chat models at the provider boundary (wrappers installed
    for this cache's lifetime, ``close()`` removes them), so ``.stream()``,
    ``.astream()``, ``astream_events`` and LangGraph ``stream_mode="messages"`` replay
    too. With ``stream_replay=False`` chat calls go through LangChain's cache hook
    instead: streams cannot be replayed (in replay mode they raise ``CassetteMiss``
    rather than call the provider), and a replayed message differs from the recorded one
    the way every LangChain cache hit does: its ``usage_metadata`` gains
    ``total_cost: 0``. ``replay_tools`` records tool
    results as well. ``autosave`` writes the file after each new recording, since a
    cache set at import time has no block whose end could save it.

    Also a context manager: ``with CassetteCache(path) as cache:`` closes it on exit.
    """

    def __init__(
        self,
        path_or_cassette: str | PathLike[str] | Cassette,
        *,
        mode: RecordMode | str | None = None,
        stream_replay: bool = True,
        replay_tools: bool = False,
        autosave: bool = True,
        **cassette_options: Any,
    ) -> None:
        self._cassette: Cassette | None = given_cassette(
            path_or_cassette, mode=mode, options=cassette_options, owner="CassetteCache"
        )
        self._options: dict[str, Any] | None = (
            None if isinstance(path_or_cassette, Cassette) else {"mode": mode, **cassette_options}
        )
        self.stream_replay = stream_replay
        self.replay_tools = replay_tools
        self.autosave = autosave
        self._pending: dict[tuple[str, str], Pending] = {}
        self._lock = threading.Lock()
        self._installed: list[Any] = []
        self._install()
        # A cache dropped without close() (set_llm_cache(None), a test that forgot) gives its
        # wrappers back when it is collected: a use count never leaks.
        self._release = weakref.finalize(self, _uninstall_all, self._installed)

    def _install(self) -> None:
        # With stream_replay=False the wrappers stay installed too, passing calls through,
        # so that a stream in replay mode raises instead of silently going live.
        boundary.install()
        self._installed.append(boundary.uninstall)
        self._installed.append(credentials.hold_while_replaying(self._cassette))
        if self.replay_tools:
            tools.install()
            self._installed.append(tools.uninstall)

    def __enter__(self) -> CassetteCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def cassette(self) -> Cassette | None:
        """The cassette this cache reads and writes."""
        return self._cassette

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._cassette!r})"

    # -- BaseCache -------------------------------------------------------------------------

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """The recorded generations for this call, ``None`` to let it run live.

        Raises ``CassetteMiss`` when the record mode forbids calling the model.
        """
        cassette = self.cassette
        if cassette is None or self._deferred(prompt):
            if cassette is not None:  # spares the provider-boundary layer a ``dumps``
                boundary.note_prompt(prompt, llm_string)
            return None
        call = self._begin(cassette, prompt, llm_string)
        if call.hit:
            return replayed_generations(call)
        with self._lock:
            self._pending.setdefault((prompt, llm_string), deque()).append(call)
        return None

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """Record the live generations of a call ``lookup`` missed.

        The messages in ``return_val`` (the very list LangChain returns to the caller)
        get the same deterministic IDs a replay gives them.
        """
        cassette = self.cassette
        if cassette is None or self._deferred(prompt):
            return
        with self._lock:
            queue = self._pending.get((prompt, llm_string))
            call = queue.popleft() if queue else None
            if queue is not None and not queue:
                del self._pending[(prompt, llm_string)]
        if call is None:  # update() without a lookup: look it up now
            call = self._begin(cassette, prompt, llm_string)
            if call.hit:
                return
        record_generations(call, return_val)

    def _begin(self, cassette: Cassette, prompt: str, llm_string: str) -> Call:
        return cassette.begin(
            lambda: build_request(prompt, llm_string),
            identity=("cache", prompt, llm_string),
            meta=call_meta(),
            autosave=self.autosave,
        )

    def clear(self, **kwargs: Any) -> None:
        """Save what is pending and rewind: the next lookups replay from the first occurrence."""
        cassette = self.cassette
        if cassette is None:
            return
        cassette.save()
        with self._lock:
            for queue in self._pending.values():
                for call in queue:
                    call.abandon()
            self._pending.clear()
        if self._options is not None:
            self._cassette = Cassette(cassette.path, **self._options)
        else:
            cassette.rewind()

    async def alookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        return self.lookup(prompt, llm_string)

    async def aupdate(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        self.update(prompt, llm_string, return_val)

    async def aclear(self, **kwargs: Any) -> None:
        self.clear(**kwargs)

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Save, and remove the wrappers this cache installed (idempotent)."""
        if self._cassette is not None and self._cassette.dirty:
            self._cassette.save()
        _uninstall_all(self._installed)

    def _deferred(self, prompt: str) -> bool:
        """Whether the provider-boundary wrapper serves this chat call instead of the cache."""
        return boundary.serving_current_call() and is_chat_prompt(prompt)


class ActiveCassetteCache(CassetteCache):
    """The cache ``use_cassette`` installs: it serves whichever cassette is active here.

    Completion LLMs have no provider-boundary layer, so inside ``use_cassette`` they are
    recorded through LangChain's cache hook. Where no cassette is active it delegates to
    ``fallback`` (the global cache the user had set, if any), so a user's cache keeps
    working outside the blocks and never answers a call a cassette should serve (which
    would give chat messages repeated IDs and a ``total_cost`` field).
    """

    def __init__(self, fallback: BaseCache | None = None) -> None:
        self.stream_replay = False
        self.replay_tools = False
        self.autosave = False
        self._cassette = None
        self._options = None
        self._pending = {}
        self._lock = threading.Lock()
        self._installed = []
        self.fallback = fallback

    @property
    def cassette(self) -> Cassette | None:
        return serving_cassette()

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        if self.cassette is None:
            return self.fallback.lookup(prompt, llm_string) if self.fallback else None
        return super().lookup(prompt, llm_string)

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        if self.cassette is None:
            if self.fallback is not None:
                self.fallback.update(prompt, llm_string, return_val)
            return
        super().update(prompt, llm_string, return_val)

    def clear(self, **kwargs: Any) -> None:
        if self.fallback is not None:
            self.fallback.clear(**kwargs)
        if self.cassette is not None:
            super().clear(**kwargs)

    async def alookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        if self.cassette is None:
            return await self.fallback.alookup(prompt, llm_string) if self.fallback else None
        return self.lookup(prompt, llm_string)

    async def aupdate(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        if self.cassette is None:
            if self.fallback is not None:
                await self.fallback.aupdate(prompt, llm_string, return_val)
            return
        self.update(prompt, llm_string, return_val)

    async def aclear(self, **kwargs: Any) -> None:
        if self.fallback is not None:
            await self.fallback.aclear(**kwargs)
        if self.cassette is not None:
            super().clear(**kwargs)

    def __repr__(self) -> str:
        return f"ActiveCassetteCache(fallback={self.fallback!r})"


def _uninstall_all(installed: list[Any]) -> None:
    while installed:
        installed.pop()()
