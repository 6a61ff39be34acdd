"""A stored error is an error of a call: never a skip, an exit or an interrupt.

A cassette that names ``unittest.SkipTest`` turned a test into "skipped", also under
``--cassette-strict``. Here every type that steers a program instead of reporting a
failed call is refused where a cassette could bring it back: never recorded live, refused
with ``CassetteFormatError`` on replay (before anything is built), refused by
``chaincassette fault --type``, and reported by ``chaincassette verify``.
"""

from __future__ import annotations

import asyncio
import unittest
from pathlib import Path
from typing import Any, ClassVar

import pytest

from chaincassette import Cassette, CassetteFormatError, storage
from chaincassette.cli import main as cli
from chaincassette.error_codec import (
    RecordedError,
    StoredErrorRefused,
    encode_error,
    rebuild_error,
    recordable,
    refusal,
)
from chaincassette.redact import Redactor


class QuietSkip(unittest.SkipTest):
    """A program's own skip: refused through its loaded base, whatever its name."""


class BuiltWitness(Exception):
    built: ClassVar[list[Any]] = []

    def __init__(self, *args: Any) -> None:
        BuiltWitness.built.append(args)
        super().__init__(*args)


STEERING = [
    "unittest.case.SkipTest",
    "unittest.SkipTest",
    f"{__name__}.QuietSkip",
    "_pytest.outcomes.Skipped",
    "_pytest.outcomes.Failed",
    "_pytest.outcomes.Exit",
    "builtins.KeyboardInterrupt",
    "builtins.SystemExit",
    "builtins.GeneratorExit",
    "builtins.BaseException",
    "builtins.StopIteration",
    "builtins.StopAsyncIteration",
    "asyncio.exceptions.CancelledError",
    "chaincassette.errors.CassetteMiss",
    "somewhere.SkipTest",  # a look-alike must not pose as one either
]


def stored(kind: str, bases: list[str] | None = None) -> dict[str, Any]:
    return {"type": kind, "bases": bases or ["builtins.Exception"], "message": "m", "args": ["m"]}


@pytest.mark.parametrize("kind", STEERING)
def test_types_that_steer_a_program_are_refused(kind: str) -> None:
    assert refusal(kind) is not None
    with pytest.raises(StoredErrorRefused, match="only be an error of a call"):
        rebuild_error(stored(kind))


@pytest.mark.parametrize("base", ["unittest.case.SkipTest", f"{__name__}.QuietSkip"])
def test_a_steering_base_is_refused_too(base: str) -> None:
    with pytest.raises(StoredErrorRefused):
        rebuild_error(stored("myapp.errors.Quota", ["myapp.errors.Base", base]))


@pytest.mark.parametrize(
    "kind", ["openai.RateLimitError", "builtins.ValueError", "httpx.ConnectError", "myapp.Quota"]
)
def test_errors_of_a_call_still_replay(kind: str) -> None:
    assert refusal(kind) is None
    error = rebuild_error(stored(kind))
    assert isinstance(error, Exception) and str(error) == "m"


def test_a_refused_file_builds_nothing() -> None:
    BuiltWitness.built.clear()
    with pytest.raises(StoredErrorRefused):
        rebuild_error(stored(f"{__name__}.BuiltWitness", ["unittest.case.SkipTest"]))
    assert BuiltWitness.built == []


def test_a_live_skip_or_exit_is_never_recorded() -> None:
    assert not recordable(unittest.SkipTest("x"))
    assert not recordable(QuietSkip("x"))
    assert not recordable(StopIteration())
    assert not recordable(asyncio.CancelledError())
    assert recordable(ValueError("x")) and recordable(RecordedError("x", "openai.RateLimitError"))


def record_one(path: Path) -> dict[str, Any]:
    request = {"kind": "chat", "model": "m", "messages": [{"role": "user", "content": "hi"}]}
    cassette = Cassette(path, mode="record")
    cassette.begin(request).answer(lambda: "hello")
    cassette.save()
    return request


def plant(path: Path, error: dict[str, Any]) -> None:
    document = storage.read(path, "yaml")
    assert document is not None
    document.interactions[0]["response"] = {"error": error}
    storage.write_atomic(path, storage.dumps(document, "yaml"))


def test_replaying_a_stored_skip_raises_a_format_error_naming_file_and_interaction(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.yaml"
    request = record_one(path)
    plant(path, stored("unittest.case.SkipTest"))
    call = Cassette(path).begin(request)
    raised: BaseException | None = None
    try:
        call.raise_if_error()
    except BaseException as error:
        raised = error
    assert isinstance(raised, CassetteFormatError), repr(raised)
    assert f"cannot read cassette {path}: interaction 0 (key {call.key[:12]})" in str(raised)
    assert "unittest.case.SkipTest steers the program" in str(raised)


def test_fault_refuses_a_type_that_is_no_provider_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    record_one(path)
    before = path.read_bytes()
    for kind in ("unittest.case.SkipTest", "builtins.KeyboardInterrupt", "KeyboardInterrupt"):
        assert cli(["fault", str(path), "-n", "0", "--error", "rate_limit", "--type", kind]) == 2
        assert kind in capsys.readouterr().err
    assert path.read_bytes() == before  # nothing written
    assert (
        cli(
            [
                "fault",
                str(path),
                "-n",
                "0",
                "--error",
                "auth",
                "--type",
                "anthropic.AuthenticationError",
            ]
        )
        == 0
    )
    assert "anthropic.AuthenticationError" in path.read_text()


def test_verify_reports_a_stored_skip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cassettes" / "c.yaml"
    path.parent.mkdir()
    record_one(path)
    plant(path, stored("unittest.case.SkipTest"))
    assert cli(["verify", str(path.parent)]) == 1
    out = capsys.readouterr().out
    assert (
        "interactions[0]: the response raises 'unittest.case.SkipTest', which replay refuses" in out
    )


def test_an_error_redaction_requoted_replays_as_its_own_class() -> None:
    """Masking a value that held a ``"`` changes the quotes ``repr`` picks: no ``ValueError``
    reads as the stored one, so a look-alike of ``ValueError`` itself (not of ``Exception``)
    replays it, still caught by ``except ValueError``."""
    redactor = Redactor(environ={"DB_PASSWORD": 'pa"ss-123456'})
    stored = redactor.redact(encode_error(ValueError("{'password': 'pa\"ss-123456'}")))
    rebuilt = rebuild_error(stored)
    assert isinstance(rebuilt, ValueError) and type(rebuilt).__name__ == "ValueError"
    assert (str(rebuilt), repr(rebuilt)) == (stored["message"], stored["repr"])


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="notes: Python 3.11+")
def test_a_replayed_error_says_it_comes_from_the_cassette(tmp_path: Path) -> None:
    """A first run against a wrong address records its connection error; once the address is
    fixed the replay still raises it, and nothing said it was not the provider's doing."""
    path = tmp_path / "c.yaml"
    request = {"kind": "chat", "model": "m", "messages": [{"role": "user", "content": "hi"}]}
    recording = Cassette(path, mode="once")
    call = recording.begin(request)
    live = ConnectionRefusedError(111, "Connection refused")
    call.fail(live)  # what an integration does with a live call's error
    recording.save()
    assert not getattr(live, "__notes__", None)  # the live error is the program's own
    for _ in range(2):
        replay = Cassette(path, mode="replay").begin(request)
        assert replay.hit
        with pytest.raises(ConnectionRefusedError) as replayed:
            replay.raise_if_error()
        assert str(replayed.value) == str(live)  # what the program reads is unchanged
        assert replayed.value.__notes__ == [
            f"chaincassette: replayed from {path}, where the recording run stored it; "
            "re-record the cassette to call the provider again"
        ]
