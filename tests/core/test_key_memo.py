"""A request named by an ``identity`` is built, normalized and hashed once per cassette."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaincassette import Cassette
from chaincassette.canonical import key_of
from chaincassette.key_memo import MAX_CHARS, MAX_ENTRIES, KeyMemo


def request(n: int) -> dict[str, Any]:
    return {"kind": "chat", "model": "m", "messages": [{"role": "user", "content": f"q{n}"}]}


def test_a_named_request_is_built_once_and_keys_like_an_unnamed_one() -> None:
    built: list[int] = []

    def builder(n: int) -> Any:
        def build() -> dict[str, Any]:
            built.append(n)
            return request(n)

        return build

    memo = KeyMemo(lambda r: r)
    first = memo.keyed(builder(1), identity="one")
    again = memo.keyed(builder(1), identity="one")
    other = memo.keyed(builder(2), identity="two")
    assert built == [1, 2]
    assert first == again and first[1] == key_of(request(1))
    assert other[1] == key_of(request(2)) != first[1]
    unnamed = memo.keyed(request(1))  # no identity: always computed, never stored
    assert unnamed[1] == first[1]


def test_a_full_memo_starts_over_and_still_answers_right() -> None:
    memo = KeyMemo(lambda r: r)
    for n in range(MAX_ENTRIES + 3):
        assert memo.keyed(lambda n=n: request(n), identity=n)[1] == key_of(request(n))
    assert memo.keyed(lambda: request(0), identity=0)[1] == key_of(request(0))


def test_a_cassette_runs_its_normalizers_once_per_distinct_named_request(tmp_path: Path) -> None:
    seen: list[str] = []

    def counting(req: dict[str, Any]) -> dict[str, Any]:
        seen.append(req["messages"][0]["content"])
        return req

    path = tmp_path / "c.yaml"
    recorder = Cassette(path, mode="record", normalizers=[counting])
    for n in (1, 2, 1):
        call = recorder.begin(lambda n=n: request(n), identity=("q", n))
        if not call.hit:
            call.record({"text": f"a{n}"})
    recorder.save()
    assert seen == ["q1", "q2"]
    seen.clear()
    replayer = Cassette(path, mode="replay", normalizers=[counting])
    answers = [
        replayer.begin(lambda n=n: request(n), identity=("q", n)).response for n in (1, 2, 1)
    ]
    assert answers == [{"text": "a1"}, {"text": "a2"}, {"text": "a1"}]
    assert seen == ["q1", "q2"]
    with pytest.raises(Exception, match="q3"):  # a miss still reports the request it built
        replayer.begin(lambda: request(3), identity=("q", 3))


def test_long_text_identities_are_let_go_before_they_hold_much_memory() -> None:
    """An agent's identities carry its whole history: the memo keeps a bounded amount."""
    memo = KeyMemo(lambda r: r)
    turn = "x" * 2000
    for n in range(1, 400):
        identity = ("chat", turn * n, "llm", False)
        assert memo.keyed(lambda n=n: request(n), identity=identity)[1] == key_of(request(n))
        held = sum(len(i[1]) for i in memo._entries)
        assert held <= MAX_CHARS
    again = ("chat", turn * 399, "llm", False)
    assert memo.keyed(lambda: request(-1), identity=again)[1] == key_of(request(399))
