"""A tool replayed under ``replay_tools=True`` that returns (or raises with) a secret its
input sent: the result is stored masked as the stored input masks it, the recording run
gets the masked result, and a replay serves the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.tools import ToolException, tool
from session_tokens import session_token

from chaincassette import use_cassette
from chaincassette.redact import SecretMaskedWarning


@tool
def open_session(session: str) -> str:
    """Open the session and say which one it is."""
    return f"session {session} is open"


@tool
def close_session(session: str) -> str:
    """Close the session (it is always gone already)."""
    raise ToolException(f"no session {session}")


close_session.handle_tool_error = True


def test_a_tool_result_repeating_its_input_token_is_masked(tmp_path: Path) -> None:
    token = session_token()
    path = tmp_path / "tools.yaml"

    def program(mode: str) -> list[str]:
        with use_cassette(path, mode=mode, replay_tools=True) as cassette:
            got = [
                open_session.invoke({"session": token}),
                close_session.invoke({"session": token}),
            ]
        assert cassette.stats.recorded == (2 if mode == "record" else 0)
        return got

    with pytest.warns(SecretMaskedWarning, match="random-token"):
        recorded = program("record")
    assert recorded == [
        "session <redacted:random-token> is open",
        "no session <redacted:random-token>",
    ]
    assert token not in path.read_text()
    assert program("replay") == recorded == program("replay")
