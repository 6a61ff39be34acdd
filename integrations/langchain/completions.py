"""Completion LLMs that bypass the cassette cache in a replaying block: fail, never go live.

Completion LLMs (``BaseLLM``) reach a cassette only through LangChain's cache hook, which
``cache=False`` (or another cache set inside the block) bypasses, so such a call can be
neither recorded nor replayed (a known gap: chat models are served at the provider
boundary instead). Going live silently
in replay mode would hide that, so while any cassette block is active
``BaseLLM._generate_helper``/``_agenerate_helper`` raise ``CassetteMiss`` for them when
the active cassette replays; in recording modes they still run live, unrecorded.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from langchain_core.caches import BaseCache
from langchain_core.globals import get_llm_cache
from langchain_core.language_models.llms import BaseLLM

from chaincassette import CassetteMiss, current_cassette

from .cache import CassetteCache

_lock = threading.Lock()
_users = 0
_originals: dict[str, Any] = {}


def install() -> None:
    """Guard the helpers (use-counted; pair with ``uninstall``)."""
    global _users
    with _lock:
        _users += 1
        if _users > 1:
            return
        for name in ("_generate_helper", "_agenerate_helper"):
            original = BaseLLM.__dict__[name]
            _originals[name] = original
            setattr(BaseLLM, name, functools.wraps(original)(_guard(original, name)))


def uninstall() -> None:
    global _users
    with _lock:
        if _users == 0:
            return
        _users -= 1
        if _users:
            return
        for name, original in _originals.items():
            setattr(BaseLLM, name, original)
        _originals.clear()


def _guard(original: Any, name: str) -> Any:
    if name == "_agenerate_helper":

        async def _agenerate_helper(self: BaseLLM, prompts: list[str], *a: Any, **k: Any) -> Any:
            _check(self, prompts)
            return await original(self, prompts, *a, **k)

        return _agenerate_helper

    def _generate_helper(self: BaseLLM, prompts: list[str], *a: Any, **k: Any) -> Any:
        _check(self, prompts)
        return original(self, prompts, *a, **k)

    return _generate_helper


def _cache_of(model: BaseLLM) -> BaseCache | None:
    """The cache LangChain consulted for this call (as ``_resolve_cache`` picks it)."""
    if isinstance(model.cache, BaseCache):
        return model.cache
    return None if model.cache is False else get_llm_cache()


def _check(model: BaseLLM, prompts: list[str]) -> None:
    cassette = current_cassette()
    if cassette is None or not cassette.replaying or isinstance(_cache_of(model), CassetteCache):
        return
    request = {
        "kind": "completion",
        "model": model._llm_type,
        "prompt": prompts[0] if prompts else "",
    }
    raise CassetteMiss(
        f"{type(model).__name__} is a completion LLM whose calls bypass chaincassette's cache "
        f"(cache=False, or another cache set inside the block), so it cannot be replayed from "
        f"{cassette.path} (mode {cassette.mode.value!r}) and is not called live: completion "
        "LLMs are recorded through LangChain's cache; drop cache=False / set your cache "
        "before the block, or run it outside the cassette block.",
        path=cassette.path,
        mode=cassette.mode.value,
        request=request,
        key=cassette.key_for(request),
    )
