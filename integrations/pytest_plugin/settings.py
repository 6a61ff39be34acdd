"""Which mode a test's cassette runs in, where cassettes live and how strict the run is.

Precedence, most deliberate first: ``--cassette-mode``, ``CHAINCASSETTE_MODE``, the marker's
``mode=``, ``cassette_config``'s ``mode``, the ``cassette_mode`` ini setting, ``replay``. On CI
a mode that could call the model is refused unless it came from the command line: a
forgotten ``cassette_mode = once`` must not spend money on every CI run. ``Settings.policy()``
carries the rules to the cassettes the tests open themselves (unless ``cassette_scope =
fixture``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from chaincassette.modes import MODE_ENV_VAR, ModePolicy, RecordMode

CI_ENV_VAR = "CI"
SCOPES = ("all", "fixture")
STRICT_REASON = (
    "--cassette-strict: strict runs never change cassettes; record without --cassette-strict, "
    "review and commit the cassette"
)
CI_REASON = (
    f"{CI_ENV_VAR} is set and no --cassette-mode was given on the command line; on CI only "
    "`pytest --cassette-mode=MODE` may record"
)
RERECORD_COMMAND = "pytest --cassette-mode={mode}"
"""Outside a test (collection, session fixtures); each test gets its own node id in it."""


def on_ci(environ: dict[str, str] | None = None) -> bool:
    value = (os.environ if environ is None else environ).get(CI_ENV_VAR, "").strip().lower()
    return value not in ("", "0", "false", "no")


@dataclass(frozen=True)
class ResolvedMode:
    """A test's record mode and why: ``source`` is cli, env, marker, config, ini or default."""

    mode: RecordMode
    source: str
    refused: RecordMode | None = None
    """The mode that was asked for but refused on CI (the test then replays)."""

    def refusal_note(self) -> str:
        if self.refused is None:
            return ""
        origin = {
            "env": f"the {MODE_ENV_VAR} variable",
            "marker": "the test's marker",
            "config": "the cassette_config fixture",
        }.get(self.source, f"the {self.source} setting")
        return (
            f"chaincassette: mode {self.refused.value!r} from {origin} was refused because "
            f"{CI_ENV_VAR} is set; on CI only --cassette-mode on the command line may record "
            f"(e.g. pytest --cassette-mode={self.refused.value})"
        )


@dataclass(frozen=True)
class Settings:
    """The session-wide options, resolved once from the command line, ini and environment."""

    cli_mode: RecordMode | None = None
    ini_mode: RecordMode | None = None
    env_mode: RecordMode | None = None
    cassette_dir: Path | None = None
    strict: bool = False
    ci: bool = False
    scope: str = "all"
    """``all``: the rules below govern every cassette of the run; ``fixture``: only the fixture's."""

    def policy(self) -> ModePolicy | None:
        """The process-wide policy for this run, ``None`` when only the fixture is governed."""
        if self.scope != "all":
            return None
        return ModePolicy(
            override=self.cli_mode,
            refuse_recording=CI_REASON if self.ci and self.cli_mode is None else "",
            refuse_writes=STRICT_REASON if self.strict else "",
            rerecord_command=RERECORD_COMMAND,
        )

    def resolve(
        self,
        marker_mode: RecordMode | str | None = None,
        config_mode: RecordMode | str | None = None,
    ) -> ResolvedMode:
        """A test's mode from the marker's ``mode=`` and its ``cassette_config``'s ``mode``."""
        candidates: list[tuple[RecordMode | None, str]] = [
            (self.cli_mode, "cli"),
            (self.env_mode, "env"),
            (RecordMode.parse(marker_mode) if marker_mode is not None else None, "marker"),
            (RecordMode.parse(config_mode) if config_mode is not None else None, "config"),
            (self.ini_mode, "ini"),
        ]
        mode, source = next(
            ((m, s) for m, s in candidates if m is not None), (RecordMode.REPLAY, "default")
        )
        if self.ci and source != "cli" and mode is not RecordMode.REPLAY:
            return ResolvedMode(RecordMode.REPLAY, source, refused=mode)
        return ResolvedMode(mode, source)

    @property
    def replays(self) -> bool:
        """Whether the run's own mode (before markers) is ``replay``: the default, and CI's.
        Then unset provider keys read as a placeholder and the live-call guard is on."""
        return self.resolve(None).mode is RecordMode.REPLAY


def parse_mode(value: str | None, what: str) -> RecordMode | None:
    if value is None or not str(value).strip():
        return None
    try:
        return RecordMode.parse(value)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


def build(
    *,
    cli_mode: str | None,
    ini_mode: str | None,
    cli_dir: str | None,
    ini_dir: str | None,
    ini_dir_base: Path,
    invocation_dir: Path,
    strict: bool,
    scope: str = "all",
    environ: dict[str, str] | None = None,
) -> Settings:
    """Settings from raw option values; a bad mode raises ``ValueError`` naming its source."""
    env = os.environ if environ is None else environ
    directory: Path | None = None
    if cli_dir:
        directory = (invocation_dir / cli_dir).resolve()
    elif ini_dir:
        directory = (ini_dir_base / ini_dir).resolve()
    scope = (scope or "all").strip().lower()
    if scope not in SCOPES:
        raise ValueError(
            f"the cassette_scope ini setting must be 'all' or 'fixture', not {scope!r}"
        )
    return Settings(
        cli_mode=parse_mode(cli_mode, "--cassette-mode"),
        ini_mode=parse_mode(ini_mode, "the cassette_mode ini setting"),
        env_mode=parse_mode(env.get(MODE_ENV_VAR), MODE_ENV_VAR),
        cassette_dir=directory,
        strict=strict,
        ci=on_ci(dict(env)),
        scope=scope,
    )
