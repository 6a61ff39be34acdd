"""In-process behaviour: misses that name the change, the cache on its own, tool replay,
concurrency run many times, trace divergence, and that every patch is undone on exit."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest
from fake_provider import PROVIDER_CALLS, FakeProviderChat, FakeProviderLLM
from langchain_core.globals import get_llm_cache, set_llm_cache
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool, ToolException, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from lc_programs import (
    QUESTION,
    TOOL_RUNS,
    TokenEvents,
    get_time,
    get_weather,
    messages_summary,
    react_agent,
)
from stream_refusal import assert_streams_refused

from chaincassette import Cassette, CassetteMiss, use_cassette
from chaincassette.integrations.langchain import CassetteCache, TraceDivergenceWarning


def record_then_replay(path: Path, program: Any, replays: int = 1, **options: Any) -> list[Any]:
    with use_cassette(path, mode="record", **options):
        results = [program()]
    calls = len(PROVIDER_CALLS)
    for _ in range(replays):
        with use_cassette(path, mode="replay", **options) as cassette:
            results.append(program())
        assert cassette.stats.missed == 0 and cassette.stats.replayed == cassette.stats.interactions
    assert len(PROVIDER_CALLS) == calls, "replay called the provider"
    return results


# -- misses name what changed ---------------------------------------------------------------------


def test_changed_prompt_tool_schema_and_temperature_miss_naming_the_change(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"

    def ask(
        question: str = QUESTION, tools: Any = (get_weather, get_time), temperature: float = 0.0
    ) -> Any:
        model = FakeProviderChat(scenario="react", temperature=temperature).bind_tools(list(tools))
        return model.invoke(question)

    with use_cassette(path, mode="record"):
        ask()
    calls = len(PROVIDER_CALLS)

    @tool
    def get_weather_v2(city: str, units: str = "C") -> str:
        """Get the current weather for a city."""
        return city

    get_weather_v2.name = "get_weather"
    cases = [
        (lambda: ask("Weather and time in Lima?"), "messages[0] (user).content"),
        (lambda: ask(tools=(get_weather_v2, get_time)), "tools[get_weather]"),
        (lambda: ask(temperature=0.7), "params.temperature"),
    ]
    for call, named in cases:
        with pytest.raises(CassetteMiss) as caught, use_cassette(path, mode="replay"):
            call()
        assert named in str(caught.value), str(caught.value)
    assert len(PROVIDER_CALLS) == calls


def test_streaming_miss_in_replay_never_goes_live(tmp_path: Path) -> None:
    path = tmp_path / "stream.yaml"
    with use_cassette(path, mode="record"):
        list(FakeProviderChat().stream("hello"))
    with pytest.raises(CassetteMiss), use_cassette(path, mode="replay"):
        list(FakeProviderChat().stream("something else"))
    assert PROVIDER_CALLS == ["chat:stream"]


# -- the cache on its own --------------------------------------------------------------------------


def test_cache_alone_replays_chat_and_completion_and_answers_repeats(tmp_path: Path) -> None:
    """A repeated identical call is answered by the cache (``BaseCache``'s contract), with
    the message and ID of the first, in the recording run and every replay."""
    path = tmp_path / "cache.yaml"

    def program() -> Any:
        chat = FakeProviderChat(scenario="chat")
        llm = FakeProviderLLM()
        first, second = chat.invoke("same question"), chat.invoke("same question")
        return [
            first.id,
            second.id,
            first.content,
            second.content,
            llm.invoke("poem"),
            llm.invoke("poem"),
        ]

    results = []
    for mode in ("record", "replay", "replay"):
        cache = CassetteCache(path, mode=mode, stream_replay=False)
        set_llm_cache(cache)
        try:
            results.append(program())
        finally:
            set_llm_cache(None)
            cache.close()
    assert PROVIDER_CALLS == ["chat:generate", "completion"]  # the repeats: from the cache
    assert results[0] == results[1] == results[2]  # the record run saw what replays see
    assert results[1][0] == results[1][1] and results[1][2] == results[1][3]
    assert results[1][0].startswith("cassette-") and results[1][4] == results[1][5]


def test_cache_per_model_and_native_async(tmp_path: Path) -> None:
    path = tmp_path / "per_model.yaml"
    cache = CassetteCache(path, mode="record", stream_replay=False)
    first = FakeProviderChat(cache=cache).invoke("hi").content
    cache.close()
    replay = CassetteCache(path, mode="replay", stream_replay=False)
    try:
        assert get_llm_cache() is None
        model = FakeProviderChat(cache=replay)
        assert asyncio.run(model.ainvoke("hi")).content == first
        with pytest.raises(CassetteMiss):
            asyncio.run(model.ainvoke("other"))
    finally:
        replay.close()
    assert PROVIDER_CALLS == ["chat:generate"]


def test_cache_lookup_update_clear_contract(tmp_path: Path) -> None:
    from langchain_core.load import dumps
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration

    cache = CassetteCache(
        tmp_path / "raw.yaml", mode="new_episodes", stream_replay=False, autosave=True
    )
    prompt = dumps([HumanMessage("hello")])
    llm_string = FakeProviderChat()._get_llm_string()
    assert cache.lookup(prompt, llm_string) is None
    cache.update(prompt, llm_string, [ChatGeneration(message=AIMessage("hi there"))])
    assert (tmp_path / "raw.yaml").exists()  # saved without any use_cassette block
    stored = cache.lookup(prompt, llm_string)  # BaseCache: an update, then its lookup
    assert isinstance(stored, list) and stored[0].message.content == "hi there"
    assert stored is not cache.lookup(prompt, llm_string)  # a fresh copy each time
    cache.clear()  # forgotten: the model is asked again (here, recording: nothing yet)
    assert cache.lookup(prompt, llm_string) is None
    cache.close()
    for _ in range(2):  # replayed: the recording, then what the cache stored of it
        replay = CassetteCache(tmp_path / "raw.yaml", mode="replay", stream_replay=False)
        answers = [replay.lookup(prompt, llm_string) for _ in range(3)]
        assert [a[0].message.content for a in answers if a] == ["hi there"] * 3
        assert replay.cassette is not None and replay.cassette.stats.replayed == 1
        replay.close()


# -- concurrency, run many times ------------------------------------------------------------------


def parallel_tools_graph() -> Any:
    """A hand-written graph whose model asks for two tools at once, run as parallel nodes."""
    model = FakeProviderChat(scenario="parallel").bind_tools([get_weather, get_time])
    tools = {t.name: t for t in (get_weather, get_time)}

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def run_tools(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        calls = getattr(last, "tool_calls", [])
        results = RunnableLambda(lambda c: tools[c["name"]].invoke(c)).batch(calls)
        return {"messages": results}

    def route(state: MessagesState) -> str:
        return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", run_tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route)
    graph.add_edge("tools", "model")
    return graph.compile()


def test_graph_with_parallel_tool_calls_replays_every_time(tmp_path: Path) -> None:
    graph = parallel_tools_graph()

    def program() -> Any:
        return messages_summary(graph.invoke({"messages": [("user", QUESTION)]})["messages"])

    results = record_then_replay(tmp_path / "parallel.yaml", program, replays=15)
    assert all(r == results[0] for r in results)


def test_ten_concurrent_ainvoke_replay_every_time(tmp_path: Path) -> None:
    model = FakeProviderChat(scenario="chat")

    def program() -> Any:
        async def main() -> Any:
            questions = [f"Question {i % 4}" for i in range(10)]
            return [
                (a.id, a.content)
                for a in await asyncio.gather(*(model.ainvoke(q) for q in questions))
            ]

        return asyncio.run(main())

    results = record_then_replay(tmp_path / "gather.yaml", program, replays=10)
    assert all(r == results[0] for r in results)
    assert len({content for _, content in results[0]}) == 10  # duplicates got distinct answers


# -- tool replay -------------------------------------------------------------------------------------


def test_tool_replay_serves_results_and_errors_with_live_call_ids(tmp_path: Path) -> None:
    @tool
    def flaky(city: str) -> str:
        """Fails for Atlantis."""
        TOOL_RUNS.append(f"flaky({city})")
        if city == "Atlantis":
            raise ToolException(f"no such city: {city}")
        return f"ok {city}"

    flaky.handle_tool_error = True

    def program() -> Any:
        events = TokenEvents()
        agent_out = messages_summary(
            react_agent().invoke({"messages": [("user", QUESTION)]})["messages"]
        )
        direct = [
            flaky.invoke(
                {"name": "flaky", "args": {"city": c}, "id": f"call_live_{c}", "type": "tool_call"}
            )
            for c in ("Paris", "Atlantis")
        ]
        return agent_out, [(m.content, m.status, m.tool_call_id) for m in direct], events.ends

    TOOL_RUNS.clear()
    path = tmp_path / "tools.yaml"
    with use_cassette(path, mode="record", replay_tools=True):
        recorded = program()
    runs = list(TOOL_RUNS)
    assert runs == ["get_weather(Paris)", "get_time(CET)", "flaky(Paris)", "flaky(Atlantis)"]
    with use_cassette(path, mode="replay", replay_tools=True) as cassette:
        replayed = program()
    assert runs == TOOL_RUNS, "a recorded tool ran again"
    assert replayed == recorded
    assert replayed[1][1] == ("no such city: Atlantis", "error", "call_live_Atlantis")
    tool_nodes = [n for n in cassette.trace or [] if n["type"] == "tool"]
    assert len(tool_nodes) == 4  # tool callbacks fired on replay
    assert cassette.trace_divergence is None  # type: ignore[attr-defined]


def test_without_replay_tools_tools_run_live(tmp_path: Path) -> None:
    TOOL_RUNS.clear()
    record_then_replay(
        tmp_path / "live_tools.yaml",
        lambda: react_agent().invoke({"messages": [("user", QUESTION)]}),
    )
    assert TOOL_RUNS.count("get_weather(Paris)") == 2


# -- trace divergence ---------------------------------------------------------------------------------


def test_replay_reports_first_trace_divergence(tmp_path: Path) -> None:
    path = tmp_path / "diverge.yaml"
    prompt = ChatPromptTemplate.from_messages([("user", "Capital of {country}?")])
    with use_cassette(path, mode="record"):
        (prompt | FakeProviderChat()).invoke({"country": "France"})
    changed = prompt | FakeProviderChat() | RunnableLambda(lambda m: m.content, name="postprocess")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with use_cassette(path, mode="replay") as cassette:
            changed.invoke({"country": "France"})
    divergence = cassette.trace_divergence  # type: ignore[attr-defined]
    assert divergence and "postprocess" in divergence
    assert any(issubclass(w.category, TraceDivergenceWarning) for w in caught)


# -- every patch is undone --------------------------------------------------------------------------


def test_the_patches_stay_for_the_next_block_and_undo_all_restores_them(tmp_path: Path) -> None:
    """The first block wraps the classes once; later blocks cost nothing of it, nothing
    global is left set between blocks, and ``undo_all`` puts back every attribute."""
    from chaincassette.patching import undo_all

    undo_all()
    names = ("batch", "__pydantic_init_subclass__")
    before_base = {n: BaseChatModel.__dict__.get(n) for n in names}
    before_fake = {n: FakeProviderChat.__dict__[n] for n in ("_generate", "_stream", "_astream")}
    before_tool = (BaseTool.__dict__["run"], BaseTool.__dict__["arun"])
    with use_cassette(tmp_path / "x.yaml", mode="record", replay_tools=True):
        assert BaseChatModel.__dict__["batch"] is not before_base["batch"]
        assert FakeProviderChat.__dict__["_generate"] is not before_fake["_generate"]
        assert BaseTool.__dict__["run"] is not before_tool[0]
        FakeProviderChat().invoke("hi")
    wrapped = FakeProviderChat.__dict__["_generate"]
    assert wrapped is not before_fake["_generate"] and get_llm_cache() is None
    with use_cassette(tmp_path / "x.yaml", mode="replay", replay_tools=True):
        assert FakeProviderChat.__dict__["_generate"] is wrapped  # not wrapped again
        FakeProviderChat().invoke("hi")
    undo_all()
    assert {n: BaseChatModel.__dict__.get(n) for n in names} == before_base
    assert {n: FakeProviderChat.__dict__[n] for n in before_fake} == before_fake
    assert (BaseTool.__dict__["run"], BaseTool.__dict__["arun"]) == before_tool
    assert get_llm_cache() is None


def test_outside_a_cassette_models_run_untouched(tmp_path: Path) -> None:
    cache = CassetteCache(tmp_path / "unused.yaml", mode="replay")  # wrappers installed, inert
    try:
        assert FakeProviderChat().invoke("hi").id.startswith("chatcmpl-")
        assert list(FakeProviderChat().stream("hi"))
        assert PROVIDER_CALLS == ["chat:generate", "chat:stream"]  # both reached the provider
    finally:
        cache.close()
    assert not (tmp_path / "unused.yaml").exists()


def test_cassette_object_and_options(tmp_path: Path) -> None:
    cassette = Cassette(tmp_path / "obj.yaml", mode="record")
    with pytest.raises(TypeError):
        CassetteCache(cassette, mode="replay")
    cache = CassetteCache(cassette)
    assert cache.cassette is cassette and "obj.yaml" in repr(cache)
    cache.close()


def test_serving_across_streaming_is_opt_in(tmp_path: Path) -> None:
    path = tmp_path / "across.yaml"
    with use_cassette(path, mode="record", serve_across_streaming=True):
        answer = FakeProviderChat().invoke("hello")
    with use_cassette(path, mode="replay", serve_across_streaming=True):
        chunks = list(FakeProviderChat().stream("hello"))
    assert "".join(str(c.content) for c in chunks) == answer.content
    with pytest.raises(CassetteMiss), use_cassette(path, mode="replay"):
        list(FakeProviderChat().stream("hello"))
    assert PROVIDER_CALLS == ["chat:generate"]


def test_endpoint_and_credentials_never_reach_the_key() -> None:
    """A bug report recorded against one proxy replays behind another, with another key."""
    from langchain_core.load import dumps
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI

    from chaincassette import key_of, normalize
    from chaincassette.integrations.langchain import build_request

    def request_for(base_url: str, key: str, temperature: float = 0.2) -> dict[str, Any]:
        model = ChatOpenAI(
            model="gpt-4o-mini", base_url=base_url, api_key=key, temperature=temperature
        )
        return build_request(dumps([HumanMessage("hi")]), model._get_llm_string())

    one = request_for("http://127.0.0.1:1/v1", "sk-" + "a" * 40)
    other = request_for("https://proxy.example/v1", "sk-" + "b" * 40)
    assert "openai_api_base" not in one["params"] and one["params"]["temperature"] == 0.2
    assert key_of(normalize(one)) == key_of(normalize(other))
    hotter = request_for("http://127.0.0.1:1/v1", "sk-" + "a" * 40, temperature=0.9)
    assert key_of(normalize(one)) != key_of(normalize(hotter))


class _UnmarkedStreamProvider(BaseChatModel):
    """Streams like ChatOpenAI: its chunks never say which one is last."""

    @property
    def _llm_type(self) -> str:
        return "unmarked-stream-provider"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        PROVIDER_CALLS.append("unmarked:generate")
        return ChatResult(generations=[ChatGeneration(message=AIMessage("hello world"))])

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        from langchain_core.messages import AIMessageChunk
        from langchain_core.outputs import ChatGenerationChunk

        PROVIDER_CALLS.append("unmarked:stream")
        for word in ("hello", " world"):
            yield ChatGenerationChunk(message=AIMessageChunk(word))


def test_streamed_chunk_ids_are_the_same_in_record_and_every_replay(tmp_path: Path) -> None:
    path = tmp_path / "unmarked.yaml"

    def chunks() -> list[tuple[str | None, Any, Any]]:
        return [(c.id, c.content, c.chunk_position) for c in _UnmarkedStreamProvider().stream("hi")]

    async def achunks() -> list[tuple[str | None, Any, Any]]:
        return [
            (c.id, c.content, c.chunk_position)
            async for c in _UnmarkedStreamProvider().astream("hi")
        ]

    with use_cassette(path, mode="record"):
        recorded = [chunks(), asyncio.run(achunks())]
    for _ in range(2):
        with use_cassette(path, mode="replay"):
            assert [chunks(), asyncio.run(achunks())] == recorded
    assert recorded[0][-1] == (recorded[0][0][0], "", "last")  # the closing chunk, not lc_run--…
    assert PROVIDER_CALLS.count("unmarked:stream") == 2


def test_keys_agree_whether_or_not_langchain_handed_its_serialization_over(tmp_path: Path) -> None:
    """Recorded through chaincassette's routed cache (which hands LangChain's prompt and
    llm_string to the provider boundary), replayed behind a user's own global cache (which
    does not): the boundary computes the same strings itself, so every call hits."""
    from langchain_core.caches import InMemoryCache

    path = tmp_path / "handover.yaml"

    def ask() -> Any:
        model = FakeProviderChat(scenario="react", temperature=0.3).bind_tools(
            [get_weather, get_time]
        )
        return model.invoke(QUESTION, stop=["\nObservation"]).tool_calls

    assert get_llm_cache() is None
    with use_cassette(path, mode="record"):
        recorded = ask()
    calls = len(PROVIDER_CALLS)
    set_llm_cache(InMemoryCache())
    try:
        with use_cassette(path, mode="replay") as cassette:
            assert ask() == recorded
        assert cassette.stats.replayed == 1 and cassette.stats.missed == 0
    finally:
        set_llm_cache(None)
    assert len(PROVIDER_CALLS) == calls


# -- the routed cache: shared by overlapping blocks, in front of a user's cache ---------------


def test_overlapping_blocks_in_two_tasks_keep_the_completion_cache(tmp_path: Path) -> None:
    paths = tmp_path / "a.yaml", tmp_path / "b.yaml"

    async def task(path: Path, mode: str, hold: int, prompt: str) -> str:
        async with use_cassette(path, mode=mode):
            for _ in range(hold):  # the other task's block exits meanwhile
                await asyncio.sleep(0)
            return await FakeProviderLLM().ainvoke(prompt)

    async def main(mode: str) -> list[str]:
        return list(
            await asyncio.gather(task(paths[0], mode, 0, "A"), task(paths[1], mode, 20, "B"))
        )

    recorded = asyncio.run(main("record"))
    assert all(p.exists() for p in paths)
    calls = len(PROVIDER_CALLS)
    assert asyncio.run(main("replay")) == recorded
    assert len(PROVIDER_CALLS) == calls
    assert get_llm_cache() is None


def test_a_user_global_cache_is_routed_around_and_restored(tmp_path: Path) -> None:
    from langchain_core.caches import InMemoryCache

    path = tmp_path / "user-cache.yaml"

    def program() -> Any:
        text = FakeProviderLLM().invoke("hi")
        first, second = FakeProviderChat().invoke("hello"), FakeProviderChat().invoke("hello")
        return text, first.id, second.id, first.usage_metadata, second.usage_metadata

    user = InMemoryCache()
    set_llm_cache(user)
    try:
        recorded, replayed = record_then_replay(path, program)
        assert get_llm_cache() is user
    finally:
        set_llm_cache(None)
    assert replayed == recorded
    assert recorded[1] != recorded[2]
    assert "total_cost" not in (replayed[4] or {})


def test_completion_llms_that_bypass_the_cache_are_recorded_and_replayed(tmp_path: Path) -> None:
    from langchain_core.caches import InMemoryCache

    path = tmp_path / "no-cache.yaml"

    def program() -> Any:
        async def run() -> Any:
            return await FakeProviderLLM(cache=False).abatch(["a", "b"])

        plain = FakeProviderLLM().invoke("hi")
        uncached = FakeProviderLLM(cache=False).generate(["hi", "there"])
        texts = [g[0].text for g in uncached.generations]
        own = FakeProviderLLM(cache=InMemoryCache()).invoke("own cache")
        return plain, texts, asyncio.run(run()), own

    recorded, replayed, again = record_then_replay(path, program, replays=2)
    assert replayed == recorded == again
    with use_cassette(path, mode="replay"):  # cache=False keys exactly as the cache does
        assert FakeProviderLLM(cache=False).invoke("hi") == recorded[0]
    calls = len(PROVIDER_CALLS)
    assert FakeProviderLLM(cache=False).invoke("hi")  # outside a block it runs as usual
    assert PROVIDER_CALLS[calls:] == ["completion"]


# -- tool errors replay with the exact text -----------------------------------------------------


class QuotaError(Exception):
    """Its ``__init__`` takes other arguments than its ``args``: rebuilt as a look-alike."""

    def __init__(self, used: int) -> None:
        super().__init__(f"quota exceeded after {used} calls")


def test_tool_errors_replay_with_exact_str_and_repr(tmp_path: Path) -> None:
    from langgraph.prebuilt import ToolNode, create_react_agent

    @tool
    def get_weather(city: str) -> str:
        """Get weather."""
        TOOL_RUNS.append(f"weather({city})")
        return {"paris": "sunny"}[city]  # KeyError('Paris'): str is "'Paris'"

    @tool
    def get_time(tz: str) -> str:
        """Get time."""
        TOOL_RUNS.append(f"time({tz})")
        raise QuotaError(3)

    def program() -> Any:
        node = ToolNode([get_weather, get_time], handle_tool_errors=(KeyError, QuotaError))
        agent = create_react_agent(FakeProviderChat(scenario="react"), node)
        out = agent.invoke({"messages": [("user", QUESTION)]})
        errors = []
        for name, args in (("get_weather", {"city": "Paris"}), ("get_time", {"tz": "CET"})):
            try:
                {"get_weather": get_weather, "get_time": get_time}[name].invoke(args)
            except Exception as error:
                errors.append((str(error), repr(error), isinstance(error, (KeyError, QuotaError))))
        return messages_summary(out["messages"]), errors

    TOOL_RUNS.clear()
    path = tmp_path / "tool-errors.yaml"
    with use_cassette(path, mode="record", replay_tools=True):
        recorded = program()
    runs, calls = list(TOOL_RUNS), len(PROVIDER_CALLS)
    assert recorded[1][0] == ("'Paris'", "KeyError('Paris')", True)
    for _ in range(2):
        with use_cassette(path, mode="replay", replay_tools=True) as cassette:
            assert program() == recorded
        assert cassette.stats.missed == 0
    assert runs == TOOL_RUNS and len(PROVIDER_CALLS) == calls


def test_a_recorded_error_class_is_never_imported(tmp_path: Path) -> None:
    import sys

    from chaincassette.error_codec import rebuild_error as _revive_error

    recorded = {
        "type": "chaincassette_no_such_module.sub.Boom",
        "bases": ["builtins.ValueError", "builtins.Exception", "builtins.BaseException"],
        "args": ["x", 1],
        "message": "boom x",
        "repr": "Boom('x', 1)",
    }
    error = _revive_error(recorded)
    assert "chaincassette_no_such_module" not in sys.modules
    assert isinstance(error, ValueError)
    assert (str(error), repr(error)) == ("boom x", "Boom('x', 1)")
    tool_error = _revive_error(
        {**recorded, "bases": ["langchain_core.tools.base.ToolException", "builtins.Exception"]}
    )
    assert isinstance(tool_error, ToolException) and str(tool_error) == "boom x"


# -- a stream the consumer leaves early ----------------------------------------------------------


def test_a_stream_left_early_replays_its_prefix_and_misses_past_it(tmp_path: Path) -> None:
    path = tmp_path / "early.yaml"

    def program() -> Any:
        model = FakeProviderChat()
        for chunk in model.stream("tell me"):
            first = chunk.content
            break

        async def two() -> list[Any]:
            chunks = model.astream("tell me async")
            seen = [(await chunks.__anext__()).content, (await chunks.__anext__()).content]
            await chunks.aclose()
            return seen

        return first, asyncio.run(two()), model.invoke("next").content

    with use_cassette(path, mode="record"):
        recorded = program()
    calls = len(PROVIDER_CALLS)
    for _ in range(2):
        with use_cassette(path, mode="replay") as cassette:
            assert program() == recorded
        assert cassette.stats.missed == 0 and cassette.stats.replayed == 3
    with (
        pytest.raises(CassetteMiss, match="stopped after 1 chunk ") as info,
        use_cassette(path, mode="replay"),
    ):
        list(FakeProviderChat().stream("tell me"))
    assert len(PROVIDER_CALLS) == calls
    assert str(info.value).endswith(  # the mode= argument beats CHAINCASSETTE_MODE: change it
        "re-record it with the program that reads further: pass mode='record' to the cassette "
        "(in place of its mode='replay', which wins over CHAINCASSETTE_MODE)"
    )


def test_stream_replay_off_raises_for_streams_in_replay_instead_of_going_live(
    tmp_path: Path,
) -> None:
    path = tmp_path / "no-stream-replay.yaml"
    results = []
    for mode in ("record", "replay", "replay"):
        cache = CassetteCache(path, mode=mode, stream_replay=False)
        set_llm_cache(cache)
        try:
            message = FakeProviderChat().invoke("hi")
            results.append((message.id, message.content))
            if mode == "replay":
                assert_streams_refused(FakeProviderChat, "never recorded")
        finally:
            set_llm_cache(None)
            cache.close()
    assert results[0] == results[1] == results[2]
    calls = len(PROVIDER_CALLS)
    chunks = list(FakeProviderChat().stream("live again"))  # no cache: streams run as usual
    assert "".join(str(c.content) for c in chunks) and PROVIDER_CALLS[calls:] == ["chat:stream"]


def test_batch_of_identical_prompts_gives_each_position_its_own_recording(tmp_path: Path) -> None:
    import random
    import time

    class Jittery(FakeProviderChat):
        """A provider whose latency varies, so a thread pool finishes in any order."""

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            time.sleep(random.random() * 0.01)
            return super()._generate(messages, stop, run_manager, **kw)

    path = tmp_path / "batch.yaml"
    concurrent = {"max_concurrency": 8}
    with use_cassette(path, mode="record"):
        recorded = [m.content for m in Jittery().batch(["same"] * 8, config=concurrent)]
    assert len(set(recorded)) == 8  # the provider answers differently every time
    calls = len(PROVIDER_CALLS)
    for _ in range(5):
        with use_cassette(path, mode="replay"):
            assert [m.content for m in Jittery().batch(["same"] * 8, config=concurrent)] == recorded
    assert len(PROVIDER_CALLS) == calls
