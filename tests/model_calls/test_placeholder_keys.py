"""The replay placeholder key never reaches a cassette, even when a recording sends it.

A client built while a cassette replays (no ``OPENAI_API_KEY`` set) holds the placeholder.
If a cassette then *records* with that client, the placeholder goes to the provider: a real
``ChatOpenAI`` against a local server that checks keys like OpenAI (401 with the masked key)
or echoes them back. The 401 is not recorded (it would replay "invalid key" forever) and
says why; an echoed placeholder is refused by the scan before the write.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from chaincassette import credentials, use_cassette
from chaincassette.credentials import PLACEHOLDER, PlaceholderKeys
from chaincassette.redact import SecretMaskedWarning

pytest.importorskip("langchain_openai")


class KeyCheckingProvider:
    """Answers 401 like OpenAI to any key but ``real``; ``echo`` puts the key in the answer."""

    def __init__(self, echo: bool = False) -> None:
        self.calls = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.calls += 1
                key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                if key != "sk-real-" + "x" * 32 and not echo:
                    masked = f"{key[:8]}{'*' * (len(key) - 12)}{key[-4:]}"
                    body = {"error": {"message": f"Incorrect API key provided: {masked}.",
                                      "type": "invalid_request_error", "code": "invalid_api_key"}}  # fmt: skip
                    self._send(401, body)
                    return
                message = {"role": "assistant", "content": f"Your key is {key}"}
                choice = {"index": 0, "message": message, "finish_reason": "stop"}
                self._send(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
                                 "model": "gpt-4o-mini", "choices": [choice]})  # fmt: skip

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in credentials.PROVIDER_KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(credentials.SWITCH_ENV_VAR, raising=False)
    monkeypatch.setattr(credentials, "PLACEHOLDERS", PlaceholderKeys())


def test_an_invalid_key_answer_to_the_placeholder_is_not_recorded(
    tmp_path: Path, no_keys: None
) -> None:
    import openai
    from langchain_openai import ChatOpenAI

    from chaincassette.error_codec import recordable

    server = KeyCheckingProvider(echo=False)
    recording = tmp_path / "recording.yaml"
    with use_cassette(tmp_path / "replayed.yaml", mode="replay"):
        model = ChatOpenAI(model="gpt-4o-mini", base_url=server.url, max_retries=0)  # placeholder
        with pytest.raises(Exception) as raised, use_cassette(recording, mode="record") as inner:
            model.invoke("Hello")
    server.close()
    assert isinstance(raised.value, openai.AuthenticationError) and recordable(raised.value)
    assert server.calls == 1  # it did reach the provider: a recording calls live
    assert inner.stats.recorded == 0 and not recording.exists()
    if sys.version_info >= (3, 11):
        assert "This error is not recorded" in raised.value.__notes__[-1]


def test_a_placeholder_echoed_by_the_provider_is_never_written(
    tmp_path: Path, no_keys: None
) -> None:
    from langchain_openai import ChatOpenAI

    server = KeyCheckingProvider(echo=True)
    recording = tmp_path / "recording.yaml"
    with use_cassette(tmp_path / "replayed.yaml", mode="replay"):
        model = ChatOpenAI(model="gpt-4o-mini", base_url=server.url, max_retries=0)
        with pytest.warns(SecretMaskedWarning), use_cassette(recording, mode="record"):
            answer = model.invoke("Hello").content
    server.close()
    # the placeholder is a value the process holds as a key: masked in what is stored, and
    # in what the recording run hands the program, so that its replay is the same
    assert isinstance(answer, str) and answer.startswith("Your key is <redacted:env:")
    assert PLACEHOLDER not in recording.read_text()
