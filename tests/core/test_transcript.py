"""Format version 2: the same interactions as version 1, written as a transcript."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_process import chaincassette as cli

from chaincassette import Cassette, storage, transcript
from chaincassette.canonical import key_of
from chaincassette.errors import CassetteFormatError
from chaincassette.keyrules import KEY_RULES_VERSION

ROOT = Path(__file__).resolve().parents[2]
V1 = sorted((ROOT / "tests" / "examples" / "v1_cassettes").glob("*.yaml"))
EXAMPLES = sorted((ROOT / "examples").glob("*/cassette.yaml"))
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
SYSTEM = "You are a weather assistant. " * 8


def chat(messages: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"kind": "chat", "model": "m", "tools": [TOOL], "messages": messages, **fields}


def interaction(request: dict[str, Any], response: Any = "ok") -> dict[str, Any]:
    return {"key": key_of(request), "request": request, "response": response, "meta": {"n": 1}}


def agent_run(turns: int, system: str = SYSTEM, question: str = "Weather?") -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": question},
    ]
    out = []
    for turn in range(turns):
        out.append(interaction(chat(list(messages)), {"answer": turn}))
        call = {"id": f"call_{turn + 1}", "name": "get_weather", "args": {"city": "Paris"}}
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "content": f"sunny {turn}", "tool_call_id": call["id"]})
    return out


def round_trip(interactions: list[dict[str, Any]], fmt: str = "yaml") -> storage.CassetteDocument:
    document = storage.CassetteDocument(interactions=copy.deepcopy(interactions))
    text = storage.dumps(document, fmt)
    loaded = storage.loads(text, fmt, Path(f"c.{fmt}"))
    assert storage.dumps(loaded, fmt) == text  # byte-stable
    return loaded


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_an_agent_run_stores_each_message_once_and_loads_back_exactly(fmt: str) -> None:
    interactions = agent_run(6)
    loaded = round_trip(interactions, fmt)
    assert [
        {k: i[k] for k in ("key", "request", "response", "meta")} for i in loaded.interactions
    ] == interactions
    plain = storage.to_plain(loaded)
    entries = plain["interactions"]
    assert "request" in entries[0] and all("extends" in e for e in entries[1:])
    assert entries[3]["extends"] == interactions[2]["key"][: transcript.REF_CHARS]
    assert [m["role"] for m in entries[3]["messages"]] == ["assistant", "tool"]
    assert plain["tools"] == {"get_weather": TOOL}
    assert entries[0]["request"]["tools"] == ["get_weather"]
    text = storage.dumps(loaded, fmt)
    assert text.count("sunny 2") == 1 and text.count(SYSTEM.strip()) == 1


def test_size_grows_linearly_with_turns() -> None:
    sizes = {
        t: len(storage.dumps(storage.CassetteDocument(agent_run(t)), "yaml")) for t in (10, 80)
    }
    assert sizes[80] / sizes[10] < 10  # version 1 grows with the square of the turns


def test_shared_texts_tools_and_data_that_looks_like_a_reference() -> None:
    other_tool = {"type": "function", "function": {"name": "get_weather", "description": "v2"}}
    interactions = [
        *agent_run(2, question="Paris?"),
        *agent_run(2, question="Lima?"),  # a second conversation with the same system prompt
        interaction(chat([{"role": "user", "content": {"$text": "x"}}], tools=[other_tool, 3])),
        interaction(chat([{"role": "user", "content": {"$literal": 1}}], tools="auto")),
        interaction({"kind": "tool", "function": "f", "args": [1]}),
        interaction(chat([])),
    ]
    loaded = round_trip(interactions)
    assert [
        {k: i[k] for k in ("key", "request", "response", "meta")} for i in loaded.interactions
    ] == interactions
    plain = storage.to_plain(loaded)
    assert list(plain["texts"].values()) == [SYSTEM]
    assert set(plain["tools"]) == {"get_weather", "get_weather~2", "tool"}


def test_identical_requests_and_keys_sharing_a_prefix() -> None:
    first = agent_run(2)
    repeat = copy.deepcopy(first[1])
    twin = copy.deepcopy(first[1])
    twin["key"] = first[1]["key"][: transcript.REF_CHARS + 3] + "0" * (61 - transcript.REF_CHARS)
    twin["request"]["messages"].append({"role": "user", "content": "and tomorrow?"})
    later = copy.deepcopy(twin)
    later["key"] = "f" * 64
    later["request"]["messages"].append({"role": "user", "content": "and after?"})
    interactions = [*first, repeat, twin, later]
    loaded = round_trip(interactions)
    assert [i["request"] for i in loaded.interactions] == [i["request"] for i in interactions]
    entries = storage.to_plain(loaded)["interactions"]
    assert entries[2]["messages"] == []  # the same request again
    assert len(entries[4]["extends"]) > transcript.REF_CHARS  # tells the two keys apart


def test_a_request_continuing_the_second_of_two_same_key_requests_loads_as_recorded() -> None:
    # A program asks one question twice in a cassette (the answers differ only in the ids
    # the key leaves out), then continues the second conversation: ``extends`` names a
    # key, which finds the first request of that key, so the continuation must not be
    # written as extending the second (it loaded with the first one's ids).
    question = chat([{"role": "user", "content": "Weather?"}])
    first, second = copy.deepcopy(question), copy.deepcopy(question)
    first["messages"].append({"role": "assistant", "content": "Sunny", "id": "run-1"})
    second["messages"].append({"role": "assistant", "content": "Sunny", "id": "run-2"})
    assert key_of(first) == key_of(second)
    follow_up = copy.deepcopy(second)
    follow_up["messages"].append({"role": "user", "content": "And tomorrow?"})
    interactions = [interaction(r) for r in (first, second, follow_up)]
    loaded = round_trip(interactions)
    assert [i["request"] for i in loaded.interactions] == [i["request"] for i in interactions]


#: Examples re-recorded since their v1 cassette (the demo, for a right answer): their v1
#: file replays the program it was recorded with (tests/examples/v1_cassettes/*.py).
RERECORDED = {"supervisor"}


@pytest.mark.parametrize("path", V1, ids=lambda p: p.stem)
def test_version_1_cassettes_in_the_repository_load_the_same_as_version_2(path: Path) -> None:
    v1 = storage.read(path, "yaml")
    assert v1 is not None and v1.version == 1
    v2 = storage.loads(storage.dumps(v1, "yaml"), "yaml", path)
    assert v2.version == 2
    assert v2.interactions == v1.interactions
    example = storage.read(ROOT / "examples" / path.stem / "cassette.yaml", "yaml")
    assert example is not None and example.version == 2  # committed upgraded
    # rules 1 keyed them as the current rules do
    assert v1.key_rules == 1 and example.key_rules == KEY_RULES_VERSION
    if path.stem not in RERECORDED:
        assert [i["key"] for i in example.interactions] == [i["key"] for i in v1.interactions]
        assert all(i["meta"].pop("key_rules") == 1 for i in v1.interactions)
        assert example.interactions == v1.interactions
    for item in v2.interactions:  # keys are the hashes of the requests, as recorded
        if "<redacted" not in str(item["request"]):
            assert key_of(item["request"]) == item["key"]


def test_the_committed_examples_are_in_the_current_format() -> None:
    assert EXAMPLES
    for path in EXAMPLES:
        document = storage.read(path, "yaml")
        assert document is not None
        assert storage.dumps(document, "yaml") == path.read_text(), path


def _break(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t, k: _break(t, f"extends: {k[:12]}", "extends: 0123456789ab"),
            r"interaction 2 extends 0123456789ab, which is not the key of an earlier interaction",
        ),
        (
            lambda t, k: _break(t, "tools: [get_weather]", "tools: [get_wether]"),
            r"interaction 0: tools\[0\] names 'get_wether'",
        ),
        (
            lambda t, k: _break(t, f"extends: {k[:12]}", "extends: 12"),
            r"interaction 2: 'extends' must be the key",
        ),
        (
            lambda t, k: _break(t, f"extends: {k[:12]}", f"request: {{}}\n  extends: {k[:12]}"),
            r"interaction 2 has both 'request' and 'extends'",
        ),
    ],
)
def test_a_broken_reference_names_the_file_and_the_interaction(
    tmp_path: Path, edit: Any, message: str
) -> None:
    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    for item in agent_run(3):
        found = cassette.begin(item["request"])
        found.record(item["response"])
    cassette.save()
    second_key = Cassette(path).interactions[1].key
    path.write_text(edit(path.read_text(), second_key))
    with pytest.raises(CassetteFormatError, match=rf"c\.yaml:\d+: ({message})"):
        Cassette(path).load()


def test_a_save_writes_version_2_with_response_hashes(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    found = cassette.begin(chat([{"role": "user", "content": "hi"}]))
    found.record({"text": "hello"})
    cassette.save()
    data = yaml.safe_load(path.read_text())
    assert data["version"] == 2
    assert data["interactions"][0]["response_hash"] == transcript.response_hash({"text": "hello"})


def test_upgrade_rewrites_a_tree_in_place_and_is_byte_stable(tmp_path: Path) -> None:
    for path in V1:
        target = tmp_path / "cassettes" / path.name
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(path.read_bytes())
    (tmp_path / "cassettes" / "broken.yaml").write_text("version: 2\ninteractions: 3\n...\n")
    first = cli("upgrade", "cassettes", cwd=tmp_path)
    assert "3 cassettes upgraded, 0 already current, 1 unreadable" in first.stdout, first
    assert "broken.yaml" in first.stderr and first.returncode == 1
    after = {p: p.read_bytes() for p in (tmp_path / "cassettes").glob("*.yaml")}
    second = cli("upgrade", "cassettes", cwd=tmp_path)
    assert "0 cassettes upgraded, 3 already current" in second.stdout
    assert {p: p.read_bytes() for p in (tmp_path / "cassettes").glob("*.yaml")} == after
    for path in V1:
        upgraded = storage.read(tmp_path / "cassettes" / path.name, "yaml")
        original = storage.read(path, "yaml")
        assert upgraded is not None and original is not None
        assert upgraded.version == 2 and original.key_rules == 1
        assert upgraded.key_rules == KEY_RULES_VERSION
        # keyed by key rules 1, which key them as the current rules do: the same keys
        assert all(i["meta"].pop("key_rules") == 1 for i in original.interactions)
        assert upgraded.interactions == original.interactions


def test_verify_reports_a_response_edited_by_hand_until_it_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "cassettes" / "agent.yaml"
    cassette = Cassette(path, mode="record")
    for item in agent_run(2):
        cassette.begin(item["request"]).record({"text": f"answer {item['response']['answer']}"})
    cassette.save()
    assert cli("verify", "cassettes", cwd=tmp_path).returncode == 0
    path.write_text(_break(path.read_text(), "{text: answer 1}", "{text: edited}"))
    report = cli("verify", "cassettes", cwd=tmp_path)
    assert report.returncode == 1
    assert "interactions[1]: the response was edited by hand" in report.stdout
    assert "chaincassette accept cassettes/agent.yaml" in report.stdout
    accepted = cli("accept", "cassettes/agent.yaml", cwd=tmp_path)
    assert "accepted 1 response and 0 requests edited by hand" in accepted.stdout, accepted
    assert cli("verify", "cassettes", cwd=tmp_path).returncode == 0
    assert Cassette(path).interactions[1].response == {"text": "edited"}
