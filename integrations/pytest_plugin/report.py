"""The end-of-run numbers, computed from the session data alone (no terminal, no pytest)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .session import CassetteUse, SessionState


@dataclass(frozen=True)
class Summary:
    """Totals over every test of the run, all xdist workers included."""

    cassettes: int = 0
    tests: int = 0
    replayed: int = 0
    recorded: int = 0
    missed: int = 0
    unused: int = 0
    tokens_not_spent: int = 0
    tokens_unknown: int = 0
    """Replayed model calls of unknown usage (the provider reported none)."""
    written: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()
    unused_by_cassette: dict[str, int] = field(default_factory=dict)
    live: dict[str, int] = field(default_factory=dict)
    """Tests whose model calls went live outside every cassette, not recorded → calls."""

    @property
    def empty(self) -> bool:
        return self.tests == 0


def summarize(state: SessionState) -> Summary:
    uses: list[CassetteUse] = state.uses
    paths = sorted({u.path for u in uses})
    unused = _unused_by_cassette(uses)
    return Summary(
        cassettes=len(paths),
        tests=len({u.nodeid for u in uses}),
        replayed=sum(u.replayed for u in uses),
        recorded=sum(u.recorded for u in uses),
        missed=sum(u.missed for u in uses),
        unused=sum(unused.values()),
        tokens_not_spent=sum(u.tokens_replayed for u in uses),
        tokens_unknown=sum(u.tokens_unknown for u in uses),
        written=tuple(sorted({u.path for u in uses if u.written})),
        blocked=tuple(sorted({u.path for u in uses if u.blocked_write})),
        unused_by_cassette={p: n for p, n in unused.items() if n},
        live=dict(sorted(state.live.items())),
    )


def _unused_by_cassette(uses: list[CassetteUse]) -> dict[str, int]:
    """Interactions no test played, per cassette (a cassette shared by tests counts once)."""
    by_path: dict[str, set[int] | None] = {}
    for use in uses:
        indexes = set(use.unused_indexes)
        previous = by_path.get(use.path)
        by_path[use.path] = indexes if previous is None else previous & indexes
    return {path: len(indexes or ()) for path, indexes in by_path.items()}
