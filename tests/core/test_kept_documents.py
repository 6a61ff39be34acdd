"""One document per file content, shared by every ``Cassette`` that loads it
(``chaincassette.kept_documents``): read once, never changed, never leaked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaincassette import Cassette, CassetteFormatError, CassetteMiss, kept_documents, storage


def chat(prompt: str) -> dict[str, Any]:
    return {"kind": "chat", "model": "m", "messages": [{"role": "user", "content": prompt}]}


def record(path: Path, answers: dict[str, Any]) -> None:
    cassette = Cassette(path, mode="record")
    for prompt, answer in answers.items():
        cassette.play(chat(prompt), lambda answer=answer: answer)
    cassette.save()


def never() -> Any:
    raise AssertionError("live called in replay")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files parsed and validated (``storage.loads_bytes``), in order."""
    kept_documents.forget()
    seen: list[Path] = []
    original = storage.loads_bytes

    def counted(raw: bytes, fmt: str, path: Path) -> storage.CassetteDocument:
        seen.append(path)
        return original(raw, fmt, path)

    monkeypatch.setattr(storage, "loads_bytes", counted)
    return seen


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_file_is_read_once_per_content(tmp_path: Path, reads: list[Path], suffix: str) -> None:
    path = tmp_path / f"c{suffix}"
    record(path, {"a": {"text": "A"}, "b": {"text": "B"}})
    reads.clear()
    first = [Cassette(path).play(chat("a"), never) for _ in range(3)]
    assert first == [{"text": "A"}] * 3
    assert reads == [path]  # three cassettes, one read
    other = tmp_path / f"other{suffix}"
    record(other, {"a": {"text": "A2"}})
    path.write_bytes(other.read_bytes())  # new content: read again
    assert Cassette(path).play(chat("a"), never) == {"text": "A2"}
    assert reads.count(path) == 2


def test_what_one_cassette_hands_out_never_reaches_another(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    record(path, {"a": {"text": "A", "tools": [{"name": "t"}]}})
    first = Cassette(path)
    answer = first.play(chat("a"), never)
    answer["tools"][0]["name"] = "changed"  # a program changes what it was given
    interaction = first.interactions[0]
    interaction.response["text"] = "changed"
    interaction.request["messages"].append({"role": "user", "content": "extra"})
    interaction.meta["note"] = "changed"
    second = Cassette(path)
    assert second.play(chat("a"), never) == {"text": "A", "tools": [{"name": "t"}]}
    stored = second.interactions[0]
    assert stored.request == chat("a") and stored.meta.get("note") is None
    assert Cassette(path).interactions[0].response == {"text": "A", "tools": [{"name": "t"}]}


def test_the_recorded_trace_handed_out_is_a_copy(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    cassette.play(chat("a"), lambda: {"text": "A"})
    cassette.set_trace([{"id": 1, "parent": None, "type": "llm", "name": "m"}])
    cassette.save()
    trace = Cassette(path).recorded_trace
    assert trace is not None
    trace[0]["name"] = "changed"
    trace.append({"id": 2})
    assert Cassette(path).recorded_trace == [{"id": 1, "parent": None, "type": "llm", "name": "m"}]
    assert Cassette(path).recorded_trace_of("langchain") == Cassette(path).recorded_trace


def test_a_bad_file_is_refused_at_every_load_naming_it(tmp_path: Path, reads: list[Path]) -> None:
    path = tmp_path / "c.yaml"
    record(path, {"a": {"text": "A"}})
    path.write_text(path.read_text().replace("...\n", ""))  # truncated: no end marker
    for _ in range(2):
        with pytest.raises(CassetteFormatError, match=r"c\.yaml") as raised:
            Cassette(path).load()
        assert "truncated" in str(raised.value)
    assert len(reads) == 2  # nothing kept of a refused file


def test_what_a_miss_carries_is_the_programs_own(tmp_path: Path) -> None:
    """A test that edits its miss (to shorten a log, say) changes neither the file's kept
    document nor the key tree every cassette of the process resumes from."""
    path = tmp_path / "a.yaml"
    record(path, {"What is 2+2?": {"text": "4"}})
    asked = chat("What is 3+3?")  # the caller's dicts, handed again: ``stable_messages``
    with pytest.raises(CassetteMiss) as raised:
        Cassette(path).lookup(asked, stable_messages=True)
    miss = raised.value
    assert miss.nearest is not None
    miss.nearest["messages"][0]["content"] = "edited"
    miss.request["messages"][0]["content"] = "edited"
    assert Cassette(path).interactions[0].request == chat("What is 2+2?")
    later = Cassette(tmp_path / "b.yaml", mode="all")
    later.begin(asked, stable_messages=True).record({"text": "6"})
    later.save()
    assert Cassette(tmp_path / "b.yaml").interactions[0].request == chat("What is 3+3?")


def test_a_document_too_heavy_to_keep_is_read_at_every_load(
    tmp_path: Path, reads: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document is weighed by its file and its rebuilt requests' messages (turns² of
    them for an agent), and one heavier than a quarter of the budget is not kept."""
    light, heavy = tmp_path / "light.yaml", tmp_path / "heavy.yaml"
    record(light, {"a": {"text": "A"}})
    record(heavy, {f"q{n}": {"text": "x" * 200} for n in range(20)})
    reads.clear()
    monkeypatch.setattr(kept_documents, "MAX_KEPT_BYTES", 4 * 6 * len(heavy.read_bytes()))
    for _ in range(2):
        Cassette(light).load()
        Cassette(heavy).load()
    assert reads == [light, heavy, heavy]
