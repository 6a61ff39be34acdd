"""Secrets held in environment variables reach no file, whatever their format.

A LangGraph agent records with planted secrets of every common format (Slack, GitLab,
GitHub, Stripe, AWS, Azure-style) and one of no known format, each in a secret-named
environment variable, flowing through a system prompt, a tool argument the model writes,
a tool result, a URL, a tool's error and a provider's error. Every file the run writes
is read back byte by byte: the cassette's folder (the cassette and whatever else lands
beside it), each temp file of an atomic write as it is renamed into place, the journal and
run state folder, and the fallback lock folder under the system temp directory. No secret
is there. The run is kept (no ``CassetteSecretError``) and
replays with no provider call, identical to the recording run.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import string
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fake_provider import PROVIDER_CALLS
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import ToolNode, create_react_agent
from state_files import files_under

from chaincassette import CassetteSecretError, use_cassette
from chaincassette.filelock import fallback_lock_dir
from chaincassette.redact import SecretMaskedWarning
from chaincassette.trace import TraceDivergenceWarning

_ALNUM = string.ascii_letters + string.digits


def _rand(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(random.SystemRandom().choice(alphabet) for _ in range(n))


def planted() -> dict[str, str]:
    """Fresh fake secrets of each format, built at run time (no key is committed)."""
    return {
        "SLACK_BOT_TOKEN": f"xoxb-{_rand(11, string.digits)}-{_rand(12, string.digits)}-{_rand(24)}",
        "GITLAB_TOKEN": "glpat-" + _rand(20),
        "GITHUB_TOKEN": "ghp_" + _rand(36),
        "STRIPE_SECRET_KEY": "sk_live_" + _rand(24),
        "AWS_ACCESS_KEY_ID": "AKIA" + _rand(16, string.ascii_uppercase + string.digits),
        "AWS_SECRET_ACCESS_KEY": _rand(40, _ALNUM + "+/"),
        "AZURE_SEARCH_ADMIN_KEY": _rand(32, "0123456789abcdef"),
        "ACME_INTERNAL_SECRET": f"acme::{_rand(6)}::{_rand(6, string.digits)}",  # no known format
    }


class ScriptedChat(BaseChatModel):
    """A provider-like chat model that leaks what it can: it writes the Slack token into a
    tool call's arguments (read from the environment, as a model would read it from its
    context), quotes its tool results back, and is reached through a URL holding a key."""

    base_url: str = ""
    fail_first: bool = False
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": "scripted-1", "base_url": self.base_url}

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, BaseMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        PROVIDER_CALLS.append("scripted")
        self.calls += 1
        if self.fail_first and self.calls == 1:
            raise RuntimeError(
                f"401 from {self.base_url}: key {os.environ['AWS_ACCESS_KEY_ID']} was revoked"
            )
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if not results:
            calls = [
                {"name": "post", "args": {"token": os.environ["SLACK_BOT_TOKEN"]}, "id": "c1"},
                {"name": "read_config", "args": {}, "id": "c2"},
                {"name": "charge", "args": {"amount": 5}, "id": "c3"},
            ]
            message = AIMessage(content="", tool_calls=calls)
        else:
            quoted = " | ".join(str(m.content) for m in results)
            message = AIMessage(content=f"done: {quoted}")
        return ChatResult(generations=[ChatGeneration(message=message)])


@tool
def post(token: str) -> str:
    """Post to the team channel with a token."""
    return f"posted with {token[:4]}…"


@tool
def read_config() -> str:
    """Read the deployment configuration."""
    return (
        f"stripe={os.environ['STRIPE_SECRET_KEY']} aws={os.environ['AWS_SECRET_ACCESS_KEY']} "
        f"callback=https://hooks.acme.test/in?token={os.environ['ACME_INTERNAL_SECRET']}"
    )


@tool
def charge(amount: int) -> str:
    """Charge the customer."""
    raise ValueError(f"payment gateway refused api-key: {os.environ['AZURE_SEARCH_ADMIN_KEY']}")


def program() -> list[tuple[str, str]]:
    url = f"https://{os.environ['GITHUB_TOKEN']}@models.acme.test/v1"
    primary = ScriptedChat(base_url=url, fail_first=True)
    backup = ScriptedChat(base_url=url)
    model = primary.with_fallbacks([backup])
    agent = create_react_agent(
        model.bind_tools([post, read_config, charge]),  # type: ignore[attr-defined]
        ToolNode([post, read_config, charge], handle_tool_errors=True),
        prompt=SystemMessage(f"Deploy with GitLab token {os.environ['GITLAB_TOKEN']}."),
    )
    out = agent.invoke({"messages": [("user", "Ship release 7 and bill it")]})
    return [(m.type, str(m.content)) for m in out["messages"]]


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = planted()
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


@pytest.fixture
def temp_writes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """The bytes of every temp file renamed into place during the test (atomic writes)."""
    seen: list[bytes] = []
    original = os.replace

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if os.path.isfile(src):
            seen.append(Path(src).read_bytes())
        original(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    yield seen


def written_files(*roots: Path) -> dict[Path, tuple[float, bytes]]:
    """Each file under ``roots``: (modified, bytes). Another worker of the run shares the
    state folder: a file it removes meanwhile is skipped."""
    found = {}
    for root in roots:
        for path, data in files_under(root):
            with contextlib.suppress(FileNotFoundError):
                found[path] = (path.stat().st_mtime, data)
    return found


def leaks(secrets: dict[str, str], blobs: list[bytes]) -> list[str]:
    return [name for name, value in secrets.items() for blob in blobs if value.encode() in blob]


@pytest.mark.parametrize("replay_tools", [False, True])
def test_secrets_held_in_the_environment_reach_no_file_and_the_run_replays(
    tmp_path: Path, secrets: dict[str, str], temp_writes: list[bytes], replay_tools: bool
) -> None:
    path = tmp_path / "cassettes" / "agent.yaml"
    state = Path(os.environ["CHAINCASSETTE_STATE_DIR"])
    before = {p: stamp for p, (stamp, _) in written_files(state, fallback_lock_dir()).items()}
    with (
        pytest.warns(SecretMaskedWarning) as masked,
        use_cassette(path, mode="record", replay_tools=replay_tools),
    ):
        recorded = program()
    assert any("$SLACK_BOT_TOKEN" in str(w.message) for w in masked)  # the tool argument
    assert path.exists()  # kept: nothing refused the save
    blobs = [
        blob
        for p, (stamp, blob) in written_files(tmp_path, state, fallback_lock_dir()).items()
        if before.get(p) != stamp
    ] + temp_writes
    assert temp_writes, "the cassette is written through a temp file"
    assert leaks(secrets, blobs) == []
    text = path.read_text()
    for name in ("SLACK_BOT_TOKEN", "GITLAB_TOKEN", "GITHUB_TOKEN", "AZURE_SEARCH_ADMIN_KEY"):
        assert f"<redacted:env:{name}>" in text, name  # masked where it was, by value
    # the program saw what the cassette holds: the model's tool argument arrived masked
    assert "posted with <red…" in " ".join(content for _, content in recorded)

    calls = len(PROVIDER_CALLS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SecretMaskedWarning)  # a replay masks nothing anew
        warnings.simplefilter("error", TraceDivergenceWarning)  # the masked trace compares
        with use_cassette(path, mode="replay", replay_tools=replay_tools) as cassette:
            assert program() == recorded
    assert len(PROVIDER_CALLS) == calls and cassette.stats.missed == 0
    assert cassette.trace_divergence is None
    assert path.read_text() == text


class ThreeAtATime(BaseChatModel):
    """A provider that streams its answer three characters a chunk, as a model's tokens cut
    a key it quotes. The answer is kept reversed: the request holds the model's settings,
    and a key the request sent is one a response may repeat masked (``SentSecrets``)."""

    backwards: str = ""

    @property
    def text(self) -> str:
        return self.backwards[::-1]

    @property
    def _llm_type(self) -> str:
        return "three-at-a-time"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.text))])

    def _stream(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        for start in range(0, len(self.text), 3):
            yield ChatGenerationChunk(message=AIMessageChunk(content=self.text[start : start + 3]))


def streamed_texts(blob: bytes) -> list[str]:
    """What each LangChain stream in a file (a cassette, a journal's JSON lines) reads as a
    whole. The state folder is shared with the other worker, whose journals may hold
    streams of other shapes (an SDK's events, LlamaIndex's chunks): those are skipped."""
    texts = []
    for line in blob.decode(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        entry = entry.get("interaction", entry) if isinstance(entry, dict) else {}
        response = entry.get("response") if isinstance(entry, dict) else None
        chunks = response.get("chunks") if isinstance(response, dict) else None
        if isinstance(chunks, list):
            with contextlib.suppress(KeyError, TypeError):
                texts.append("".join(str(c["message"]["data"]["content"]) for c in chunks))
    return texts


def test_a_key_a_stream_splits_across_chunks_is_refused_like_a_whole_one(
    tmp_path: Path,
) -> None:
    """A key of a known format in a response refuses the save (responses are never
    reworded), also when the stream cut it in pieces: the cassette is not written, and the
    journal set aside holds it masked, not in pieces."""
    key = "sk-proj-" + _rand(40) + "7"
    model = ThreeAtATime(backwards=f"your key is {key}, keep it safe"[::-1])
    state = Path(os.environ["CHAINCASSETTE_STATE_DIR"])
    before = {p: stamp for p, (stamp, _) in written_files(state).items()}
    path = tmp_path / "c.yaml"
    with pytest.raises(CassetteSecretError, match="openai-key"), use_cassette(path, mode="record"):
        assert "".join(str(c.content) for c in model.stream("my key?")) == model.text
    assert not path.exists()
    kept = [
        text
        for p, (stamp, blob) in written_files(tmp_path, state).items()
        if before.get(p) != stamp
        for text in streamed_texts(blob)
        if text.endswith(", keep it safe")  # this test's stream, not the other worker's
    ]
    assert kept and all(key not in text and "<redacted:openai-key>" in text for text in kept)


class QuotingConfig(BaseChatModel):
    """A provider whose error quotes its configuration as Python spells it (``{config!r}``):
    a value holding a backslash or a quote reads otherwise there than in JSON text."""

    @property
    def _llm_type(self) -> str:
        return "quoting-config"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        config = {"host": "db.acme.test", "password": os.environ["DB_PASSWORD"]}
        raise ValueError(f"cannot connect with {config!r}")


@pytest.mark.parametrize("special", ["\\", "'", '"', "'\"\\", "\t", "é"])
def test_a_value_spelled_as_python_quotes_it_reaches_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, special: str
) -> None:
    """The error's ``str`` quotes the value once and its ``repr`` twice: each spelling of it
    is masked, and the replay raises the error masked."""
    tail = _rand(12)
    monkeypatch.setenv("DB_PASSWORD", f"pa{special}ss{special}{tail}")
    path = tmp_path / "c.yaml"
    with pytest.raises(ValueError), use_cassette(path, mode="record"):
        QuotingConfig().invoke("hi")
    assert tail not in path.read_text()
    with pytest.raises(ValueError) as replayed, use_cassette(path, mode="replay"):
        QuotingConfig().invoke("hi")
    assert "<redacted:env:DB_PASSWORD>" in str(replayed.value)
    assert tail not in repr(replayed.value) and type(replayed.value).__name__ == "ValueError"
