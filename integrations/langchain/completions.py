"""Completion LLMs no ``CassetteCache`` answers are served here.

A completion LLM (``BaseLLM``) reaches a ``CassetteCache`` it consults through LangChain's
cache hook. Every other call (inside a ``use_cassette`` block, where the cache steps aside;
a model whose cache is not a cassette's) reaches ``BaseLLM._generate_helper`` and
``_agenerate_helper``, which LangChain calls for the prompts no cache answered: there each
prompt is looked up in the cassette serving the model, with the key the cache would use,
replayed (firing ``on_llm_end`` as a live call does) or run and recorded.
"""

from __future__ import annotations

import functools
from contextlib import AsyncExitStack, ExitStack
from typing import Any

from langchain_core.language_models import llms
from langchain_core.language_models.llms import BaseLLM
from langchain_core.outputs import LLMResult, RunInfo

from chaincassette import Call, layers, serving_cassette
from chaincassette.live_guard import check_live
from chaincassette.patching import Patches

from . import routing
from .boundary import skip_global_cache_in_blocks
from .labels import call_meta
from .requests import ModelFields, build_request
from .serde import record_generations, replayed_generations

#: LangChain runs the prompts no cache answered here: the one per-prompt hook ``BaseLLM``
#: has (its providers' ``_generate`` takes a whole batch).
HELPERS = ("_generate_helper", "_agenerate_helper")


def _apply(patches: Patches) -> None:
    skip_global_cache_in_blocks(patches, llms)
    for name in HELPERS:
        original = BaseLLM.__dict__[name]
        patches.replace(BaseLLM, name, functools.wraps(original)(_guard(original, name)))


PATCHES = Patches(_apply)
install = PATCHES.install


def _guard(original: Any, name: str) -> Any:
    if name == "_agenerate_helper":

        async def _agenerate_helper(
            self: BaseLLM, prompts: list[str], stop: Any, run_managers: list[Any], **k: Any
        ) -> Any:
            route = _route(self)
            if route is None:  # LangChain's cache hook records it, or nothing does
                try:
                    with layers.answering():
                        return await original(self, prompts, stop, run_managers, **k)
                except BaseException as error:
                    _report_failure(self, prompts, stop, error)
                    raise
            calls = _begin(self, route, prompts, stop)
            live = [i for i, call in enumerate(calls) if not call.hit]
            output = None
            if live:
                try:
                    with layers.answering():
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
            async with AsyncExitStack() as turns:  # hits behind what completed before them
                for call in calls:
                    await turns.enter_async_context(call.turn())
                result, hits = _merge(calls, live, output, run_managers)
            for i, hit in hits:
                await run_managers[i].on_llm_end(LLMResult(generations=[hit]))
            return result

        return _agenerate_helper

    def _generate_helper(
        self: BaseLLM, prompts: list[str], stop: Any, run_managers: list[Any], **k: Any
    ) -> Any:
        route = _route(self)
        if route is None:
            try:
                with layers.answering():
                    return original(self, prompts, stop, run_managers, **k)
            except BaseException as error:
                _report_failure(self, prompts, stop, error)
                raise
        calls = _begin(self, route, prompts, stop)
        live = [i for i, call in enumerate(calls) if not call.hit]
        output = None
        if live:
            try:
                with layers.answering():
                    output = original(
                        self, [prompts[i] for i in live], stop, [run_managers[i] for i in live], **k
                    )
            except BaseException as error:
                _fail(calls, live, error)
                raise
        with ExitStack() as turns:
            for call in calls:
                turns.enter_context(call.turn())
            result, hits = _merge(calls, live, output, run_managers)
        for i, hit in hits:
            run_managers[i].on_llm_end(LLMResult(generations=[hit]))
        return result

    return _generate_helper


def _route(model: BaseLLM) -> routing.Route | None:
    """Where this call is served, or ``None`` when a ``CassetteCache`` answers it (no block is
    open here: the cache serves) or nothing does (the live-call guard may refuse it)."""
    if layers.answered_above():
        return None
    consulted = routing.cache_consulted(model)
    if isinstance(consulted, routing.RoutedCache) and serving_cassette() is None:
        return None
    route = routing.route(model)
    if route is None:
        check_live(f"completion LLM call ({type(model).__name__})")
    return route


def _report_failure(model: BaseLLM, prompts: list[str], stop: Any, error: BaseException) -> None:
    """The prompts LangChain's cache missed failed live: the cache records the error."""
    routing.report_failure(model, lambda: prompts, lambda: llm_string(model, stop), error)


def llm_string(model: BaseLLM, stop: Any) -> str:
    """What ``BaseLLM.generate`` keys its cache with."""
    params = model.asdict()
    params["stop"] = stop
    return str(sorted(params.items()))


def _begin(model: BaseLLM, route: routing.Route, prompts: list[str], stop: Any) -> list[Call]:
    text = llm_string(model, stop)
    cassette, meta = route.cassette, call_meta()
    fields = cassette.state("langchain.model_fields", ModelFields)
    return [
        cassette.begin(build_request(p, text, fields), meta=meta, autosave=route.autosave)
        for p in prompts
    ]


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
