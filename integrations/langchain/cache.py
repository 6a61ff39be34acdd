"""``CassetteCache``: a LangChain ``BaseCache`` whose entries live in a cassette.

``set_llm_cache(CassetteCache("tests/cassettes/agent.yaml"))`` records every model call
of a chain, agent or graph once and replays it in any later process. Unlike LangChain's
own caches the key survives an agent loop: it is computed from the canonical request
(see ``requests.py``), not from LangChain's ``prompt`` string, which carries provider
tool-call IDs, timestamps and the ``total_cost: 0`` LangChain adds on every hit.

It keeps ``BaseCache``'s contract within a run: what ``update`` stored (and what ``lookup``
replayed) for a prompt is what the next ``lookup`` of that prompt returns, so a repeated
identical call is answered by the cache, as by any LangChain cache, in record and replay
alike; ``clear`` forgets it. The cassette is where the answers come from the first time.

Chat-model calls are served at the provider boundary (the default, ``stream_replay=True``),
because only there can streamed answers be replayed chunk by chunk; for them the cache only
keeps what LangChain stores after the boundary served the call, and records nothing itself.
With ``stream_replay=False`` it is a plain cache for both. Inside a ``use_cassette`` block
the block's cassette serves, so the cache records nothing there, and what it stores lives
with the block's cassette (one test never answers another's calls).
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

from . import activation
from .labels import call_meta
from .requests import ModelFields, build_request, is_chat_prompt
from .routing import RoutedCache
from .serde import (
    decode_generation,
    encode_generations,
    record_generations,
    replayed_generations,
)

Pending = deque[Call]
#: Cassette state: per ``CassetteCache``, what it stored in this run (``BaseCache``'s content).
ENTRIES = "langchain.cache_entries"
#: Cassette state: the key of each prompt a cache stored there (its request built once).
KEYS = "langchain.cache_keys"


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
    ``total_cost: 0``. A repeated identical call is answered by the cache (what it
    stored for that prompt in this run), as by every LangChain cache. ``replay_tools``
    records tool results as well. ``autosave`` writes the file after each new recording, since a
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
        self.stream_replay = stream_replay
        self.replay_tools = replay_tools
        self.autosave = autosave
        self._pending: dict[tuple[str, str], Pending] = {}
        self._lock = threading.Lock()
        # Every interception point a global cache serves (streams, which bypass LangChain's
        # cache, and embeddings), as a block installs them: a process that never opened a
        # block would otherwise let them go live. With stream_replay=False the wrappers pass
        # calls through, so that a stream in replay mode raises instead of going live.
        activation.install(tools=replay_tools)
        # a cache set at import time replays until closed: no key is needed meanwhile
        self._release_keys = credentials.hold_while_replaying(self._cassette)
        weakref.finalize(self, self._release_keys)

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
        """What this cache stored for this prompt in this run, else the recording of the
        call, else ``None`` to let it run live.

        Raises ``CassetteMiss`` when the record mode forbids calling the model.
        """
        found, call = self._looked_up(prompt, llm_string)
        if call is None:
            return found
        with call.turn():  # behind the calls that completed before it when recorded
            return self._replayed(prompt, llm_string, call)

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """Store ``return_val`` for this prompt (a ``lookup`` in this run returns it); when it
        answers a call ``lookup`` missed, record it too.

        The messages in ``return_val`` (the very list LangChain returns to the caller)
        get the same deterministic IDs a replay gives them.
        """
        cassette = self.cassette
        if cassette is None:
            return
        call = self._take_pending(prompt, llm_string)
        if call is not None:
            record_generations(call, return_val)
        self._store(prompt, llm_string, encode_generations(return_val))

    def failed(self, prompts: list[str], llm_string: str, error: BaseException) -> None:
        """The live call of ``prompts`` that ``lookup`` missed raised ``error`` (LangChain
        calls no ``update`` then): for one prompt the error is its answer, recorded and
        raised again by a replay (``with_fallbacks`` and ``with_retry`` replay as they ran);
        for several it is nobody's, and nothing is kept. Either way the call no longer holds
        back the next recordings of its key."""
        calls = [self._take_pending(prompt, llm_string) for prompt in prompts]
        for call in calls:
            if call is not None and len(calls) == 1:
                call.fail(error)
            elif call is not None:
                call.abandon()

    def _take_pending(self, prompt: str, llm_string: str) -> Call | None:
        """The oldest call ``lookup`` missed for this prompt and is waiting for its answer."""
        if self._steps_aside(prompt):  # the layer that served the call recorded it
            return None
        with self._lock:
            queue = self._pending.get((prompt, llm_string))
            call = queue.popleft() if queue else None
            if queue is not None and not queue:
                del self._pending[(prompt, llm_string)]
        return call

    def clear(self, **kwargs: Any) -> None:
        """Forget what this cache stored: the next call of a prompt asks the model again,
        which in a cassette is its next recorded answer (or, recording, a live call).

        The cassette's file keeps its recordings: they are what the model answered, and a
        replay needs them (``chaincassette prune`` removes unused ones).
        """
        cassette = self.cassette
        if cassette is None:
            return
        cassette.save()  # nothing recorded is lost on the way
        for holder in {id(c): c for c in (cassette, serving_cassette()) if c is not None}.values():
            with self._lock:
                self._entries(holder).clear()

    async def alookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        found, call = self._looked_up(prompt, llm_string)
        if call is None:
            return found
        async with call.turn():
            return self._replayed(prompt, llm_string, call)

    async def aupdate(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        self.update(prompt, llm_string, return_val)

    async def aclear(self, **kwargs: Any) -> None:
        self.clear(**kwargs)

    # -- one lookup --------------------------------------------------------------------------

    def _looked_up(
        self, prompt: str, llm_string: str
    ) -> tuple[RETURN_VAL_TYPE | None, Call | None]:
        """(the answer, ``None``) when this cache holds it, passes the call on or misses it
        (the miss then waits for ``update``); (``None``, the hit) for a recording."""
        cassette = self.cassette
        if cassette is None:
            return None, None
        stored = self._stored(prompt, llm_string)
        if stored is not None and not self._recorded_again(prompt, llm_string):
            return [decode_generation(g) for g in stored["generations"]], None
        if self._steps_aside(prompt):
            return None, None
        call = self._begin(cassette, prompt, llm_string)
        if call.hit:
            return None, call
        with self._lock:
            self._pending.setdefault((prompt, llm_string), deque()).append(call)
        return None, None

    def _recorded_again(self, prompt: str, llm_string: str) -> bool:
        """Whether the recorded run asked the model for a prompt this cache stored again
        before the answer it replayed last was stored (``batch`` and ``abatch`` of one
        prompt look every input up first): that call replays its own recording then."""
        holder = self._holder()
        if holder is None:
            return False
        keys: dict[tuple[str, str], str] = holder.state(KEYS, dict)  # a prompt's, built once
        key = keys.get((prompt, llm_string))
        if key is None:
            fields = holder.state("langchain.model_fields", ModelFields)
            key = keys[(prompt, llm_string)] = holder.key_for(
                build_request(prompt, llm_string, fields)
            )
        return holder.asked_again_before_answered(key)

    def _replayed(self, prompt: str, llm_string: str, call: Call) -> RETURN_VAL_TYPE:
        generations = replayed_generations(call)
        self._store(prompt, llm_string, encode_generations(generations))
        return generations

    def _begin(self, cassette: Cassette, prompt: str, llm_string: str) -> Call:
        fields = cassette.state("langchain.model_fields", ModelFields)
        request = build_request(prompt, llm_string, fields)
        return cassette.begin(request, meta=call_meta(), autosave=self.autosave)

    # -- what this cache stored ----------------------------------------------------------------

    def _holder(self) -> Cassette | None:
        """Where this cache's entries live: the cassette of the block open here (they die
        with it, so one test never answers another's calls), else its own."""
        return serving_cassette() or self.cassette

    def _entries(self, holder: Cassette) -> dict[tuple[str, str], dict[str, Any]]:
        """This cache's entries kept by ``holder`` (under ``self._lock``)."""
        per_cache: weakref.WeakKeyDictionary[CassetteCache, dict[Any, Any]]
        per_cache = holder.state(ENTRIES, weakref.WeakKeyDictionary)
        found = per_cache.get(self)
        if found is None:
            found = per_cache[self] = {}
        return found

    def _store(self, prompt: str, llm_string: str, encoded: dict[str, Any]) -> None:
        holder = self._holder()
        if holder is not None:
            with self._lock:
                self._entries(holder)[(prompt, llm_string)] = encoded

    def _stored(self, prompt: str, llm_string: str) -> dict[str, Any] | None:
        holder = self._holder()
        if holder is None:
            return None
        with self._lock:
            return self._entries(holder).get((prompt, llm_string))

    def stored(self) -> dict[tuple[str, str], RETURN_VAL_TYPE]:
        """What this cache holds here now, by ``(prompt, llm_string)``: the answers it was
        given (``update``) or gave from its cassette (``lookup``) in this run, as fresh
        copies. Inside a ``use_cassette`` block it holds what it stored in that block."""
        holder = self._holder()
        if holder is None:
            return {}
        with self._lock:
            entries = dict(self._entries(holder))
        return {k: [decode_generation(g) for g in v["generations"]] for k, v in entries.items()}

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
