"""Completion LLMs whose calls bypass the cassette cache are served here instead.

Completion LLMs (``BaseLLM``) reach a cassette through LangChain's cache hook, which
``cache=False`` (or another cache set inside the block, or the model's own cache)
bypasses. While any cassette block is active ``BaseLLM._generate_helper`` and
``_agenerate_helper`` (which LangChain calls for the prompts no cache answered) look
such calls up in the active cassette with the same key the cache would use, replay
them (firing ``on_llm_end`` as a live call does) or run and record them.
"""

from __future__ import annotations

import functools
from typing import Any

from langchain_core.caches import BaseCache
from langchain_core.globals import get_llm_cache
from langchain_core.language_models.llms import BaseLLM
from langchain_core.outputs import LLMResult, RunInfo

from chaincassette import current_cassette
from chaincassette.patching import SharedPatches

from .cache import ActiveCassetteCache, CassetteCache


def _apply(patches: SharedPatches) -> None:
    for name in ("_generate_helper", "_agenerate_helper"):
        original = BaseLLM.__dict__[name]
        patches.replace(BaseLLM, name, functools.wraps(original)(_guard(original, name)))


_PATCHES = SharedPatches(_apply)
install = _PATCHES.install  # use-counted; pair with ``uninstall``
uninstall = _PATCHES.uninstall


def _guard(original: Any, name: str) -> Any:
    if name == "_agenerate_helper":

        async def _agenerate_helper(
            self: BaseLLM, prompts: list[str], stop: Any, run_managers: list[Any], **k: Any
        ) -> Any:
            cache = _bypassing_cache(self)
            if cache is None:
                return await original(self, prompts, stop, run_managers, **k)
            hits: list[Any] = _lookups(self, cache, prompts, stop)
            live = [i for i, hit in enumerate(hits) if hit is None]
            output = None
            if live:
                output = await original(
                    self, [prompts[i] for i in live], stop, [run_managers[i] for i in live], **k
                )
            result = _merge(self, cache, prompts, stop, hits, live, output, run_managers)
            for i, hit in enumerate(hits):
                if hit is not None and i < len(run_managers):
                    await run_managers[i].on_llm_end(LLMResult(generations=[hit]))
            return result

        return _agenerate_helper

    def _generate_helper(
        self: BaseLLM, prompts: list[str], stop: Any, run_managers: list[Any], **k: Any
    ) -> Any:
        cache = _bypassing_cache(self)
        if cache is None:
            return original(self, prompts, stop, run_managers, **k)
        hits = _lookups(self, cache, prompts, stop)
        live = [i for i, hit in enumerate(hits) if hit is None]
        output = None
        if live:
            output = original(
                self, [prompts[i] for i in live], stop, [run_managers[i] for i in live], **k
            )
        result = _merge(self, cache, prompts, stop, hits, live, output, run_managers)
        for i, hit in enumerate(hits):
            if hit is not None and i < len(run_managers):
                run_managers[i].on_llm_end(LLMResult(generations=[hit]))
        return result

    return _generate_helper


def _cache_of(model: BaseLLM) -> BaseCache | None:
    """The cache LangChain consulted for this call (as ``_resolve_cache`` picks it)."""
    if isinstance(model.cache, BaseCache):
        return model.cache
    return None if model.cache is False else get_llm_cache()


def _bypassing_cache(model: BaseLLM) -> ActiveCassetteCache | None:
    """A cache on the active cassette when this call did not go through one, else ``None``."""
    if current_cassette() is None or isinstance(_cache_of(model), CassetteCache):
        return None
    return ActiveCassetteCache()


def _llm_string(model: BaseLLM, stop: Any) -> str:
    params = model._dict_for_compat()  # what ``BaseLLM.generate`` keys its cache with
    params["stop"] = stop
    return str(sorted(params.items()))


def _lookups(
    model: BaseLLM, cache: ActiveCassetteCache, prompts: list[str], stop: Any
) -> list[Any]:
    llm_string = _llm_string(model, stop)
    return [cache.lookup(prompt, llm_string) for prompt in prompts]


def _merge(
    model: BaseLLM,
    cache: ActiveCassetteCache,
    prompts: list[str],
    stop: Any,
    hits: list[Any],
    live: list[int],
    output: LLMResult | None,
    run_managers: list[Any],
) -> LLMResult:
    """The helper's result for all prompts: recorded answers and recorded live ones."""
    generations: list[Any] = list(hits)
    if output is not None:
        llm_string = _llm_string(model, stop)
        for index, generated in zip(live, output.generations, strict=False):
            cache.update(prompts[index], llm_string, generated)
            generations[index] = generated
    result = LLMResult(generations=generations, llm_output=output.llm_output if output else {})
    if run_managers:
        result.run = [RunInfo(run_id=manager.run_id) for manager in run_managers]
    return result
