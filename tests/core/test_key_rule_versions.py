"""Key rules carry a version: what rules 2 key differently, and how older cassettes replay.

Rules 2 (issue 27) key one media content one way whatever its spelling, ``0`` and ``0.0`` of
a real-valued parameter alike, and keep the order of tool results a model reads by position.
A cassette stores the version of the rules that keyed it (``key_rules``; a file without it
is rules 1); a recording of older rules replays by them, ``chaincassette upgrade`` rekeys
what its stored request allows, and a miss a rule change explains says so.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_process import chaincassette

from chaincassette import (
    Cassette,
    CassetteMiss,
    key_of,
    keyrules,
    media,
    normalize,
    recorded,
    storage,
)
from chaincassette.errors import CassetteFormatError
from chaincassette.normalize import build_pipeline
from chaincassette.transcript import response_hash

#: The key rules of this chaincassette (what a new cassette is keyed by).
CURRENT = keyrules.KEY_RULES_VERSION
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
OTHER_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
#: The same PNG as each provider spells it: LangChain's standard block (and its older form),
#: an OpenAI data URL (chat and Responses), Anthropic, a Gemini part, a LlamaIndex block.
SAME_IMAGE = [
    {"type": "image", "base64": PNG, "mime_type": "image/png"},
    {"type": "image", "source_type": "base64", "data": PNG, "mime_type": "image/png"},
    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
    {"type": "media", "mime_type": "image/png", "data": PNG},
    {"block_type": "image", "image": PNG, "image_mimetype": "image/png", "url": None},
]


def chat(*messages: dict[str, Any], **params: Any) -> dict[str, Any]:
    return {
        "kind": "chat",
        "model": "m",
        "params": params or {"temperature": 0.5},
        "messages": [{"role": "user", "content": "Look."}, *messages],
    }


def picture(block: dict[str, Any]) -> dict[str, Any]:
    return chat({"role": "user", "content": [{"type": "text", "text": "What is it?"}, block]})


def key(request: dict[str, Any], rules: int | None = None) -> str:
    return key_of(normalize(copy.deepcopy(request), build_pipeline(rules=rules)), rules)


# -- what rules 2 key ---------------------------------------------------------------------------


def test_the_same_image_keys_the_same_whatever_its_spelling() -> None:
    keys = {key(picture(block)) for block in SAME_IMAGE}
    assert len(keys) == 1
    assert len({key(picture(block), rules=1) for block in SAME_IMAGE}) == len(SAME_IMAGE)
    (view,) = {str(keyrules.key_view(normalize(picture(b)))) for b in SAME_IMAGE}
    assert "sha256:" in view and PNG not in view


@pytest.mark.parametrize(
    "other",
    [
        {"type": "image", "base64": OTHER_PNG, "mime_type": "image/png"},  # other bytes
        {"type": "image", "base64": PNG, "mime_type": "image/jpeg"},  # decoded otherwise
        {
            "type": "image_url",
            "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"},
        },
        {"type": "image", "url": "https://example.com/a.png"},  # an address, not the bytes
        {"type": "file", "base64": PNG, "mime_type": "application/pdf"},
    ],
)
def test_what_the_model_sees_otherwise_keys_otherwise(other: dict[str, Any]) -> None:
    assert key(picture(other)) != key(picture(SAME_IMAGE[0]))


def test_an_address_keys_the_same_in_each_spelling() -> None:
    url = "https://example.com/a.png"
    spellings = [
        {"type": "image", "url": url},
        {"type": "image_url", "image_url": {"url": url}},
        {"type": "image", "source": {"type": "url", "url": url}},
    ]
    assert len({key(picture(block)) for block in spellings}) == 1


def test_a_key_view_of_media_is_its_own_key_view() -> None:
    view = keyrules.key_view(normalize(picture(SAME_IMAGE[3])))
    assert keyrules.key_view(view) == view


def test_whole_numbers_of_real_valued_parameters_key_as_floats() -> None:
    assert key(chat(temperature=0)) == key(chat(temperature=0.0))
    assert key(chat(model_kwargs={"top_p": 1})) == key(chat(model_kwargs={"top_p": 1.0}))
    assert key(chat(temperature=0)) != key(chat(temperature=0), rules=1)  # a rule change
    assert key(chat(temperature=0.0)) == key(chat(temperature=0.0), rules=1)  # none here
    assert key(chat(max_tokens=96)) != key(chat(max_tokens=96.0))  # an API may refuse 96.0
    assert key(chat(temperature=True)) != key(chat(temperature=1.0))


CALLS = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {"id": "call_a", "name": "weather", "args": {"city": "Paris"}},
        {"id": "call_b", "name": "weather", "args": {"city": "Lyon"}},
    ],
}


def results(order: str, *, ids: bool = True, **fields: Any) -> dict[str, Any]:
    made = {
        "a": {"role": "tool", "content": "Paris: sunny", "tool_call_id": "call_a"},
        "b": {"role": "tool", "content": "Lyon: rain", "tool_call_id": "call_b"},
    }
    messages = [made[n] if ids else {"role": "tool", "content": made[n]["content"]} for n in order]
    return {**chat(CALLS, *messages), **fields}


def test_tool_results_with_ids_are_a_set_without_ids_a_sequence() -> None:
    assert key(results("ab")) == key(results("ba"))
    assert key(results("ab", ids=False)) != key(results("ba", ids=False))
    positional = {"tool_result_ids": False}  # Gemini, Ollama: matched by position
    assert key(results("ab", **positional)) != key(results("ba", **positional))
    # the field steers normalization only: in call order the key is the one without it
    assert key(results("ab", **positional)) == key(results("ab")) == key(results("ab"), rules=1)
    # rules 1 knew no positional results: every run with ids was sorted
    assert key(results("ba", **positional), rules=1) == key(results("ab"), rules=1)


# -- what rules 3 key ---------------------------------------------------------------------------

#: A LlamaIndex ``ImageBlock(path=...)`` of ``PNG`` as its request stores it since rules 3.
PNG_FILE = {
    "block_type": "image",
    "image": None,
    "path": "/tmp/a/picture.png",
    "path_content_hash": media.bytes_hash(base64.b64decode(PNG)),
    "url": None,
    "image_mimetype": "image/png",
    "detail": None,
}


def test_a_local_file_keys_by_its_bytes_as_its_inline_spellings_do() -> None:
    elsewhere = {**PNG_FILE, "path": "/tmp/b/picture.png"}
    assert key(picture(PNG_FILE)) == key(picture(elsewhere)) == key(picture(SAME_IMAGE[0]))
    other = {**PNG_FILE, "path_content_hash": media.bytes_hash(base64.b64decode(OTHER_PNG))}
    assert key(picture(other)) != key(picture(PNG_FILE))
    unread = {k: v for k, v in PNG_FILE.items() if k != "path_content_hash"}  # no hash: the path
    assert key(picture(unread)) != key(picture({**unread, "path": "/tmp/b/picture.png"}))


@pytest.mark.parametrize("rules", [1, 2])
def test_older_rules_leave_the_hash_of_a_local_file_out(rules: int) -> None:
    unhashed = {k: v for k, v in PNG_FILE.items() if k != "path_content_hash"}
    assert key(picture(PNG_FILE), rules) == key(picture(unhashed), rules)
    view = keyrules.explain(normalize(picture(PNG_FILE)), rules)
    assert (
        "messages[1].content[1].path_content_hash",
        f"the bytes of the local file, which key rules 3 read; key rules {rules} key its path",
    ) in view.left_out


# -- @recorded: an int given to a float parameter is that float --------------------------------


def ask(question: str, temperature: float = 0.0) -> dict[str, Any]:
    """A stand-in for an SDK call: what it answers depends on its arguments."""
    return {"answer": f"{question} at {temperature}"}


def untyped(question: str, temperature=0.0):  # type: ignore[no-untyped-def]
    return {"answer": f"{question} at {temperature}"}


def counted(n: int = 1) -> dict[str, Any]:
    return {"n": n}


@pytest.mark.parametrize("function", [ask, untyped], ids=["annotated", "by its default"])
def test_recorded_keys_zero_zero_point_zero_and_the_default_alike(
    function: Any, tmp_path: Path
) -> None:
    path = tmp_path / "c.yaml"
    recording = Cassette(path, mode="record")
    assert recorded(cassette=recording, name="ask")(function)("hi", temperature=0) == {
        "answer": "hi at 0"
    }
    recording.save()
    for call in (
        lambda f: f("hi"),
        lambda f: f("hi", 0),
        lambda f: f("hi", temperature=0.0),
        lambda f: f(question="hi", temperature=0),
    ):
        replay = recorded(cassette=Cassette(path), name="ask")(function)
        assert call(replay) == {"answer": "hi at 0"}  # the recording, not a live call
    stored = storage.read(path, "yaml")
    assert stored is not None
    assert stored.interactions[0]["request"]["args"] == {"question": "hi", "temperature": 0.0}
    with pytest.raises(CassetteMiss):
        recorded(cassette=Cassette(path), name="ask")(function)("hi", 0.5)


def test_recorded_keeps_whole_numbers_of_int_parameters(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    recording = Cassette(path, mode="record")
    recorded(cassette=recording, name="n")(counted)(2)
    recording.save()
    replay = recorded(cassette=Cassette(path), name="n")(counted)
    assert replay(2) == {"n": 2}
    with pytest.raises(CassetteMiss):
        recorded(cassette=Cassette(path), name="n")(counted)(2.5)


def test_recorded_replays_what_rules_1_keyed_with_an_int(tmp_path: Path) -> None:
    """Rules 1 keyed ``temperature=0`` as given; rules 2 key it as ``0.0``: the recording
    of rules 1 still answers the call it was made for."""
    path = tmp_path / "old.yaml"
    request = {"kind": "call", "function": "ask", "args": {"question": "hi", "temperature": 0}}
    rules_1_file(path, [(request, {"answer": "recorded by rules 1"})])
    replay = recorded(cassette=Cassette(path), name="ask")(ask)
    assert replay("hi", temperature=0) == {"answer": "recorded by rules 1"}


# -- a cassette keyed by rules 1 -----------------------------------------------------------------


def rules_1_file(path: Path, pairs: list[tuple[dict[str, Any], Any]]) -> list[str]:
    """A cassette as chaincassette 0.1 wrote it (format 1, no key_rules); its keys."""
    pipeline = build_pipeline(rules=1)
    items = []
    for request, response in pairs:
        normalized = normalize(copy.deepcopy(request), pipeline)
        items.append({"key": key_of(normalized, 1), "request": normalized, "response": response})
    document = {"version": 1, "recorded_with": {"chaincassette": "0.1.0"}, "interactions": items}
    path.write_text(yaml.safe_dump(document, sort_keys=False, explicit_end=True))
    return [item["key"] for item in items]


#: A run of tool results, one naming no call: rules 1 moved it after the others.
MIXED_RESULTS = chat(
    CALLS,
    {"role": "tool", "content": "Lyon: rain"},
    {"role": "tool", "content": "Paris: sunny", "tool_call_id": "call_a"},
)
#: Requests rules 2 key otherwise than rules 1 did, each answered in the rules-1 file.
CHANGED_BY_RULES_2 = [chat(temperature=0), picture(SAME_IMAGE[0]), MIXED_RESULTS]


def test_recordings_of_rules_1_replay_where_rules_2_key_them_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"
    keys = rules_1_file(path, [(r, {"answer": n}) for n, r in enumerate(CHANGED_BY_RULES_2)])
    assert all(key(r) != k for r, k in zip(CHANGED_BY_RULES_2, keys, strict=True))
    for _ in range(2):  # and again in a fresh cassette
        cassette = Cassette(path)
        calls = [cassette.begin(copy.deepcopy(r)) for r in CHANGED_BY_RULES_2]
        assert [c.hit for c in calls] == [True] * 3
        assert [c.response for c in calls] == [{"answer": n} for n in range(3)]
        assert [c.key for c in calls] == keys  # the recordings' own keys
        assert cassette.stats.unused == 0


def test_a_change_of_the_program_still_misses_and_is_compared_by_rules_1(tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"
    rules_1_file(path, [(chat(temperature=0), {"answer": 0})])
    with pytest.raises(CassetteMiss) as info:
        Cassette(path).begin(chat(temperature=1))
    text = str(info.value)
    assert info.value.cause == "parameter" and "params.temperature" in text
    assert f"keyed by key rules 1 (this chaincassette keys by key rules {CURRENT})" in text
    assert "by hand" not in text


def test_new_recordings_in_a_rules_1_file_are_keyed_by_the_current_rules(tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"
    rules_1_file(path, [(chat(temperature=0), {"answer": 0})])
    cassette = Cassette(path, mode="new_episodes")
    assert cassette.begin(chat(temperature=0)).hit
    new = cassette.begin(chat(temperature=1))
    new.record({"answer": 1})
    cassette.save()
    text = path.read_text()
    assert text.startswith(f"version: 2\nkey_rules: {CURRENT}\n")
    assert text.count("key_rules: 1") == 1  # the old recording says which rules keyed it
    document = storage.read(path, "yaml")
    assert document is not None
    assert [storage.interaction_rules(i) for i in document.interactions] == [1, CURRENT]
    assert document.interactions[1]["key"] == key(chat(temperature=1)) == new.key
    again = Cassette(path)
    assert again.begin(chat(temperature=0)).hit and again.begin(chat(temperature=1.0)).hit


def test_a_key_of_before_key_rules_had_versions_replays_by_its_stored_request(
    tmp_path: Path,
) -> None:
    """Rules 1 are every key made before rules had versions, some by rules since changed
    (a key that included tool order): a stored key rules 1 do not reproduce is keyed by what
    rules 1 make of its stored request, so last week's cassettes replay."""
    path = tmp_path / "old.yaml"
    rules_1_file(path, [(chat(temperature=0.5), {"answer": 0})])
    path.write_text(path.read_text().replace(key(chat(temperature=0.5)), "ab" * 32))
    cassette = Cassette(path)
    call = cassette.begin(chat(temperature=0.5))
    assert call.hit and call.response == {"answer": 0}
    assert path.read_text().count("ab" * 32) == 1  # in memory only: upgrade writes it
    verify = chaincassette("verify", str(path), cwd=tmp_path)
    assert verify.returncode == 0, verify.stdout
    assert "key rules 1: 1 interaction keyed by older key rules" in verify.stdout


def test_a_key_of_current_rules_edited_by_hand_is_still_called_a_hand_edit(tmp_path: Path) -> None:
    path = tmp_path / "new.yaml"
    cassette = Cassette(path, mode="record")
    cassette.begin(chat()).record({"answer": 0})
    cassette.save()
    path.write_text(path.read_text().replace(key(chat()), "ab" * 32))
    with pytest.raises(CassetteMiss) as info:
        Cassette(path).begin(chat())
    assert info.value.cause == "hand_edited"


def test_a_forced_rule_change_misses_naming_the_rule_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next rules of this test key by other rules than the current ones that keyed the
    cassette, and (unlike a real change) do not keep them as they were: the miss says the key
    rules changed, names both versions and what changed, and never blames the file."""
    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    cassette.begin(chat(temperature=0.5)).record({"answer": 0})
    cassette.save()
    monkeypatch.setattr(keyrules, "KEY_RULES_VERSION", CURRENT + 1)
    monkeypatch.setitem(keyrules.RULE_CHANGES, CURRENT + 1, "temperature is a client setting")
    is_client = keyrules.is_client_setting
    monkeypatch.setattr(keyrules, "is_client_setting", lambda n: n == "temperature" or is_client(n))
    with pytest.raises(CassetteMiss) as info:
        Cassette(path).begin(chat(temperature=0.5))
    text = str(info.value)
    assert info.value.cause == "rekeyed"
    assert f"it reads the same by key rules {CURRENT}, which keyed it" in text
    assert f"key rules {CURRENT} → {CURRENT + 1}: temperature is a client setting" in text
    assert "the key rules changed since this recording was made" in text
    assert "by hand" not in text and "edited" not in text


# -- the file and the CLI -----------------------------------------------------------------------


def test_upgrade_rekeys_what_stored_requests_allow_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "cassettes" / "old.yaml"
    path.parent.mkdir()
    ollama = {"kind": "chat", "model": "chat-ollama", "params": {"_type": "chat-ollama"}}
    ollama["messages"] = [{"role": "user", "content": "hi"}]
    function = {"kind": "call", "function": "ask", "args": {"question": "q", "temperature": 0}}
    asked = [*CHANGED_BY_RULES_2[:2], ollama, function]
    old_keys = rules_1_file(path, [(r, {"answer": n}) for n, r in enumerate(asked)])
    first = chaincassette("upgrade", "cassettes", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert f"(version 1 → 2, key rules 1 → {CURRENT})" in first.stdout
    assert "interaction 2 keeps key rules 1 (it replays by them): its request was built from " in (
        first.stdout
    )
    assert "interaction 3 keeps key rules 1" in first.stdout
    written = path.read_text()
    second = chaincassette("upgrade", "cassettes", cwd=tmp_path)
    assert "0 cassettes upgraded, 1 already current" in second.stdout
    assert path.read_text() == written  # byte-stable
    document = storage.read(path, "yaml")
    assert document is not None and document.key_rules == CURRENT
    assert [storage.interaction_rules(i) for i in document.interactions] == [CURRENT] * 2 + [1] * 2
    assert [i["key"] for i in document.interactions] == [
        key(asked[0]),
        key(asked[1]),
        *old_keys[2:],
    ]
    cassette = Cassette(path)
    assert all(cassette.begin(copy.deepcopy(r)).hit for r in asked)
    assert chaincassette("verify", "cassettes", cwd=tmp_path).returncode == 0


def test_show_key_says_which_rules_keyed_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"
    rules_1_file(path, [(chat(temperature=0), {"answer": 0})])
    shown = chaincassette("show", str(path), "--key", "0", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "key check: the stored key is this view's hash" in shown.stdout
    assert (
        f"key rules: 1, older than this chaincassette's ({CURRENT}); it replays by" in shown.stdout
    )


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        ("newer", f"keyed by key rules {CURRENT + 1}, which a newer chaincassette wrote"),
        ("key_rules: x", "'key_rules' must be a version of the key rules"),
        ("key_rules: 0", "'key_rules' must be a version of the key rules"),
    ],
)
def test_key_rules_this_chaincassette_does_not_know_are_refused_by_name(
    tmp_path: Path, edit: str, problem: str
) -> None:
    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    cassette.begin(chat()).record({"answer": 0})
    cassette.save()
    text = path.read_text()
    current = f"key_rules: {CURRENT}\n"
    assert current in text
    replacement = f"key_rules: {CURRENT + 1}" if edit == "newer" else edit
    path.write_text(text.replace(current, replacement + "\n", 1))
    with pytest.raises(CassetteFormatError, match=problem) as info:
        Cassette(path).load()
    assert info.value.line == 2


def test_a_recording_saying_it_was_keyed_by_unknown_rules_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    interaction = {"key": key(chat()), "request": normalize(chat()), "response": {"answer": 0}}
    interaction["meta"] = {"key_rules": 9}
    interaction["response_hash"] = response_hash(interaction["response"])
    path.write_text(storage.dumps(storage.CassetteDocument(interactions=[interaction]), "yaml"))
    with pytest.raises(CassetteFormatError, match="keyed by key rules 9"):
        Cassette(path).load()
