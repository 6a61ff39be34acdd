"""Record modes: when a cassette may call the live model and when it must not.

The names follow vcrpy so people who know it need no new vocabulary; vcrpy's own
``none`` and ``all`` are accepted as aliases.
"""

from __future__ import annotations

import os
from enum import Enum

MODE_ENV_VAR = "CHAINCASSETTE_MODE"


class RecordMode(str, Enum):
    """What a cassette does when a request has, or has no, recording."""

    REPLAY = "replay"
    """Serve recordings only; a request without one raises ``CassetteMiss``."""
    ONCE = "once"
    """Record if the cassette file does not exist yet, otherwise behave like ``replay``."""
    NEW_EPISODES = "new_episodes"
    """Replay what matches and record what does not."""
    RECORD = "record"
    """Ignore what is on disk, call the live model for everything, rewrite the file."""
    OFF = "off"
    """Pass every call through to the live model; read and write nothing."""

    @classmethod
    def parse(cls, value: RecordMode | str) -> RecordMode:
        """Accept a mode, its name in any case, or a vcrpy alias (``none``, ``all``)."""
        if isinstance(value, RecordMode):
            return value
        text = str(value).strip().lower().replace("-", "_")
        text = _ALIASES.get(text, text)
        try:
            return cls(text)
        except ValueError:
            valid = ", ".join(m.value for m in cls) + " (aliases: none, all)"
            raise ValueError(f"unknown record mode {value!r}; expected one of {valid}") from None

    @property
    def may_record(self) -> bool:
        return self in (RecordMode.ONCE, RecordMode.NEW_EPISODES, RecordMode.RECORD)


_ALIASES = {"none": "replay", "all": "record", "new": "new_episodes", "newepisodes": "new_episodes"}


def resolve_mode(explicit: RecordMode | str | None) -> RecordMode:
    """The argument wins, then ``CHAINCASSETTE_MODE``, then ``replay``."""
    if explicit is not None:
        return RecordMode.parse(explicit)
    from_env = os.environ.get(MODE_ENV_VAR, "").strip()
    if from_env:
        try:
            return RecordMode.parse(from_env)
        except ValueError as exc:
            raise ValueError(f"{MODE_ENV_VAR}: {exc}") from None
    return RecordMode.REPLAY
