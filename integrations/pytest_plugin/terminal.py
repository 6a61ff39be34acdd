"""How the summary reads in a terminal and a CI log. Formatting only; numbers come from ``report``."""

from __future__ import annotations

from .report import Summary


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _unknown(summary: Summary) -> str:
    """The replayed calls whose usage the provider never reported: unknown, not 0 tokens."""
    count = summary.tokens_unknown
    if not count:
        return ""
    return f" (+ {_plural(count, 'model call')} of unknown usage)"


#: Tests named under "not recorded" at the most.
MAX_LIVE_TESTS = 10


def summary_lines(summary: Summary, *, verbose: bool = False) -> list[str]:
    """Lines for pytest's terminal summary; nothing when no test used a cassette or called a
    model outside one."""
    lines = [] if summary.empty else [_totals(summary)]
    if summary.live:
        calls = sum(summary.live.values())
        lines.append(
            f"not recorded: {_plural(calls, 'model call')} went live outside every cassette "
            f"in {_plural(len(summary.live), 'test')}; give each the `cassette` fixture (or "
            "@pytest.mark.cassette), then record it:"
        )
        named = list(summary.live.items())
        lines.extend(f"  {nodeid} ({_plural(n, 'call')})" for nodeid, n in named[:MAX_LIVE_TESTS])
        if len(named) > MAX_LIVE_TESTS:
            lines.append(f"  … and {_plural(len(named) - MAX_LIVE_TESTS, 'more test')}")
    if summary.empty:
        return lines
    if summary.written:
        lines.append(f"written ({len(summary.written)}), review and commit:")
        lines.extend(f"  {path}" for path in summary.written)
    if summary.blocked:
        lines.append(f"not written because of --cassette-strict ({len(summary.blocked)}):")
        lines.extend(f"  {path}" for path in summary.blocked)
    if summary.unused_by_cassette and verbose:
        lines.append("never played in this run (chaincassette prune removes them):")
        lines.extend(f"  {path}: {n}" for path, n in sorted(summary.unused_by_cassette.items()))
    return lines


def _totals(summary: Summary) -> str:
    return (
        f"{_plural(summary.cassettes, 'cassette')} used by {_plural(summary.tests, 'test')}: "
        f"{summary.replayed:,} replayed, {summary.recorded:,} recorded, "
        f"{summary.missed:,} missed, {summary.unused:,} unused interactions; "
        f"{summary.tokens_not_spent:,} tokens not spent thanks to replay{_unknown(summary)}"
    )
