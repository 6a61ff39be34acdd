"""Bounded work on any file: what a cassette path may point to, and how much a load may cost.

Every hostile file is made by the test (nothing binary is committed): a link to
``/dev/zero``, a FIFO, a socket, a 2 GB sparse file, a 3 MB chain of ``extends`` that would
rebuild a billion messages. Each is refused with ``CassetteFormatError`` naming the file
before it blocks or fills memory (``bench_bad_files.py`` times it). A cassette that is a symbolic
link is written through to the file it points to.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from chaincassette import (
    Cassette,
    CassetteFormatError,
    CassetteWriteError,
    runs,
    safe_yaml,
    storage,
    transcript,
)
from chaincassette.cli import main as cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file kinds")


def refused_fast(load: Callable[[], object], match: str) -> float:
    """Run ``load`` (in a thread, so a blocking read fails the test instead of hanging it)
    and return the CPU time the refusal took. How fast is for ``benchmarks/bench_bad_files.py``
    and the relative check of the extends bomb: a wall-clock bound here fails on a busy machine."""
    outcome: list[BaseException | None] = []
    cpu: list[float] = []

    def run() -> None:
        start = time.thread_time()
        try:
            load()
            outcome.append(None)
        except BaseException as error:  # reported below
            outcome.append(error)
        cpu.append(time.thread_time() - start)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the load blocked"
    assert isinstance(outcome[0], CassetteFormatError), outcome[0]
    assert match in str(outcome[0])
    return cpu[0]


def loads(path: Path) -> Callable[[], object]:
    return lambda: Cassette(path).load()


def test_a_link_to_dev_zero_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "zero.yaml"
    path.symlink_to("/dev/zero")
    refused_fast(loads(path), "is a character device (a link to /dev/zero), not a cassette file")
    refused_fast(lambda: storage.read(path, "yaml"), "character device")


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    try:
        refused_fast(loads(path), "is a FIFO (named pipe), not a cassette file")
        refused_fast(lambda: Cassette(path, mode="new_episodes").load(), "FIFO")
    finally:  # a reader that did block would be let go here
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        refused_fast(loads(path), "is a socket")
    finally:
        server.close()


def test_a_directory_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "dir.yaml"
    path.mkdir()
    refused_fast(loads(path), "is a directory")


def test_a_2_gb_file_is_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:
        handle.truncate(2 * 1024**3)  # sparse: no disk used
    refused_fast(loads(path), f"is larger than {storage.MAX_CASSETTE_BYTES:,} bytes")


def test_the_size_limit_can_be_set_and_counts_what_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    recorder = Cassette(path, mode="record")
    recorder.begin({"kind": "chat", "prompt": "p"}).answer(lambda: "x" * 5000)
    recorder.save()
    monkeypatch.setenv("CHAINCASSETTE_MAX_BYTES", "1000")
    refused_fast(loads(path), "is larger than 1,000 bytes")
    monkeypatch.setenv("CHAINCASSETTE_MAX_BYTES", str(path.stat().st_size))
    assert len(Cassette(path).interactions) == 1


def extends_bomb(path: Path, size: int, seed: str) -> int:
    """A v2 file of one-message turns, each extending the one before: tiny on disk, and
    about N²/2 messages once every request is rebuilt."""
    lines = ["version: 2", "interactions:"]
    written, count, previous = 0, 0, ""
    while written < size:
        key = hashlib.sha256(f"{seed}-{count}".encode()).hexdigest()
        if not previous:
            entry = f"- key: {key}\n  request:\n    kind: chat\n    messages:\n"
            entry += "    - {role: user, content: hi}\n  response: ok"
        else:
            entry = f"- key: {key}\n  extends: '{previous[:12]}'\n  messages:\n"
            entry += f"  - {{role: user, content: m{count}}}\n  response: ok"
        lines.append(entry)
        written += len(entry) + 1
        count += 1
        previous = key
    path.write_text("\n".join([*lines, "..."]) + "\n")
    return count


def test_the_3_mb_extends_bomb_is_refused_in_under_a_second(tmp_path: Path) -> None:
    """Refused at the limit of rebuilt messages: the refusal costs about what parsing the
    file costs (under half a second of CPU), never the quadratic rebuild (31 s and 1.6 GB
    before). CPU time, not wall time: two cores shared by a busy suite stretch the wall
    clock, not the work. The bound is 1 s, or the parse of a file like it where a slow
    machine parses slower; three different files, so a parse is never served from a memo."""
    timings, parses = [], []
    for attempt in range(3):
        path = tmp_path / f"bomb{attempt}.yaml"
        turns = extends_bomb(path, 3_200_000, seed=str(attempt))
        assert path.stat().st_size > 3_000_000 and turns > 15_000
        timings.append(refused_fast(loads(path), "earlier messages in all"))
        twin = tmp_path / f"twin{attempt}.yaml"
        extends_bomb(twin, 3_200_000, seed=f"twin{attempt}")
        text = twin.read_text()
        start = time.thread_time()
        safe_yaml.load(text)
        parses.append(time.thread_time() - start)
    assert min(timings) < max(1.0, 1.5 * min(parses)), (timings, parses)


def test_a_long_honest_conversation_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "long.yaml"
    turns = extends_bomb(path, 120_000, seed="honest")
    rebuilt = turns * (turns + 1) // 2
    assert rebuilt < transcript.MAX_REBUILT_MESSAGES
    cassette = Cassette(path)
    assert len(cassette.interactions) == turns
    assert len(cassette.interactions[-1].request["messages"]) == turns


def test_keys_that_share_a_prefix_by_the_thousand_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "prefix.yaml"
    lines = ["version: 2", "interactions:"]
    for n in range(2000):
        key = "0" * 20 + hashlib.sha256(str(n).encode()).hexdigest()[:44]
        lines.append(f"- key: {key}\n  request: {{kind: chat, prompt: p{n}}}\n  response: ok")
    path.write_text("\n".join([*lines, "..."]) + "\n")
    refused_fast(loads(path), f"more than {transcript.MAX_SHARED_PREFIX} keys of this file start")


def test_a_reference_shorter_than_the_writer_writes_is_refused(tmp_path: Path) -> None:
    key = hashlib.sha256(b"a").hexdigest()
    other = hashlib.sha256(b"b").hexdigest()
    path = tmp_path / "short.yaml"
    path.write_text(
        f"version: 2\ninteractions:\n- key: {key}\n  request: {{kind: chat, messages: []}}\n"
        f"  response: ok\n- key: {other}\n  extends: '{key[:8]}'\n  messages: []\n"
        "  response: ok\n...\n"
    )
    refused_fast(loads(path), "'extends' must be the key (or its first 12+ hex digits)")


# -- symbolic links --------------------------------------------------------------------------


def record(path: Path, prompt: str, mode: str = "new_episodes") -> None:
    cassette = Cassette(path, mode=mode)
    cassette.begin({"kind": "chat", "prompt": prompt}).answer(lambda: f"answer to {prompt}")
    cassette.save()


def test_a_symlinked_cassette_is_written_through_to_the_shared_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared" / "agent.yaml"
    shared.parent.mkdir()
    links = [tmp_path / folder / "agent.yaml" for folder in ("test_a", "test_b")]
    for link in links:
        link.parent.mkdir()
        link.symlink_to(Path("..") / "shared" / "agent.yaml")
    record(links[0], "one")  # the shared file does not exist yet: created through the link
    record(links[1], "two")
    for link in links:
        assert link.is_symlink() and link.resolve() == shared.resolve()
        assert [i.response for i in Cassette(link).interactions] == [
            "answer to one",
            "answer to two",
        ]
    assert sorted(p.name for p in shared.parent.iterdir()) == ["agent.yaml"]  # no temp left
    assert all(sorted(p.name for p in link.parent.iterdir()) == ["agent.yaml"] for link in links)
    monkeypatch.setenv(runs.RUN_ENV, "a later run")  # record drops what earlier runs recorded
    record(links[0], "three", mode="record")  # a rewrite replaces the target, not the link
    assert links[0].is_symlink() and [i.response for i in Cassette(links[1]).interactions] == [
        "answer to three"
    ]


def test_the_cli_writes_through_a_link_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = tmp_path / "shared.yaml"
    link = tmp_path / "link.yaml"
    record(shared, "one")
    link.symlink_to(shared.name)
    assert cli(["fault", str(link), "-n", "0", "--error", "rate_limit"]) == 0
    assert link.is_symlink() and "RateLimitError" in shared.read_text()


def test_a_link_that_loops_is_refused_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.symlink_to(path.name)
    with pytest.raises(CassetteFormatError, match="cannot be read"):
        Cassette(path).load()
    with pytest.raises(CassetteWriteError, match="symbolic link that loops"):
        storage.write_atomic(path, "x")
    assert path.is_symlink()
