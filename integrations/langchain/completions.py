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

from langchain_core.language_models.llms import BaseLLM
from langchain_core.outputs import LLMResult, RunInfo

from chaincassette import Call, Cassette, serving_cassette
from chaincassette.layers import answering
from chaincassette.live_guard import check_live
from chaincassette.patching import SharedPatches

from .labels import call_meta
from .requests import build_request
from .routing import RoutedCache, cache_consulted
from .serde import record_generations, replayed_generations


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
            cassette = _bypassed_cassette(self)
            if cassette is None:  # LangChain's cache hook records it, or nothing does
                with answering():
                    return await original(self, prompts, stop, run_managers, **k)
            calls = _begin(self, cassette, prompts, stop)
            live = [i for i, call in enumerate(calls) if not call.hit]
            output = None
            if live:
                try:
                    with answering():
                        output = await original(
                            self,
                            [prompts[i] for i in live],
                            stop,
                            [run_managers[i] for i in live],
                            **k,
                        )
                except BaseException as error:
                    _fail(calls, live, error)
                    raise
            result, hits = _merge(calls, live, output, run_managers)
            for i, hit in hits:
                await run_managers[i].on_llm_end(LLMResult(generations=[hit]))
            return result

        return _agenerate_helper

    def _generate_helper(
        self: BaseLLM, prompts: list[str], stop: Any, run_managers: list[Any], **k: Any
    ) -> Any:
        cassette = _bypassed_cassette(self)
        if cassette is None:
            with answering():
                return original(self, prompts, stop, run_managers, **k)
        calls = _begin(self, cassette, prompts, stop)
        live = [i for i, call in enumerate(calls) if not call.hit]
        output = None
        if live:
            try:
                with answering():
                    output = original(
                        self, [prompts[i] for i in live], stop, [run_managers[i] for i in live], **k
                    )
            except BaseException as error:
                _fail(calls, live, error)
                raise
        result, hits = _merge(calls, live, output, run_managers)
        for i, hit in hits:
            run_managers[i].on_llm_end(LLMResult(generations=[hit]))
        return result

    return _generate_helper


def _bypassed_cassette(model: BaseLLM) -> Cassette | None:
    """The serving cassette when this call did not go through a cassette cache, else ``None``."""
    if isinstance(cache_consulted(model), RoutedCache):
        return None
    cassette = serving_cassette()
    if cassette is None:
        check_live(f"completion LLM call ({type(model).__name__})")
    return cassette


def _llm_string(model: BaseLLM, stop: Any) -> str:
    params = model._dict_for_compat()  # what ``BaseLLM.generate`` keys its cache with
    params["stop"] = stop
    return str(sorted(params.items()))


def _begin(model: BaseLLM, cassette: Cassette, prompts: list[str], stop: Any) -> list[Call]:
    llm_string = _llm_string(model, stop)
    meta = call_meta()
    return [cassette.begin(build_request(prompt, llm_string), meta=meta) for prompt in prompts]


def _fail(calls: list[Call], live: list[int], error: BaseException) -> None:
    """A provider error answers the one live prompt it was raised for; with several live
    prompts in one batch it is nobody's answer, and nothing is kept."""
    if len(live) == 1:
        calls[live[0]].fail(error)
        return
    for index in live:
        calls[index].abandon()


def _merge(
    calls: list[Call], live: list[int], output: LLMResult | None, run_managers: list[Any]
) -> tuple[LLMResult, list[tuple[int, Any]]]:
    """The helper's result for all prompts (recorded answers and recorded live ones), and the
    replayed ones whose ``on_llm_end`` the caller fires as a live call would."""
    generations: list[Any] = [None] * len(calls)
    hits = []
    for index, call in enumerate(calls):
        if call.hit:
            generations[index] = replayed_generations(call)
            if index < len(run_managers):
                hits.append((index, generations[index]))
    if output is not None:
        for index, generated in zip(live, output.generations, strict=False):
            record_generations(calls[index], generated)
            generations[index] = generated
    result = LLMResult(generations=generations, llm_output=output.llm_output if output else {})
    if run_managers:
        result.run = [RunInfo(run_id=manager.run_id) for manager in run_managers]
    return result, hits
