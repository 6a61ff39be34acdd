"""Raw SDK calls recorded and replayed in one process: the real ``openai`` and ``anthropic``
clients against the fake wire server (random ids, timestamps, usage in every answer).

Each test records against the server, then replays from a new ``Cassette`` with the
clients pointed at a port where nothing listens, and compares what the program saw
exactly; the server counts the requests, which must not grow during a replay.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_wire import DIMENSIONS
from fakes.wire import FakeServer
from sdk_clients import (
    ANTHROPIC_KEY,
    DEAD,
    OPENAI_KEY,
    anthropic_client,
    async_anthropic,
    async_openai,
    openai_client,
)
from state_files import files_under

from chaincassette import (
    Cassette,
    CassetteFormatError,
    CassetteMiss,
    statedir,
    storage,
    use_cassette,
)

Run = Callable[[str, str], Any]
USER = [{"role": "user", "content": "What is Docker?"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
TIME = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
}


def dumped(value: Any) -> Any:
    """An SDK object as plain data, to compare record and replay exactly."""
    if isinstance(value, list):
        return [dumped(v) for v in value]
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if dump is not None else value


def record_then_replay(
    tmp_path: Path, fake: FakeServer, run: Run, *, calls: int | None = None
) -> tuple[Any, Cassette]:
    path = tmp_path / "sdk.yaml"
    with use_cassette(path, mode="record") as recording:
        recorded = run(fake.url, fake.base)
    sent = fake.requests
    assert sent > 0 and recording.stats.recorded == (calls or sent)
    with use_cassette(path, mode="replay") as replaying:
        replayed = run(DEAD + "/v1", DEAD)
    assert fake.requests == sent, "a replay reached the server"
    assert replayed == recorded
    assert replaying.stats.replayed == replaying.stats.interactions
    return recorded, replaying


# -- OpenAI ------------------------------------------------------------------------------------


def test_chat_completion_replays_as_the_sdks_own_object(tmp_path: Path, fake: FakeServer) -> None:
    def run(url: str, base: str) -> Any:
        completion = openai_client(url).chat.completions.create(model="gpt-4o-mini", messages=USER)
        assert type(completion).__name__ == "ChatCompletion"
        return dumped(completion)

    recorded, _ = record_then_replay(tmp_path, fake, run)
    assert recorded["choices"][0]["message"]["content"] == "Echo: What is Docker?"
    assert recorded["id"].startswith("chatcmpl-") and recorded["usage"]["total_tokens"] > 0


def test_chat_stream_chunk_for_chunk_with_the_usage_chunk(tmp_path: Path, fake: FakeServer) -> None:
    def run(url: str, base: str) -> Any:
        client = openai_client(url)
        with_usage = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=USER,
            stream=True,
            stream_options={"include_usage": True},
        )
        without = client.chat.completions.create(model="gpt-4o-mini", messages=USER, stream=True)
        with client.chat.completions.stream(model="gpt-4o-mini", messages=USER) as helper:
            events = [event.type for event in helper]
            final = helper.get_final_completion()
        return [dumped(list(with_usage)), dumped(list(without)), events, dumped(final)]

    (usage, plain, events, final), cassette = record_then_replay(tmp_path, fake, run)
    assert usage[-1]["choices"] == [] and usage[-1]["usage"]["total_tokens"] > 0
    assert all(chunk["usage"] is None for chunk in plain)
    assert "content.delta" in events and final["choices"][0]["message"]["content"].startswith(
        "Echo"
    )
    keys = [i.key for i in cassette.interactions]
    assert len(set(keys)) == 2  # the helper sends the plain stream's request: one key, twice


def test_responses_api_whole_streamed_and_through_the_helper(
    tmp_path: Path, fake: FakeServer
) -> None:
    def run(url: str, base: str) -> Any:
        client = openai_client(url)
        whole = client.responses.create(model="gpt-4.1", input="Hi", instructions="Be brief.")
        streamed = list(client.responses.create(model="gpt-4.1", input="Hi there", stream=True))
        with client.responses.stream(model="gpt-4.1", input="Hi again") as helper:
            kinds = [event.type for event in helper]
            final = helper.get_final_response()
        return [dumped(whole), dumped(streamed), kinds, final.output_text]

    (whole, streamed, kinds, text), _ = record_then_replay(tmp_path, fake, run)
    assert whole["output"][0]["content"][0]["text"] == "Echo: Hi"
    assert streamed[-1]["type"] == "response.completed"
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert text == "Echo: Hi again"


def test_embeddings_base64_and_float_bit_identical(tmp_path: Path, fake: FakeServer) -> None:
    def run(url: str, base: str) -> Any:
        client = openai_client(url)
        packed = client.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
        floats = client.embeddings.create(
            model="text-embedding-3-small", input="c", encoding_format="float", dimensions=4
        )
        return [dumped(packed), dumped(floats)]

    (packed, floats), cassette = record_then_replay(tmp_path, fake, run)
    assert len(packed["data"]) == 2 and len(packed["data"][0]["embedding"]) == DIMENSIONS
    assert len(floats["data"][0]["embedding"]) == 4
    kinds = {i.request["kind"] for i in cassette.interactions}
    assert kinds == {"embedding"}


def test_async_openai_calls_and_streams(tmp_path: Path, fake: FakeServer) -> None:
    def run(url: str, base: str) -> Any:
        async def main() -> Any:
            client = async_openai(url)
            completion = await client.chat.completions.create(model="gpt-4o-mini", messages=USER)
            stream = await client.chat.completions.create(
                model="gpt-4o-mini", messages=USER, stream=True
            )
            chunks = [chunk async for chunk in stream]
            response = await client.responses.create(model="gpt-4.1", input="Hi", stream=True)
            events = [event async for event in response]
            vectors = await client.embeddings.create(model="text-embedding-3-small", input="x")
            return dumped([completion, *chunks, *events, vectors])

        return asyncio.run(main())

    recorded, _ = record_then_replay(tmp_path, fake, run)
    assert recorded[0]["object"] == "chat.completion"


# -- Anthropic ---------------------------------------------------------------------------------


def test_anthropic_messages_whole_streamed_and_through_the_helper(
    tmp_path: Path, fake: FakeServer
) -> None:
    def run(url: str, base: str) -> Any:
        client = anthropic_client(base)
        ask = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": USER}
        message = client.messages.create(**ask, system="You are terse.")
        events = list(client.messages.create(**ask, stream=True))
        with client.messages.stream(**ask) as helper:
            text = "".join(helper.text_stream)
            final = helper.get_final_message()
        return [dumped(message), dumped(events), text, dumped(final)]

    (message, events, text, final), _ = record_then_replay(tmp_path, fake, run)
    assert type(message) is dict and message["content"][0]["text"] == "Echo: What is Docker?"
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    assert text == "Echo: What is Docker?" and final["id"].startswith("msg_01")


def test_async_anthropic_and_its_stream_helper(tmp_path: Path, fake: FakeServer) -> None:
    def run(url: str, base: str) -> Any:
        async def main() -> Any:
            client = async_anthropic(base)
            ask = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": USER}
            message = await client.messages.create(**ask)
            async with client.messages.stream(**ask) as helper:
                text = "".join([piece async for piece in helper.text_stream])
            return [dumped(message), text]

        return asyncio.run(main())

    (message, text), _ = record_then_replay(tmp_path, fake, run)
    assert text == message["content"][0]["text"]


# -- keys: what the model reads, not the wire's noise -------------------------------------------


def tool_loop_openai(url: str, base: str, tools: list[dict[str, Any]]) -> list[str]:
    """Two turns: the model calls a tool (a random ``call_…`` id), the program answers it."""
    client = openai_client(url)
    first = client.chat.completions.create(model="gpt-4o-mini", messages=USER, tools=tools)
    call = first.choices[0].message.tool_calls[0]
    history = [
        *USER,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "Sunny"},
    ]
    second = client.chat.completions.create(model="gpt-4o-mini", messages=history, tools=tools)
    return [call.id, str(second.choices[0].message.content)]


def tool_loop_anthropic(url: str, base: str) -> list[str]:
    client = anthropic_client(base)
    tools = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {}}}]
    ask: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 64, "tools": tools}
    first = client.messages.create(**ask, messages=USER)
    use = first.content[0]
    history = [
        *USER,
        {"role": "assistant", "content": [block.model_dump() for block in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Sunny"}],
        },
    ]
    second = client.messages.create(**ask, messages=history)
    return [use.id, second.content[0].text]


def keys_of(path: Path) -> list[str]:
    return [i.key for i in Cassette(path, mode="replay").interactions]


def test_a_re_record_writes_identical_keys_whatever_ids_the_provider_minted(
    tmp_path: Path, fake: FakeServer
) -> None:
    runs = []
    for n, tools in enumerate(([WEATHER, TIME], [TIME, WEATHER])):  # tool order: a set
        path = tmp_path / f"run{n}.yaml"
        with use_cassette(path, mode="record"):
            runs.append(
                tool_loop_openai(fake.url, fake.base, tools)
                + tool_loop_anthropic(fake.url, fake.base)
            )
        with use_cassette(path, mode="replay"):
            assert (
                tool_loop_openai(DEAD + "/v1", DEAD, tools) + tool_loop_anthropic(DEAD, DEAD)
                == runs[-1]
            )
    assert runs[0][0] != runs[1][0] and runs[0][2] != runs[1][2]  # fresh call_…/toolu_… ids
    assert keys_of(tmp_path / "run0.yaml") == keys_of(tmp_path / "run1.yaml")
    assert len(set(keys_of(tmp_path / "run0.yaml"))) == 4


def test_responses_items_keyed_by_meaning_not_item_ids(tmp_path: Path, fake: FakeServer) -> None:
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]

    def run(url: str, base: str) -> list[str]:
        client = openai_client(url)
        first = client.responses.create(model="gpt-4.1", input="Weather?", tools=tools)
        call = first.output[0]
        items = [
            {"role": "user", "content": "Weather?"},
            call.model_dump(exclude_none=True),  # fc_… item id, call_… id
            {"type": "function_call_output", "call_id": call.call_id, "output": "Sunny"},
        ]
        second = client.responses.create(model="gpt-4.1", input=items, tools=tools)
        return [call.call_id, second.output_text]

    first_ids = []
    for n in range(2):
        with use_cassette(tmp_path / f"r{n}.yaml", mode="record"):
            first_ids.append(run(fake.url, fake.base))
    assert first_ids[0][0] != first_ids[1][0] and first_ids[0][1] == "Answer: Sunny"
    assert keys_of(tmp_path / "r0.yaml") == keys_of(tmp_path / "r1.yaml")


# -- concurrency -------------------------------------------------------------------------------


def test_asyncio_gather_replays_each_call_its_own_answer(tmp_path: Path, fake: FakeServer) -> None:
    questions = ["one", "two", "one", "three", "one"]  # identical requests are occurrences

    def run(url: str, base: str) -> Any:
        async def main() -> Any:
            oa, an = async_openai(url), async_anthropic(base)

            async def ask(q: str) -> list[str]:
                c = await oa.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": q}]
                )
                m = await an.messages.create(
                    model="claude-sonnet-4-5",
                    max_tokens=8,
                    messages=[{"role": "user", "content": q}],
                )
                return [c.choices[0].message.content or "", m.content[0].text]

            return await asyncio.gather(*(ask(q) for q in questions))

        return asyncio.run(main())

    recorded, cassette = record_then_replay(tmp_path, fake, run, calls=10)
    assert [r[0] for r in recorded] == [f"Echo: {q}" for q in questions]
    assert len({i.key for i in cassette.interactions}) == 6


def test_plain_threads_are_served_by_the_open_block(tmp_path: Path, fake: FakeServer) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def run(url: str, base: str) -> Any:
        client = openai_client(url)

        def ask(q: str) -> str:  # a plain pool thread: no cassette in its context
            c = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": q}]
            )
            return str(c.choices[0].message.content)

        with ThreadPoolExecutor(4) as pool:
            return list(pool.map(ask, [f"q{i}" for i in range(8)]))

    recorded, _ = record_then_replay(tmp_path, fake, run)
    assert recorded == [f"Echo: q{i}" for i in range(8)]


# -- errors, misses, streams cut short -----------------------------------------------------------


def test_a_rate_limit_then_the_retry_replay_without_waiting(
    tmp_path: Path, fake: FakeServer
) -> None:
    import time

    def run(url: str, base: str) -> Any:
        client = openai_client(url, max_retries=2)
        ask = [{"role": "user", "content": "RATE_LIMIT_ONCE please"}]
        return dumped(client.chat.completions.create(model="gpt-4o-mini", messages=ask))

    path = tmp_path / "sdk.yaml"
    with use_cassette(path, mode="record") as recording:
        recorded = run(fake.url, fake.base)
    assert fake.requests == 2 and recording.stats.recorded == 2  # the 429, then the answer
    statuses = [i.response["status"] for i in recording.interactions]
    assert statuses == [429, 200]
    started = time.perf_counter()
    with use_cassette(path, mode="replay"):
        assert run(DEAD + "/v1", DEAD) == recorded
    assert time.perf_counter() - started < 0.4  # the SDK's back-off is 0.5 s or more


@pytest.mark.filterwarnings("ignore::chaincassette.trace.TraceDivergenceWarning")  # replays less
def test_an_api_key_reaches_neither_the_cassette_nor_its_key(
    tmp_path: Path, fake: FakeServer
) -> None:
    import openai

    path = tmp_path / "sdk.yaml"

    def run(url: str) -> str:
        client = openai_client(url, max_retries=0)
        with pytest.raises(openai.AuthenticationError) as raised:
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "BAD_KEY"}]
            )
        return str(raised.value)

    with use_cassette(path, mode="record"):
        recorded = run(fake.url)
        openai_client(fake.url).chat.completions.create(model="gpt-4o-mini", messages=USER)
        anthropic_client(fake.base).messages.create(
            model="claude-sonnet-4-5", max_tokens=8, messages=USER
        )
    assert any(OPENAI_KEY in h.get("authorization", "") for h in fake.headers)  # it was sent
    assert ANTHROPIC_KEY in fake.headers[-1].get("x-api-key", "")
    text = path.read_text()
    for secret in (OPENAI_KEY, ANTHROPIC_KEY, "Bearer", "set-cookie", "__cf_bm", "org-"):
        assert secret not in text
    assert "Incorrect API key provided: <redacted" in recorded
    with use_cassette(path, mode="replay"):
        assert run(DEAD + "/v1") == recorded  # the same class, the same (redacted) message


@pytest.mark.filterwarnings("ignore::chaincassette.redact.SecretMaskedWarning")  # its tool call
def test_a_secret_spelled_as_a_field_name_reaches_no_file(
    tmp_path: Path, fake: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret used as a field *name* (a tool schema's property, a metadata key) is masked
    like one used as a value: in the cassette, its journal and the run's state."""
    value = "acme-" + "Qz9" * 6
    monkeypatch.setenv("ACME_API_KEY", value)
    github = "ghp_" + "Wv4" * 12
    schema = {"type": "object", "properties": {value: {"type": "string"}}}
    tool = {"type": "function", "function": {"name": "lookup", "parameters": schema}}

    def run(url: str, base: str) -> Any:
        completion = openai_client(url).chat.completions.create(
            model="gpt-4o-mini", messages=USER, tools=[tool], metadata={value: "1", github: "2"}
        )
        return dumped(completion)

    record_then_replay(tmp_path, fake, run)
    written = [(tmp_path / "sdk.yaml", (tmp_path / "sdk.yaml").read_bytes())]
    for file, data in [*written, *files_under(statedir.state_dir())]:
        text = data.decode(errors="replace")
        assert value not in text and github not in text, file


def test_a_miss_report_shows_no_secret_of_the_request_that_missed(
    tmp_path: Path, fake: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request that missed is described and diffed as the cassette would store it: a
    secret variable's value, or a key of a format only stored copies mask, is masked."""
    value = "acme-" + "Rk5" * 6
    monkeypatch.setenv("ACME_API_KEY", value)
    slack = "xoxb-1234567890-" + "Tq8" * 8
    path = tmp_path / "sdk.yaml"
    with use_cassette(path, mode="record"):
        openai_client(fake.url).chat.completions.create(model="gpt-4o-mini", messages=USER)
    for asked in (f"connect with {value}", f"post with {slack}", f"{value} {'x' * 60}"):
        messages = [{"role": "user", "content": asked}]
        with pytest.raises(CassetteMiss) as raised, use_cassette(path, mode="replay"):
            openai_client(DEAD + "/v1").chat.completions.create(
                model="gpt-4o-mini", messages=messages
            )
        shown = [str(raised.value), *raised.value.diff, json.dumps(raised.value.request)]
        assert "<redacted" in shown[0]
        for text in shown:
            assert value[:8] not in text and slack[:12] not in text, text


def test_a_miss_reaches_the_caller_at_once_not_after_retries(
    tmp_path: Path, fake: FakeServer
) -> None:
    import time

    path = tmp_path / "sdk.yaml"
    with use_cassette(path, mode="record"):
        openai_client(fake.url).chat.completions.create(model="gpt-4o-mini", messages=USER)
    other = [{"role": "user", "content": "Something else"}]
    for client in (openai_client(fake.url, max_retries=5), anthropic_client(fake.base)):
        started = time.perf_counter()
        with use_cassette(path, mode="replay"), pytest.raises(CassetteMiss) as missed:
            if hasattr(client, "chat"):
                client.chat.completions.create(model="gpt-4o-mini", messages=other)
            else:
                client.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=other)
        assert time.perf_counter() - started < 0.4
        assert str(path) in str(missed.value)
    assert fake.requests == 1


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_hand_edited_response_of_another_shape_names_the_file(
    tmp_path: Path, fake: FakeServer, is_async: bool
) -> None:
    """Neither an HTTP exchange nor an error: refused by name, not retried by the SDK and
    raised as its ``APIConnectionError("Connection error.")``."""
    path = tmp_path / "sdk.yaml"
    with use_cassette(path, mode="record"):
        openai_client(fake.url).chat.completions.create(model="gpt-4o-mini", messages=USER)
    document = storage.read(path, "yaml")
    assert document is not None
    document.interactions[0]["response"] = {"answer": "pasted by hand"}
    storage.write_atomic(path, storage.dumps(document, "yaml"))

    def ask() -> Any:
        if is_async:
            client = async_openai(DEAD + "/v1", max_retries=3)
            return asyncio.run(client.chat.completions.create(model="gpt-4o-mini", messages=USER))
        client = openai_client(DEAD + "/v1", max_retries=3)
        return client.chat.completions.create(model="gpt-4o-mini", messages=USER)

    with use_cassette(path, mode="replay"), pytest.raises(CassetteFormatError) as refused:
        ask()
    assert f"cannot read cassette {path}: interaction 0" in str(refused.value)
    assert "neither an HTTP response" in str(refused.value)
    assert fake.requests == 1


def test_a_stream_cut_short_replays_only_as_far_as_it_was_read(
    tmp_path: Path, fake: FakeServer
) -> None:
    path = tmp_path / "sdk.yaml"

    def first_two(url: str) -> list[Any]:
        stream = openai_client(url).chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "a long answer of many words"}],
            stream=True,
        )
        taken = []
        for chunk in stream:
            taken.append(dumped(chunk))
            if len(taken) == 2:
                stream.close()
                break
        return taken

    with use_cassette(path, mode="record") as recording:
        recorded = first_two(fake.url)
    assert recording.interactions[0].response["complete"] is False
    with use_cassette(path, mode="replay"):
        assert first_two(DEAD + "/v1") == recorded  # the same prefix: served
    with use_cassette(path, mode="replay"), pytest.raises(CassetteMiss, match="stopped after 2"):
        list(
            openai_client(DEAD + "/v1").chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "a long answer of many words"}],
                stream=True,
            )
        )


def test_a_stream_dropped_before_its_first_event_fails_there_on_replay(
    tmp_path: Path, fake: FakeServer
) -> None:
    """Live, ``create`` returns the stream and reading it raises (no retry: the SDK retries
    only what ``send`` raises); a replay that raised inside ``send`` instead was retried by
    the SDK into a miss. Sync and async, replayed twice."""
    import httpx

    ask = [{"role": "user", "content": "DROP_STREAM please"}]

    def run(url: str) -> list[str]:
        seen = []
        stream = openai_client(url, max_retries=2).chat.completions.create(
            model="gpt-4o-mini", messages=ask, stream=True
        )
        seen.append("created")
        with pytest.raises(httpx.RemoteProtocolError):
            next(iter(stream))
        seen.append("raised at the first chunk")

        async def areading() -> None:
            astream = await async_openai(url, max_retries=2).chat.completions.create(
                model="gpt-4o-mini", messages=ask, stream=True, temperature=0.5
            )
            seen.append("created")
            with pytest.raises(httpx.RemoteProtocolError):
                await astream.__anext__()
            seen.append("raised at the first chunk")

        asyncio.run(areading())
        return seen

    path = tmp_path / "sdk.yaml"
    with use_cassette(path, mode="record"):
        recorded = run(fake.url)
    assert fake.requests == 2
    for _ in range(2):
        with use_cassette(path, mode="replay") as replay:
            assert run(DEAD + "/v1") == recorded
        assert replay.stats.missed == 0
    assert fake.requests == 2


def test_http_that_is_not_a_provider_sdk_passes_untouched(tmp_path: Path, fake: FakeServer) -> None:
    import httpx

    with use_cassette(tmp_path / "sdk.yaml", mode="replay") as cassette:
        answer = httpx.post(fake.url + "/chat/completions", json={"model": "m", "messages": USER})
    assert answer.status_code == 200 and fake.requests == 1
    assert cassette.stats.missed == 0 and cassette.interactions == []


def test_a_transport_error_is_recorded_and_raised_again(tmp_path: Path) -> None:
    import openai

    path = tmp_path / "sdk.yaml"
    with use_cassette(path, mode="record"), pytest.raises(openai.APIConnectionError):
        openai_client(DEAD + "/v1", max_retries=1).chat.completions.create(
            model="gpt-4o-mini", messages=USER
        )
    recorded = Cassette(path, mode="replay").interactions
    assert [i.response["error"]["type"] for i in recorded] == ["httpx.ConnectError"] * 2
    with use_cassette(path, mode="replay"), pytest.raises(openai.APIConnectionError):
        openai_client(DEAD + "/v1", max_retries=1).chat.completions.create(
            model="gpt-4o-mini", messages=USER
        )


def test_show_prints_sdk_calls_like_any_other(
    tmp_path: Path, fake: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from chaincassette.cli import main

    path = tmp_path / "sdk.yaml"
    with use_cassette(path, mode="record"):
        list(
            openai_client(fake.url).chat.completions.create(
                model="gpt-4o-mini", messages=USER, tools=[WEATHER], stream=True
            )
        )
        anthropic_client(fake.base).messages.create(
            model="claude-sonnet-4-5", max_tokens=8, messages=USER
        )
        list(openai_client(fake.url).responses.create(model="gpt-4.1", input="Hi", stream=True))
        openai_client(fake.url).embeddings.create(model="text-embedding-3-small", input=["a"])
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert '→ get_weather(city="Paris")' in shown
    assert "assistant: Echo: What is Docker?" in shown and "assistant: Echo: Hi" in shown
    assert "framework openai" in shown and "framework anthropic" in shown
    assert f"1 vector of {DIMENSIONS} (float32, base64)" in shown
    assert "(streamed, " in shown and json.dumps("chunks") not in shown


def chained(url: str, *, stream: bool) -> list[str]:
    """Three Responses turns chained by ``previous_response_id`` (fresh ``resp_…`` ids live)."""
    client = openai_client(url)
    said, previous = [], None
    for question in ("First", "Second", "Third"):
        if stream:
            with client.responses.stream(
                model="gpt-4.1", input=question, previous_response_id=previous
            ) as events:
                answer = events.get_final_response()
        else:
            answer = client.responses.create(
                model="gpt-4.1", input=question, previous_response_id=previous
            )
        said.append(f"{answer.id} {answer.output_text}")
        previous = answer.id
    return said


@pytest.mark.parametrize("stream", [False, True])
def test_responses_chained_by_id_keep_their_keys_on_a_re_record(
    tmp_path: Path, fake: FakeServer, stream: bool
) -> None:
    runs = []
    for n in range(2):
        path = tmp_path / f"chain{n}.yaml"
        with use_cassette(path, mode="record"):
            runs.append(chained(fake.url, stream=stream))
        with use_cassette(path, mode="replay"):
            assert chained(DEAD + "/v1", stream=stream) == runs[-1]
    assert runs[0] != runs[1]  # fresh resp_… ids, chained through the server
    assert keys_of(tmp_path / "chain0.yaml") == keys_of(tmp_path / "chain1.yaml")
    linked = [
        i.request["params"].get("previous_response_id")
        for i in Cassette(tmp_path / "chain0.yaml").interactions
    ]
    assert linked[0] is None and all(set(link) == {"answer_of"} for link in linked[1:])
