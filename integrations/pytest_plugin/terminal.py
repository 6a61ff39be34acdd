"""The end-of-run summary for a terminal and a CI log, from the session data alone (no pytest)."""

from __future__ import annotations

from chaincassette.wording import counted

from .session import CassetteUse, SessionState
from .shared import unplayed

#: Tests named under "not recorded" at the most.
MAX_LIVE_TESTS = 10


def summary_lines(state: SessionState, *, verbose: bool = False) -> list[str]:
    """Lines for pytest's terminal summary, over every test of the run (all xdist workers);
    nothing when no test used a cassette or called a model outside one."""
    uses = state.uses
    unused = {path: len(indexes) for path, indexes in unplayed(uses).items()}
    lines = [_totals(uses, sum(unused.values()))] if uses else []
    lines += _live_lines(dict(sorted(state.live.items())))
    if not uses:
        return lines
    written = sorted({u.path for u in uses if u.written})
    if written:
        lines.append(f"written ({len(written)}), review and commit:")
        lines.extend(f"  {path}" for path in written)
    blocked = sorted({u.path for u in uses if u.blocked_write})
    if blocked:
        lines.append(f"not written because of --cassette-strict ({len(blocked)}):")
        lines.extend(f"  {path}" for path in blocked)
    if verbose and any(unused.values()):
        lines.append("never played in this run (chaincassette prune removes them):")
        lines.extend(f"  {path}: {n}" for path, n in sorted(unused.items()) if n)
    return lines


def _live_lines(live: dict[str, int]) -> list[str]:
    """Tests whose model calls went live outside every cassette, not recorded → calls."""
    if not live:
        return []
    lines = [
        f"not recorded: {counted(sum(live.values()), 'model call')} went live outside every "
        f"cassette in {counted(len(live), 'test')}; give each the `cassette` fixture (or "
        "@pytest.mark.cassette), then record it:"
    ]
    named = list(live.items())
    lines.extend(f"  {nodeid} ({counted(n, 'call')})" for nodeid, n in named[:MAX_LIVE_TESTS])
    if len(named) > MAX_LIVE_TESTS:
        lines.append(f"  … and {counted(len(named) - MAX_LIVE_TESTS, 'more test')}")
    return lines


def _totals(uses: list[CassetteUse], unused: int) -> str:
    unknown = sum(u.tokens_unknown for u in uses)  # the provider reported none: not 0 tokens
    note = f" (+ {counted(unknown, 'model call')} of unknown usage)" if unknown else ""
    return (
        f"{counted(len({u.path for u in uses}), 'cassette')} used by "
        f"{counted(len({u.nodeid for u in uses}), 'test')}: "
        f"{sum(u.replayed for u in uses):,} replayed, {sum(u.recorded for u in uses):,} "
        f"recorded, {sum(u.missed for u in uses):,} missed, {unused:,} unused interactions; "
        f"{sum(u.tokens_replayed for u in uses):,} tokens not spent thanks to replay{note}"
    )
