"""Record modes: when a cassette may call the live model and when it must not.

The names follow vcrpy so people who know it need no new vocabulary; vcrpy's own
``none`` and ``all`` are accepted as aliases.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
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


@dataclass(frozen=True)
class ModePolicy:
    """Process-wide rules set by a runner (the pytest plugin, ``chaincassette run``) that beat
    a ``mode=`` passed by hand: such a cassette obeys ``--cassette-mode``, never records on
    CI, never writes under ``--cassette-strict``."""

    override: RecordMode | None = None
    """A mode every cassette uses, whatever it asked for (``--cassette-mode``)."""
    refuse_recording: str = ""
    """Why recording is refused (e.g. on CI); recording modes then fall back to ``replay``."""
    refuse_writes: str = ""
    """Why no cassette may be written (``--cassette-strict``); a save raises instead."""
    rerecord_command: str | Callable[[str], str] = ""
    """The command that runs the program again in a recording mode, for miss messages: a
    format string with ``{mode}`` (and ``{path}``, ``{name}`` of the cassette), e.g.
    ``pytest tests/test_agent.py::test_weather --cassette-mode={mode}``, or a function of
    the mode that returns it (``chaincassette run`` leaves its default mode unsaid)."""
    option_syntax: str = ""
    """How a cassette option is passed in this context, with ``{option}`` (e.g.
    ``@pytest.mark.cassette({option})``); empty means ``use_cassette(..., {option})``."""


_policy = ModePolicy()


def current_policy() -> ModePolicy:
    return _policy


def set_policy(policy: ModePolicy) -> ModePolicy:
    """Install ``policy`` for the whole process; returns the previous one."""
    global _policy
    previous, _policy = _policy, policy
    return previous


@contextlib.contextmanager
def policy(**changes: object) -> Iterator[ModePolicy]:
    """Apply policy ``changes`` for a block, restoring the previous policy after it."""
    previous = set_policy(replace(_policy, **changes))  # type: ignore[arg-type]
    try:
        yield _policy
    finally:
        set_policy(previous)


def resolve_mode(explicit: RecordMode | str | None) -> RecordMode:
    """The runner's override, else the argument, ``CHAINCASSETTE_MODE``, ``replay``; where the
    runner refuses recording (CI), a recording mode and ``off`` fall back to ``replay``."""
    if _policy.override is not None:
        return _policy.override
    if explicit is not None:
        mode = RecordMode.parse(explicit)
    else:
        from_env = os.environ.get(MODE_ENV_VAR, "").strip()
        try:
            mode = RecordMode.parse(from_env) if from_env else RecordMode.REPLAY
        except ValueError as exc:
            raise ValueError(f"{MODE_ENV_VAR}: {exc}") from None
    if _policy.refuse_recording and (mode.may_record or mode is RecordMode.OFF):
        return RecordMode.REPLAY  # "off" calls the live model too
    return mode
