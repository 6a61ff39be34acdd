"""Record modes, occurrences, misses and statistics of the engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaincassette import (
    Cassette,
    CassetteMiss,
    CassetteWriteError,
    RecordMode,
    recorded,
    runs,
    use_cassette,
)


class Provider:
    """A live model stand-in that answers differently every time, like a real one."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, prompt: str) -> dict[str, Any]:
        self.calls += 1
        return {"text": f"answer {self.calls} to {prompt}", "usage": {"total_tokens": 10}}


def chat(prompt: str, temperature: float = 0.0) -> dict[str, Any]:
    return {
        "kind": "chat",
        "model": "m",
        "params": {"temperature": temperature},
        "messages": [{"role": "user", "content": prompt}],
    }


def record(path: Path, prompts: list[str], mode: str = "record") -> list[Any]:
    provider = Provider()
    cassette = Cassette(path, mode=mode)
    out = [cassette.begin(chat(p)).answer(lambda p=p: provider(p)) for p in prompts]
    cassette.save()
    return out


def test_replay_returns_recordings_and_never_calls_live(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    recorded_answers = record(path, ["a", "b", "a"])
    cassette = Cassette(path)
    assert cassette.mode is RecordMode.REPLAY and cassette.replaying

    def forbidden() -> Any:
        raise AssertionError("live called in replay mode")

    replayed = [cassette.begin(chat(p)).answer(forbidden) for p in ["a", "b", "a"]]
    assert replayed == recorded_answers
    assert replayed[0] != replayed[2]  # the n-th identical call gets the n-th recording
    stats = cassette.stats
    assert (stats.replayed, stats.recorded, stats.missed, stats.unused) == (3, 0, 0, 0)
    assert stats.tokens_replayed == 30


def test_occurrences_do_not_depend_on_order_across_keys(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    answers = dict(zip(["a", "b", "c"], record(path, ["a", "b", "c"]), strict=True))
    cassette = Cassette(path)
    for prompt in ["c", "a", "b"]:
        assert cassette.begin(chat(prompt)).answer(lambda: None) == answers[prompt]


def test_exhausted_key_misses_with_played_count_unless_repeats_allowed(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    (first,) = record(path, ["a"])
    cassette = Cassette(path)
    cassette.begin(chat("a")).answer(lambda: None)
    with pytest.raises(CassetteMiss) as info:
        cassette.begin(chat("a")).answer(lambda: None)
    assert "already been played 1 time" in str(info.value)
    assert info.value.played == 1 and cassette.stats.missed == 1
    repeating = Cassette(path, allow_playback_repeats=True)
    assert [repeating.begin(chat("a")).answer(lambda: None) for _ in range(3)] == [first] * 3


def test_miss_names_file_mode_field_and_how_to_rerecord(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    record(path, ["What is the weather in Paris?"])
    with pytest.raises(CassetteMiss) as info:
        Cassette(path).begin(chat("What is the weather in Lyon?", temperature=0.7)).answer(
            lambda: None
        )
    miss = info.value
    text = str(miss)
    assert str(path) in text and "mode 'replay'" in text
    assert (
        "messages[0] (user).content: What is the weather in Paris? → What is the weather in Lyon?"
        in text
    )
    assert "params.temperature: 0.0 → 0.7" in text
    assert "re-record this cassette" in text and "CHAINCASSETTE_MODE=record" in text
    assert miss.cause == "changed"
    assert miss.nearest is not None and miss.nearest["messages"][0]["content"].endswith("Paris?")
    assert miss.request["params"]["temperature"] == 0.7
    assert len(miss.diff) == 2


def test_miss_names_changed_tool_schema(tmp_path: Path) -> None:
    def with_tool(description: str) -> dict[str, Any]:
        request = chat("hi")
        request["tools"] = [
            {"type": "function", "function": {"name": "get_time", "description": "Time."}},
            {"type": "function", "function": {"name": "get_weather", "description": description}},
        ]
        return request

    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    cassette.begin(with_tool("Weather for a city.")).answer(lambda: {"text": "x"})
    cassette.save()
    with pytest.raises(CassetteMiss) as info:
        Cassette(path).begin(with_tool("Weather for a town.")).answer(lambda: None)
    assert (
        "tools[get_weather].function.description: Weather for a city. → Weather for a town."
        in str(info.value)
    )


def test_missing_file_is_said_plainly(tmp_path: Path) -> None:
    with pytest.raises(CassetteMiss) as info:
        Cassette(tmp_path / "nope.yaml").begin(chat("a")).answer(lambda: None)
    assert "does not exist" in str(info.value) and "nope.yaml" in str(info.value)


def test_once_records_only_when_the_file_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    provider = Provider()
    first = Cassette(path, mode="once")
    assert first.recording
    first.begin(chat("a")).answer(lambda: provider("a"))
    first.save()
    second = Cassette(path, mode="once")
    assert second.replaying and not second.recording
    with pytest.raises(CassetteMiss):
        second.begin(chat("b")).answer(lambda: provider("b"))
    assert provider.calls == 1


def test_new_episodes_replays_matches_and_records_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    (a,) = record(path, ["a"])
    provider = Provider()
    cassette = Cassette(path, mode="new_episodes")
    assert cassette.begin(chat("a")).answer(lambda: provider("a")) == a
    cassette.begin(chat("b")).answer(lambda: provider("b"))
    assert provider.calls == 1
    assert cassette.save()
    assert [i.request["messages"][0]["content"] for i in Cassette(path).interactions] == ["a", "b"]


def test_record_mode_rewrites_from_scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.yaml"
    record(path, ["a", "b"])
    monkeypatch.setenv(runs.RUN_ENV, "a later run")  # drops what earlier runs recorded
    cassette = Cassette(path, mode="record")
    cassette.begin(chat("c")).answer(lambda: "c1")
    cassette.save()
    other = Cassette(path, mode="new_episodes")  # another process adds to the file meanwhile
    other.begin(chat("d")).answer(lambda: "d1")
    other.save()
    cassette.begin(chat("e")).answer(lambda: "e1")
    cassette.save()  # a second save keeps what the other process wrote
    contents = [i.request["messages"][0]["content"] for i in Cassette(path).interactions]
    assert contents == ["c", "d", "e"]


def test_off_mode_passes_through_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    provider = Provider()
    cassette = Cassette(path, mode="off")
    cassette.begin(chat("a")).answer(lambda: provider("a"))
    cassette.begin(chat("a")).answer(lambda: provider("a"))
    assert provider.calls == 2 and not cassette.save() and not path.exists()


def test_mode_aliases_and_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert RecordMode.parse("none") is RecordMode.REPLAY
    assert RecordMode.parse("ALL") is RecordMode.RECORD
    assert RecordMode.parse("new-episodes") is RecordMode.NEW_EPISODES
    with pytest.raises(ValueError, match="unknown record mode 'sometimes'"):
        RecordMode.parse("sometimes")
    monkeypatch.setenv("CHAINCASSETTE_MODE", "new_episodes")
    assert Cassette(tmp_path / "c.yaml").mode is RecordMode.NEW_EPISODES
    assert Cassette(tmp_path / "c.yaml", mode="replay").mode is RecordMode.REPLAY


def test_unused_interactions_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    record(path, ["a", "b", "b"])
    cassette = Cassette(path)
    cassette.begin(chat("b")).answer(lambda: None)
    assert cassette.stats.unused == 2
    assert cassette.unused_interactions() == [0, 2]


def test_save_writes_only_when_something_changed(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    record(path, ["a"])
    before = path.stat().st_mtime_ns
    cassette = Cassette(path, mode="new_episodes")
    cassette.begin(chat("a")).answer(lambda: None)
    assert not cassette.save()
    assert path.stat().st_mtime_ns == before


def test_returned_values_are_fresh_copies(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    record(path, ["a", "a"])
    cassette = Cassette(path, allow_playback_repeats=True)
    first = cassette.begin(chat("a")).answer(lambda: None)
    first["text"] = "mutated by the caller"
    assert cassette.begin(chat("a")).answer(lambda: None)["text"] != "mutated by the caller"


def test_record_returns_what_replay_will_return(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    live = cassette.begin(chat("a")).answer(lambda: {"items": (1, 2), "n": 1})
    cassette.save()
    assert live == Cassette(path).begin(chat("a")).answer(lambda: None) == {"items": [1, 2], "n": 1}


def test_non_json_response_is_a_clear_error(tmp_path: Path) -> None:
    cassette = Cassette(tmp_path / "c.yaml", mode="record")
    with pytest.raises(TypeError, match="the response is not JSON-serializable"):
        cassette.begin(chat("a")).answer(lambda: {"when": object()})


def test_recorded_decorator_keys_on_bound_arguments(tmp_path: Path) -> None:
    calls: list[tuple[str, str, float]] = []

    @recorded
    def call(model: str, prompt: str, temperature: float = 0.0, api_key: str = "") -> str:
        calls.append((model, prompt, temperature))
        return f"{model}:{prompt}:{temperature}:{len(calls)}"

    path = tmp_path / "c.yaml"
    with use_cassette(path, mode="record"):
        a = call("m", "hi", api_key="sk-" + "1" * 30)
        b = call("m", prompt="hi", temperature=0.5)
    with use_cassette(path):
        assert call(model="m", prompt="hi", api_key="sk-" + "2" * 30) == a
        assert call("m", "hi", 0.5) == b
    assert len(calls) == 2
    assert call("m", "no cassette") == "m:no cassette:0.0:3"  # no active cassette: runs live


async def test_recorded_decorator_on_async_functions(tmp_path: Path) -> None:
    calls = []

    @recorded(name="ask")
    async def ask(prompt: str) -> dict[str, str]:
        calls.append(prompt)
        return {"answer": prompt[::-1]}

    path = tmp_path / "c.json"
    async with use_cassette(path, mode="record"):
        assert await ask("abc") == {"answer": "cba"}
    async with use_cassette(path) as cassette:
        assert await ask("abc") == {"answer": "cba"}
        assert cassette.stats.replayed == 1
    assert calls == ["abc"]
    assert path.read_text().startswith("{")


def test_a_cassette_dropped_before_exit_still_saves_its_recordings(tmp_path: Path) -> None:
    import gc
    import subprocess
    import sys

    script = (
        "from chaincassette import Cassette\n"
        "def run():\n"
        f"    c = Cassette({str(tmp_path / 'c.yaml')!r}, mode='record')\n"
        "    c.begin({'kind': 'chat', 'prompt': 'paid'}).answer(lambda: 'answer')\n"
        "run()\n"
        "import gc; gc.collect()\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    gc.collect()
    assert (
        Cassette(tmp_path / "c.yaml").begin({"kind": "chat", "prompt": "paid"}).answer(lambda: None)
        == "answer"
    )


def test_record_mode_replaces_the_old_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    old = Cassette(path, mode="record")
    old.begin(chat("a")).answer(lambda: "x")
    old.set_trace([{"id": 1, "type": "agent", "name": "OLD"}])
    old.save()
    monkeypatch.setenv(runs.RUN_ENV, "a later run")
    new = Cassette(path, mode="record")
    new.begin(chat("b")).answer(lambda: "y")
    new.save()
    assert Cassette(path).recorded_trace is None
    assert [i.response for i in Cassette(path).interactions] == ["y"]


def test_recorded_keys_do_not_depend_on_running_as_a_script(tmp_path: Path) -> None:
    import subprocess
    import sys

    module = tmp_path / "app.py"
    module.write_text(
        "import sys\n"
        "from chaincassette import recorded, use_cassette\n"
        "@recorded\n"
        "def answer(question):\n"
        "    return f'live answer to {question}'\n"
        "if __name__ == '__main__':\n"
        "    with use_cassette(sys.argv[1], mode='record'):\n"
        "        print(answer('why?'))\n"
    )
    cassette = tmp_path / "c.yaml"
    subprocess.run([sys.executable, str(module), str(cassette)], check=True, capture_output=True)
    replay = (
        "import sys; sys.path.insert(0, sys.argv[2])\n"
        "import app\n"
        "from chaincassette import use_cassette\n"
        "with use_cassette(sys.argv[1]):\n"
        "    print(app.answer('why?'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", replay, str(cassette), str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip() == "live answer to why?"
    assert "function: app.answer" in cassette.read_text()


def test_recorded_skips_self_only_on_methods(tmp_path: Path) -> None:
    @recorded(name="classify")
    def classify(cls: str, text: str) -> str:  # a plain function whose first argument is "cls"
        return f"{cls}:{text}"

    class Agent:
        def __init__(self) -> None:
            self.client = object()

        @recorded(name="Agent.ask")
        def ask(self, prompt: str) -> str:
            return prompt.upper()

    with use_cassette(tmp_path / "c.yaml", mode="record"):
        assert classify("spam", "buy now") == "spam:buy now"
        assert classify("ham", "hello") == "ham:hello"
        assert Agent().ask("hi") == "HI"
    with use_cassette(tmp_path / "c.yaml"):
        assert classify("ham", "hello") == "ham:hello"  # not spam's answer
        assert Agent().ask("hi") == "HI"


def test_recorded_refuses_generators() -> None:
    with pytest.raises(TypeError, match="cannot record the generator"):

        @recorded
        def chunks() -> Any:
            yield "a"


def test_recorded_with_a_path_reads_the_mode_at_first_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"

    @recorded(cassette=path)
    def ask(prompt: str) -> str:
        return prompt * 2

    monkeypatch.setenv("CHAINCASSETTE_MODE", "record")
    assert ask("a") == "aa"


def test_a_runner_policy_beats_the_argument(tmp_path: Path) -> None:
    from chaincassette.modes import policy

    with policy(override=RecordMode.NEW_EPISODES):
        assert Cassette(tmp_path / "c.yaml", mode="replay").mode is RecordMode.NEW_EPISODES
    with policy(refuse_recording="CI is set"):
        for asked in ("once", "record", "new_episodes", "off"):  # "off" would call live too
            assert Cassette(tmp_path / "c.yaml", mode=asked).mode is RecordMode.REPLAY
        with pytest.raises(CassetteMiss, match="recording is refused now: CI is set"):
            Cassette(tmp_path / "c.yaml").begin(chat("a")).answer(lambda: "live")
    with policy(refuse_writes="--cassette-strict"):
        cassette = Cassette(tmp_path / "c.yaml", mode="record")
        cassette.begin(chat("a")).answer(lambda: "live")
        with pytest.raises(Exception, match="writing cassettes is refused: --cassette-strict"):
            cassette.save()
        cassette.discard_unsaved()
    assert not (tmp_path / "c.yaml").exists()


def test_two_frameworks_share_one_trace_without_overwriting(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    lc = [{"id": 1, "parent": None, "type": "chain", "name": "LangGraph"},
          {"id": 2, "parent": 1, "type": "llm", "name": "chat"}]  # fmt: skip
    li = [{"id": 1, "parent": None, "type": "agent", "name": "FunctionAgent"}]
    cassette = Cassette(path, mode="record")
    cassette.begin(chat("a")).answer(lambda: "x")
    cassette.set_trace(lc, source="langchain")
    cassette.set_trace(li, source="llama_index")
    cassette.save()
    stored = Cassette(path)
    assert [n["id"] for n in stored.recorded_trace or []] == [1, 2, 3]
    assert [n["name"] for n in stored.recorded_trace_of("langchain") or []] == ["LangGraph", "chat"]
    assert [n["name"] for n in stored.recorded_trace_of("llama_index") or []] == ["FunctionAgent"]
    alone = Cassette(tmp_path / "one.yaml", mode="record")
    alone.begin(chat("a")).answer(lambda: "x")
    alone.set_trace(lc, source="langchain")
    alone.save()
    assert Cassette(tmp_path / "one.yaml").recorded_trace == lc  # one framework: untagged


def test_a_misspelled_option_is_an_error_not_ignored(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"unknown option 'mdoe'.*replay_tools"):
        Cassette(tmp_path / "c.yaml", mdoe="record")
    with pytest.raises(TypeError, match="unknown option 'allow_playback_repeat'"):
        use_cassette(tmp_path / "c.yaml", allow_playback_repeat=True).__enter__()
    assert Cassette(tmp_path / "c.yaml", replay_tools=True).options == {"replay_tools": True}


def test_discarded_recordings_are_never_written(tmp_path: Path) -> None:
    from chaincassette import cassette as cassette_module

    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    cassette.begin(chat("a")).answer(lambda: {"text": "A"})
    cassette.begin(chat("b")).answer(lambda: {"text": "B"})
    assert cassette.dirty and cassette in cassette_module._unsaved
    assert cassette.discard_unsaved() == 2
    assert not cassette.dirty and cassette not in cassette_module._unsaved
    assert cassette.save() is False and not path.exists()
    assert cassette.discard_unsaved() == 0


def test_retracted_recordings_leave_the_file_the_journal_and_memory(tmp_path: Path) -> None:
    """A runner rerunning a failed test takes back what its attempt recorded: saved (out of
    the file, which goes if the attempt created it) or not; the next recording of the same
    request is its first occurrence again, and what the file held before stays."""
    provider = Provider()
    path = tmp_path / "c.yaml"
    created = Cassette(path, mode="new_episodes")
    created.begin(chat("a")).answer(lambda: provider("a"))
    created.save()
    created.begin(chat("b")).answer(lambda: provider("b"))  # unsaved, journaled
    assert created.recordings == 2 and created.retract() == 2 and created.retract() == 0
    assert not path.exists() and not created.dirty and created.recordings == 0
    again = created.begin(chat("a"))
    assert again.occurrence == 1 and again.answer(lambda: provider("a"))["text"] == "answer 3 to a"
    created.save()
    later = Cassette(path, mode="new_episodes")
    later.begin(chat("c")).answer(lambda: provider("c"))
    later.save()
    assert later.retract() == 1
    assert [i.response["text"] for i in Cassette(path).interactions] == ["answer 3 to a"]


def test_a_retract_brings_back_what_a_record_save_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``record``'s first save drops the file's older recordings: a retraction puts them
    back (a rerun that records nothing leaves the file as it was), and the run's next
    ``record`` save drops them again."""
    path = tmp_path / "c.yaml"
    record(path, ["old", "older"])
    monkeypatch.setenv(runs.RUN_ENV, "a later run")
    provider = Provider()
    attempt = Cassette(path, mode="record")
    attempt.begin(chat("new")).answer(lambda: provider("new"))
    attempt.save()
    assert [i.request["messages"][0]["content"] for i in Cassette(path).interactions] == ["new"]
    assert attempt.retract() == 1
    texts = [i.response["text"] for i in Cassette(path).interactions]
    assert texts == ["answer 1 to old", "answer 2 to older"]
    rerun = Cassette(path, mode="record")
    rerun.begin(chat("new")).answer(lambda: provider("new"))
    rerun.save()
    assert [i.response["text"] for i in Cassette(path).interactions] == ["answer 2 to new"]


@pytest.mark.parametrize("mode", ["replay", "once", "new_episodes"])
def test_a_retract_to_earlier_replays_replays_them_again(tmp_path: Path, mode: str) -> None:
    """``retract(to=replays())``: what the attempt replayed is replayed again (an object
    that outlives a failed attempt missed, 'already played', or recorded it a second time)."""
    path = tmp_path / "c.yaml"
    record(path, ["k"])
    provider = Provider()
    cassette = Cassette(path, mode=mode)
    before = cassette.replays()
    assert cassette.begin(chat("k")).answer(lambda: provider("k"))["text"] == "answer 1 to k"
    assert cassette.retract(to=before) == 0
    assert cassette.begin(chat("k")).answer(lambda: provider("k"))["text"] == "answer 1 to k"
    assert provider.calls == 0 and cassette.unused_interactions() == []


@pytest.mark.parametrize("mode", ["new_episodes", "record"])
def test_a_retract_to_a_mark_takes_back_only_what_came_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """``retract(to=replays())`` on an object that had recorded already (a session-wide
    cassette, rerun in a later test): its earlier recordings stay, saved or not, and the
    older ones its first ``record`` save dropped before the mark stay dropped."""
    path = tmp_path / "c.yaml"
    record(path, ["old"])
    monkeypatch.setenv(runs.RUN_ENV, "a later run")
    provider = Provider()
    cassette = Cassette(path, mode=mode)
    cassette.begin(chat("a")).answer(lambda: provider("a"))
    cassette.save()
    cassette.begin(chat("b")).answer(lambda: provider("b"))  # unsaved, journaled
    mark = cassette.replays()
    cassette.begin(chat("c")).answer(lambda: provider("c"))  # unsaved: out of memory
    assert cassette.retract(to=mark) == 1 and cassette.recordings == 2 and cassette.dirty
    mark = cassette.replays()
    cassette.begin(chat("d")).answer(lambda: provider("d"))
    cassette.save()  # b and d: d goes out of the file
    assert cassette.retract(to=mark) == 1 and cassette.retract(to=mark) == 0
    assert not cassette.dirty
    texts = [i.response["text"] for i in Cassette(path).interactions]
    kept = ["answer 1 to a", "answer 2 to b"]
    assert texts == (kept if mode == "record" else ["answer 1 to old", *kept])


def test_a_handed_over_trace_is_checked_when_written_and_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    cassette.begin({"kind": "call", "function": "f", "args": {}}).answer(lambda: {"v": 1})
    node: dict[str, Any] = {"id": 1, "parent": None, "type": "tool", "name": "t"}
    cassette.set_trace([{**node, "inputs": object()}], copy=False)  # kept as handed over
    with pytest.raises(CassetteWriteError, match=r"c\.yaml.*the trace is not JSON-serializable"):
        cassette.save()
    assert not path.exists()  # nothing half written; the recording is still unsaved
    cassette.set_trace([{**node, "inputs": {"q": "x"}}], copy=False)
    assert cassette.save()
    assert Cassette(path).recorded_trace == [{**node, "inputs": {"q": "x"}}]


def test_a_failed_autosave_keeps_the_recordings_of_its_key_waiting_behind_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One request asked twice at once (asyncio.gather) through a cassette that saves after
    # each recording (a wrapper given a path): the later lookup finishes first and waits
    # its turn; the earlier one's save then fails (a full disk). The waiting recording is
    # still kept, so a later save writes both.
    import errno
    import tempfile

    cassette = Cassette(tmp_path / "c.yaml", mode="new_episodes")
    first = cassette.begin(chat("hi"), autosave=True)
    second = cassette.begin(chat("hi"), autosave=True)

    def full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(tempfile, "mkstemp", full)
        second.record({"text": "second"})
        with pytest.raises(CassetteWriteError):
            first.record({"text": "first"})
    assert [i.response for i in cassette.interactions] == [{"text": "first"}, {"text": "second"}]
    assert cassette.save()
    replay = Cassette(tmp_path / "c.yaml", mode="replay")
    assert [replay.begin(chat("hi")).response for _ in range(2)] == [
        {"text": "first"},
        {"text": "second"},
    ]
