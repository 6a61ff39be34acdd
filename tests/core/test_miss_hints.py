"""Each cause of a miss gets the hint that fixes it (the engine's side; the pytest and
``chaincassette run`` phrasing is tested with real runs in tests/pytest_plugin and tests/cli)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaincassette import Cassette, CassetteMiss, use_cassette
from chaincassette.cassette import given_cassette
from chaincassette.modes import policy


def chat(*messages: dict[str, Any], temperature: float = 0.0) -> dict[str, Any]:
    return {
        "kind": "chat",
        "model": "m",
        "params": {"temperature": temperature},
        "messages": [{"role": "system", "content": "You help."}, *messages],
    }


USER = {"role": "user", "content": "Time in Paris?"}
CALL = {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "name": "now"}]}


def tool(content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": "call_1", "content": content}


def recorded(path: Path, *requests: dict[str, Any]) -> Path:
    cassette = Cassette(path, mode="record")
    for n, request in enumerate(requests):
        cassette.begin(request).answer(lambda n=n: {"text": f"answer {n}"})
    cassette.save()
    return path


def miss(path: Path, *requests: dict[str, Any], **options: Any) -> CassetteMiss:
    cassette = Cassette(path, **options)
    *played, missing = requests
    for request in played:
        cassette.begin(request).answer(lambda: None)
    with pytest.raises(CassetteMiss) as info:
        cassette.begin(missing).answer(lambda: None)
    return info.value


def test_a_changed_prompt_says_re_record_this_cassette(tmp_path: Path) -> None:
    path = recorded(tmp_path / "c.yaml", chat(USER))
    error = miss(path, chat({"role": "user", "content": "Time in Lyon?"}))
    assert error.cause == "changed"
    assert "re-record this cassette" in str(error) and "CHAINCASSETTE_MODE=record" in str(error)
    assert "new_episodes" not in str(error)


def test_a_changed_tool_result_says_replay_tools(tmp_path: Path) -> None:
    path = recorded(tmp_path / "c.yaml", chat(USER), chat(USER, CALL, tool("09:00")))
    error = miss(path, chat(USER), chat(USER, CALL, tool("09:01")))
    assert error.cause == "tool_result"
    assert "only a tool result differs (messages[3] (tool))" in str(error)
    assert "Cassette(..., replay_tools=True)" in str(error)


def clock_miss(cassette: Cassette) -> CassetteMiss:
    cassette.begin(chat(USER)).answer(lambda: None)
    with pytest.raises(CassetteMiss) as info:
        cassette.begin(chat(USER, CALL, tool("09:01"))).answer(lambda: None)
    return info.value


def test_an_option_is_spelled_where_the_program_passes_it(tmp_path: Path) -> None:
    """``use_cassette(cassette, replay_tools=True)`` is refused, and ``set_llm_cache``'s user
    never wrote a ``use_cassette``: the hint names the call that took the path."""
    path = recorded(tmp_path / "c.yaml", chat(USER), chat(USER, CALL, tool("09:00")))
    with use_cassette(path) as cassette:
        assert "use_cassette(..., replay_tools=True)" in str(clock_miss(cassette))
    wrapped = given_cassette(path, mode=None, options={}, owner="CassetteCache")
    assert "CassetteCache(..., replay_tools=True)" in str(clock_miss(wrapped))
    made = given_cassette(Cassette(path), mode=None, options={}, owner="CassetteCache")
    assert " Cassette(..., replay_tools=True)" in str(clock_miss(made))


def test_a_changed_sampling_parameter_is_named(tmp_path: Path) -> None:
    path = recorded(tmp_path / "c.yaml", chat(USER))
    error = miss(path, chat(USER, temperature=0.7))
    assert error.cause == "parameter"
    assert "only the sampling parameter params.temperature differs" in str(error)
    assert "ignore=['params.temperature']" in str(error)


def test_a_call_beyond_the_recording_says_new_episodes(tmp_path: Path) -> None:
    path = recorded(tmp_path / "c.yaml", chat(USER))
    follow_up = chat(USER, {"role": "assistant", "content": "9"}, {"role": "user", "content": "?"})
    error = miss(path, chat(USER), follow_up)
    assert error.cause == "new_call"
    assert "CHAINCASSETTE_MODE=new_episodes" in str(error)


def test_a_mode_the_program_passed_is_the_mode_the_hint_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``mode=`` argument beats CHAINCASSETTE_MODE: a hint naming the variable would send
    the user round in circles (the README tour passes ``mode="once"`` everywhere)."""
    monkeypatch.setenv("CHAINCASSETTE_MODE", "new_episodes")  # what the old hint said to set
    path = recorded(tmp_path / "c.yaml", chat(USER))
    follow_up = chat(USER, {"role": "assistant", "content": "9"}, {"role": "user", "content": "?"})
    error = miss(path, chat(USER), follow_up, mode="once")
    assert error.cause == "new_call" and "CHAINCASSETTE_MODE=new_episodes" not in str(error)
    assert str(error).endswith(
        "pass mode='new_episodes' to the cassette "
        "(in place of its mode='once', which wins over CHAINCASSETTE_MODE)"
    )
    changed = miss(path, chat({"role": "user", "content": "Time in Lyon?"}), mode="replay")
    assert "pass mode='record' to the cassette (in place of its mode='replay'," in str(changed)
    missing = miss(tmp_path / "none.yaml", chat(USER), mode="none")
    assert "to record it: pass mode='once' to the cassette (in place of its mode='replay'," in (
        str(missing)
    )
    again = miss(path, chat(USER), chat(USER), mode="once")
    assert "pass mode='new_episodes' to the cassette (in place of its mode='once'," in str(again)
    monkeypatch.delenv("CHAINCASSETTE_MODE")
    assert "run it again with CHAINCASSETTE_MODE=record" in str(  # no argument: the variable
        miss(path, chat({"role": "user", "content": "Time in Lyon?"}))
    )


def test_a_different_call_next_to_a_played_one_is_a_new_call(tmp_path: Path) -> None:
    path = recorded(tmp_path / "c.yaml", chat(USER))
    error = miss(path, chat(USER), chat({"role": "user", "content": "Also Lyon?"}))
    assert error.cause == "new_call"


def test_missing_file_and_exhausted_recordings(tmp_path: Path) -> None:
    assert miss(tmp_path / "none.yaml", chat(USER)).cause == "missing"
    path = recorded(tmp_path / "c.yaml", chat(USER))
    again = miss(path, chat(USER), chat(USER))
    assert again.cause == "exhausted"
    assert "allow_playback_repeats=True" in str(again) and "new_episodes" in str(again)


def test_a_runner_phrases_the_command_and_the_option(tmp_path: Path) -> None:
    path = recorded(tmp_path / "c.yaml", chat(USER), chat(USER, CALL, tool("09:00")))
    with policy(
        rerecord_command="pytest t.py::test_x --cassette-mode={mode}",
        option_syntax="@pytest.mark.cassette({option})",
        refuse_recording="CI is set",
    ):
        changed = miss(path, chat({"role": "user", "content": "other"}))
        clock = miss(path, chat(USER), chat(USER, CALL, tool("09:05")))
    assert str(changed).endswith("pytest t.py::test_x --cassette-mode=record")
    assert "refused" not in str(changed)  # the command itself overrides the CI rule
    assert "@pytest.mark.cassette(replay_tools=True)" in str(clock)
