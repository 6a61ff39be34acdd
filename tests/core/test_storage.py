"""Cassette files: byte-stable, safe to load, atomic to write, clear when broken."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from chaincassette import (
    Cassette,
    CassetteFormatError,
    CassetteSecretError,
    CassetteWriteError,
    safe_yaml,
)
from chaincassette.keyrules import KEY_RULES_VERSION
from chaincassette.store import JournalWarning


def chat(prompt: str) -> dict[str, object]:
    return {"kind": "chat", "model": "m", "messages": [{"role": "user", "content": prompt}]}


def make(path: Path, prompts: list[str]) -> None:
    cassette = Cassette(path, mode="record")
    for p in prompts:
        cassette.begin(chat(p)).answer(
            lambda p=p: {"text": f"line one\nline two for {p}", "n": len(p)}
        )
    cassette.save()


def test_yaml_is_readable_and_byte_stable(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    make(first, ["x", "y"])
    make(second, ["x", "y"])
    text = first.read_text()
    assert first.read_bytes() == second.read_bytes()
    # flow style when short: depends on which frameworks this process imported (recorded_with
    # names each)
    assert text.startswith(f"version: 2\nkey_rules: {KEY_RULES_VERSION}\nrecorded_with:")
    assert "text: |-\n      line one\n      line two for x" in text
    # loading and saving again (new_episodes, one new call) keeps the old part byte-identical
    cassette = Cassette(first, mode="new_episodes")
    cassette.begin(chat("z")).answer(lambda: {"text": "z"})
    cassette.save()
    assert text.endswith("\n...\n")  # the end-of-document marker that exposes truncation
    assert first.read_text().startswith(text.removesuffix("...\n"))


def test_json_by_suffix_or_format(tmp_path: Path) -> None:
    make(tmp_path / "c.json", ["x"])
    assert (tmp_path / "c.json").read_text().startswith('{\n "version": 2')
    cassette = Cassette(tmp_path / "c.cassette", format="json", mode="record")
    cassette.begin(chat("x")).answer(lambda: 1)
    cassette.save()
    assert (tmp_path / "c.cassette").read_text().startswith("{")
    assert Cassette(tmp_path / "c.json").begin(chat("x")).answer(lambda: None)["n"] == 1


@pytest.mark.parametrize("name", ["c.yaml", "c.json"])
def test_a_file_an_editor_saved_with_a_byte_order_mark_replays(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    make(path, ["x"])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # Notepad's "UTF-8 with BOM"
    for _ in range(2):
        assert Cassette(path, mode="replay").begin(chat("x")).response["n"] == 1


@pytest.mark.parametrize(
    ("content", "problem", "line"),
    [
        ("version: 1\ninteractions:\n- key: abc\n  request: {\n", "invalid YAML", None),
        ("", "the file is empty", None),
        ("- just\n- a list\n", "expected a mapping", None),
        ("interactions: []\n", "missing or invalid 'version'", None),
        (
            "version: 7\ninteractions: []\n",
            "format version 7 was written by a newer chaincassette",
            1,
        ),
        ("version: 1\ninteractions:\n- key: x\n  request: {}\n  response: 1\n", "invalid key", 3),
        ("version: 1\ninteractions:\n- request: {}\n  response: 1\n", "has no 'key'", 3),
        ("version: 1\ninteractions: {a: 1}\n", "'interactions' must be a list", 2),
    ],
)
def test_broken_files_name_the_file_and_problem(
    tmp_path: Path, content: str, problem: str, line: int | None
) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(content)
    with pytest.raises(CassetteFormatError) as info:
        Cassette(path).load()
    assert problem in str(info.value) and str(path) in str(info.value)
    if line is not None:
        assert info.value.line == line and f"broken.yaml:{line}" in str(info.value)
    assert path.read_text() == content  # nothing lost


def test_truncated_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    make(path, ["x", "y"])
    text = path.read_text()
    second = text.index("- key:", text.index("- key:") + 1)
    path.write_text(text[: second + 20])  # cut in the middle of the second interaction's key
    with pytest.raises(CassetteFormatError, match=r"c\.yaml:\d+: interaction 1 has no 'request'"):
        Cassette(path).load()
    path.write_text(text[: text.index("response:", second) + 14] + '"')  # and mid-response
    with pytest.raises(CassetteFormatError, match=r"c\.yaml"):
        Cassette(path).load()
    for cut in range(len(text) // 2, len(text) - 4):  # every cut in the second half is caught
        path.write_text(text[:cut])
        with pytest.raises(CassetteFormatError, match=r"c\.yaml"):
            Cassette(path).load()
    json_path = tmp_path / "c.json"
    make(json_path, ["x"])
    json_path.write_text(json_path.read_text()[:40])
    with pytest.raises(CassetteFormatError, match=r"c\.json:\d+: invalid JSON"):
        Cassette(json_path).load()


def test_python_tags_are_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.yaml"
    path.write_text(
        "version: 1\ninteractions:\n- key: " + "a" * 64 + "\n  request: {}\n"
        f"  response: !!python/object/apply:os.system ['touch {marker}']\n"
    )
    with pytest.raises(CassetteFormatError, match="unsafe or unknown YAML tag") as info:
        Cassette(path).load()
    assert info.value.line == 5
    assert not marker.exists()


def test_unwritable_directory_is_a_clear_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        target = Path("/proc/chaincassette/c.yaml")  # not writable even for root
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = locked / "c.yaml"
    cassette = Cassette(target, mode="record")
    cassette.begin(chat("x")).answer(lambda: 1)
    with pytest.raises(CassetteWriteError) as info:
        cassette.save()
    assert str(target) in str(info.value)
    assert "(no file was written)" in str(info.value)  # it never existed: nothing "unchanged"


def test_a_write_error_on_a_file_that_exists_says_it_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("version: 2\n")
    assert "(the file on disk is unchanged)" in str(CassetteWriteError(path, "the disk is full"))


def test_planted_secrets_never_reach_disk(tmp_path: Path) -> None:
    openai_key = "sk-proj-" + "Ab1" * 15
    anthropic_key = "sk-ant-api03-" + "Zz9" * 15
    request = {
        "kind": "chat",
        "model": "m",
        "params": {"api_key": openai_key, "headers": {"Authorization": f"Bearer {anthropic_key}"}},
        "messages": [{"role": "user", "content": f"debug: my key is {openai_key}"}],
    }
    path = tmp_path / "c.yaml"
    cassette = Cassette(path, mode="record")
    cassette.begin(request).answer(lambda: {"text": "ok"})
    cassette.save()
    text = path.read_text()
    assert openai_key not in text and anthropic_key not in text and "Ab1Ab1" not in text
    assert "my key is <secret>" in text
    # the key is computed before redaction: the same request still replays
    assert Cassette(path).begin(request).answer(lambda: None) == {"text": "ok"}


def test_a_secret_in_a_response_refuses_the_write(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    make(path, ["x"])
    before = path.read_bytes()
    cassette = Cassette(path, mode="new_episodes", redact_patterns=[r"corp-[0-9]{6}"])
    cassette.begin(chat("leak")).answer(lambda: {"text": "the password is corp-123456"})
    with pytest.raises(CassetteSecretError) as info:
        cassette.save()
    assert "interactions[1].response.text" in str(info.value) and "user-pattern-1" in str(
        info.value
    )
    assert path.read_bytes() == before


KILL_MID_SAVE = textwrap.dedent(
    """
    import os, sys, time
    from chaincassette import Cassette
    real_fsync = os.fsync
    def stall(fd):
        real_fsync(fd)
        print("writing", flush=True)
        time.sleep(60)
    cassette = Cassette(sys.argv[1], mode="new_episodes")
    for i in range(200):
        cassette.begin({"kind": "chat", "messages": [{"role": "user", "content": str(i)}]}).answer(lambda: "x" * 500)
    os.fsync = stall  # the journal fsyncs each recording; stall in the cassette write
    cassette.save()
    """
)


def test_sigkill_in_the_middle_of_a_save_leaves_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    make(path, ["x", "y"])
    before = path.read_bytes()
    child = subprocess.Popen(
        [sys.executable, "-c", KILL_MID_SAVE, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "writing"  # the new file is half done
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert path.read_bytes() == before
    assert len(yaml.safe_load(path.read_text())["interactions"]) == 2
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1  # the temp file of the killed writer, never read as a cassette
    assert leftovers[0].startswith(".c.yaml.") and f"-{child.pid}." in leftovers[0]
    # opening writes the killed run's journal into the file at once, which removes the
    # temp file, and leaves no lock file either
    with pytest.warns(JournalWarning, match="recovered 200 recordings"):
        assert len(Cassette(path).interactions) == 202
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]
    cassette = Cassette(path, mode="new_episodes")
    cassette.begin(chat("after the crash")).answer(lambda: {"text": "ok"})
    assert cassette.save()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]
    assert len(Cassette(path).interactions) == 203  # the killed run's 200 were merged


STALL_IN_WRITE = textwrap.dedent(
    """
    import os, sys, time
    from chaincassette import storage
    real_fsync = os.fsync
    def stall(fd):
        real_fsync(fd)
        print("writing", flush=True)
        time.sleep(60)
    os.fsync = stall
    storage.write_atomic(storage.Path(sys.argv[1]), "version: 1\\n...\\n")
    """
)


def test_a_save_leaves_the_temp_file_of_a_live_writer_alone(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    make(path, ["x"])
    child = subprocess.Popen(
        [sys.executable, "-c", STALL_IN_WRITE, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "writing"
        (live,) = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        make(path, ["y"])  # another process saves the same cassette meanwhile
        assert live.exists()  # its writer is alive: not debris
    finally:
        child.kill()
        child.wait()
    make(path, ["z"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


def test_debris_without_a_live_writer_is_recognised_by_name_and_age(tmp_path: Path) -> None:
    from chaincassette import storage

    old = 2 * storage.STALE_TEMP_SECONDS
    files = {
        # (name, age in seconds) → removed by the next save?
        (f".c.yaml.{storage._HOST}-{os.getpid()}.abcd1234.tmp", 5): False,  # this process
        (".c.yaml.0badf00d-1.abcd1234.tmp", 5): False,  # another host, recent
        (".c.yaml.0badf00d-1.abcd1234.tmp", old): True,  # another host, long ago
        (".c.yaml.k3j_x9a2.tmp", 5): False,  # an older chaincassette, maybe writing now
        (".c.yaml.k3j_x9a2.tmp", old): True,  # an older chaincassette's debris
        (".c.yaml.cclock", old): True,  # the lock file older versions kept beside cassettes
        (".d.yaml.k3j_x9a2.tmp", old): False,  # another cassette's
        (".c.yaml.x.yaml.k3j_x9a2.tmp", old): False,  # another cassette's (c.yaml.x.yaml)
        (".c.yaml.backup", old): False,  # not ours at all
    }
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    files[(f".c.yaml.{storage._HOST}-{dead.stdout.strip()}.abcd1234.tmp", 5)] = True
    folder = {}
    for (name, age), removed in files.items():
        sub = tmp_path / f"case{len(folder)}"
        sub.mkdir()
        (sub / name).write_text("half a cassette")
        os.utime(sub / name, (time.time() - age, time.time() - age))
        folder[sub / name] = removed
    for leftover, removed in folder.items():
        make(leftover.parent / "c.yaml", ["x"])
        assert leftover.exists() is not removed, leftover.name


def test_safe_loader_used_for_yaml(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    make(path, ["x"])
    assert yaml.safe_load(path.read_text())["version"] == 2


@pytest.mark.parametrize(
    ("value", "tag"),
    [("2026-11-29", "timestamp"), ("!!binary aGVsbG8=", "binary"), ("!!set {a: null}", "set")],
)
def test_hand_written_non_json_values_are_refused(tmp_path: Path, value: str, tag: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "version: 1\ninteractions:\n- key: "
        + "a" * 64
        + f"\n  request: {{}}\n  response: {value}\n...\n"
    )
    if tag == "timestamp":  # an unquoted date stays the string it looks like
        assert Cassette(path).interactions[0].response == "2026-11-29"
    else:
        with pytest.raises(CassetteFormatError, match=f"tag:yaml.org,2002:{tag}"):
            Cassette(path).load()


def test_new_cassettes_are_readable_by_others(tmp_path: Path) -> None:
    make(tmp_path / "c.yaml", ["x"])
    assert (tmp_path / "c.yaml").stat().st_mode & 0o044 == 0o044


def test_half_an_emoji_is_refused_when_recorded_not_when_saved(tmp_path: Path) -> None:
    cassette = Cassette(tmp_path / "c.yaml", mode="record")
    with pytest.raises(TypeError, match="not valid Unicode"):
        cassette.begin(chat("x")).answer(lambda: {"text": "\ud83d"})
    cassette.begin(chat("y")).answer(lambda: {"text": "fine"})
    assert cassette.save()


#: Plain scalars of every first character a resolver looks at, and some it does not.
SCALARS = [
    "yes",
    "No",
    "ON",
    "off",
    "True",
    "FALSE",
    "y",
    "n",
    "null",
    "Null",
    "NULL",
    "~",
    "Yonder",
    "normal",
    "offset",
    "trueish",
    "0",
    "-1",
    "+7",
    "0x1F",
    "0o17",
    "017",
    "1_000",
    "3.5",
    "-.5",
    ".5",
    "1e3",
    "1.0e+3",
    "6.8523015e+5",
    "190:20:30",
    "-x",
    "+",
    ".",
    "..",
    ".e3",
    "0x",
    "1e",
    "12abc",
    "3-4",
    "Rotterdam",
    "lookup_shipment",
    "call_1",
    "a:b",
    "café",
    "émile",
    "日本",
    "_x",
    "$text",
]


def test_plain_scalars_read_as_pyyaml_reads_them() -> None:
    """The loader's shortcut (a plain scalar no resolver can change is a string) and its
    per-load memo give what PyYAML's safe loader gives for every scalar, plain or quoted,
    as a value and as a key, first time and repeated."""
    from chaincassette import safe_yaml

    lines = []
    for n, text in enumerate(SCALARS):
        lines += [f"p{n}: {text}", f"q{n}: '{text}'", f"r{n}: [{text}, {text}]", f"{text}x: {n}"]
    document = "\n".join(lines) + "\n"
    ours = safe_yaml.load(document)
    reference = yaml.safe_load(document)
    assert ours == reference
    for key, value in ours.items():  # same types too (1 == 1.0 == True in Python)
        assert type(value) is type(reference[key]), (key, value, reference[key])
        if isinstance(value, list):
            assert [type(v) for v in value] == [type(v) for v in reference[key]], key


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\n...\n",
        "...\n",
        "...",
        "a: 1\n...",
        "a: 1\n...  \n\n\t\n",
        "a: 1\n...\r\n",
        "a: 1\nb...\n",
        "a: 1\n....\n",
        "a: 1\n... x\n",
        "a: 1\n",
        "",
        "\n\n",
        "x...\n",
        "a: 1\n..\n",
    ],
)
def test_end_marker_is_read_from_the_tail(text: str) -> None:
    from chaincassette import storage

    assert storage._ends_with_end_marker(text) is (storage._END_MARKER.search(text) is not None)


def test_a_text_parsed_before_comes_back_equal_and_unshared() -> None:
    """The second load of the same YAML text reads the kept JSON copy of the first parse:
    the same data, types included, in new objects a caller may change."""
    text = (
        "a: [1, 1.0, -0.0, true, null, '1', 'yes', yes, 1e3, 0x1f, ~]\n"
        "b: {'k': [{'n': 12345678901234567890}]}\nc: \"\\u00e9 \\U0001F600\"\n"
    )
    first = safe_yaml.load(text)
    second = safe_yaml.load(text)
    assert json.dumps(second) == json.dumps(first) == json.dumps(yaml.safe_load(text))
    assert [type(v) for v in second["a"]] == [type(v) for v in yaml.safe_load(text)["a"]]
    first["b"]["k"][0]["n"] = 0
    first["a"].clear()
    assert safe_yaml.load(text) == second != first


def test_a_refused_text_is_refused_at_every_load(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("version: 2\ninteractions: &x []\n...\n")
    for _ in range(2):
        with pytest.raises(CassetteFormatError, match="anchors"):
            Cassette(path).load()
