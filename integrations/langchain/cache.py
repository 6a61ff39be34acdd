"""``CassetteCache``: a LangChain ``BaseCache`` whose entries live in a cassette.

``set_llm_cache(CassetteCache("tests/cassettes/agent.yaml"))`` records every model call
of a chain, agent or graph once and replays it in any later process. Unlike LangChain's
own caches the key survives an agent loop: it is computed from the canonical request
(see ``requests.py``), not from LangChain's ``prompt`` string, which carries provider
tool-call IDs, timestamps and the ``total_cost: 0`` LangChain adds on every hit.

Chat-model calls are served at the provider boundary (the default, ``stream_replay=True``),
because only there can streamed answers be replayed chunk by chunk; the cache then steps
aside for them and serves completion LLMs. With ``stream_replay=False`` it is a plain cache
for both. Inside a ``use_cassette`` block the block's cassette serves, so the cache steps
aside for every call made there.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from os import PathLike
from types import TracebackType
from typing import Any

from langchain_core.caches import RETURN_VAL_TYPE

from chaincassette import Call, Cassette, RecordMode, credentials, serving_cassette
from chaincassette.cassette import given_cassette

from . import boundary, completions, tools
from .labels import call_meta
from .requests import ModelFields, build_request, is_chat_prompt
from .routing import RoutedCache
from .serde import record_generations, replayed_generations

Pending = deque[Call]


class CassetteCache(RoutedCache):
    """A ``BaseCache`` that records model calls into a cassette and replays them.

    ``path_or_cassette`` is a cassette file (or a ``Cassette``); ``mode`` is the record
    mode (default: ``CHAINCASSETTE_MODE``, else ``replay``); other keywords go to
    ``Cassette``. In ``replay`` mode a request without a recording raises
    ``CassetteMiss`` from ``lookup`` and the provider is never called.

    ``stream_replay`` serves chat models at the provider boundary, so ``.stream()``,
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
        # With stream_replay=False the wrappers pass calls through, so that a stream in
        # replay mode raises instead of silently going live.
        boundary.install()
        completions.install()
        # a cache set at import time replays until closed: no key is needed meanwhile
        self._release_keys = credentials.hold_while_replaying(self._cassette)
        weakref.finalize(self, self._release_keys)
        if replay_tools:
            tools.install()

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
        if cassette is None or self._steps_aside(prompt):
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
        if cassette is None or self._steps_aside(prompt):
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
        fields = cassette.state("langchain.model_fields", ModelFields)
        request = build_request(prompt, llm_string, fields)
        return cassette.begin(request, meta=call_meta(), autosave=self.autosave)

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
        """Save what this cache recorded, and give back the placeholder keys (idempotent)."""
        if self._cassette is not None and self._cassette.dirty:
            self._cassette.save()
        self._release_keys()

    def _steps_aside(self, prompt: str) -> bool:
        """Whether another layer serves this call: the provider boundary a chat call, a
        ``use_cassette`` block open here every call."""
        return (self.stream_replay and is_chat_prompt(prompt)) or serving_cassette() is not None
