"""Building the ``CassetteMiss`` message: what was asked, what is closest, what changed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .diff import diff_requests, short, similarity
from .errors import CassetteMiss
from .modes import MODE_ENV_VAR, RecordMode, current_policy

MAX_DIFF_LINES = 12


def describe(request: dict[str, Any]) -> str:
    """A short, one-line description of a request."""
    parts = [str(request.get("kind", "request"))]
    for field in ("model", "function", "tool"):
        if request.get(field):
            parts.append(str(request[field]))
    messages = request.get("messages")
    if isinstance(messages, list):
        parts.append(f"{len(messages)} message{'s' if len(messages) != 1 else ''}")
        last = next(
            (
                m
                for m in reversed(messages)
                if isinstance(m, dict) and m.get("role") in ("user", "human")
            ),
            None,
        )
        if last is not None:
            parts.append(f"last user message {short(last.get('content'), 60)}")
    elif "prompt" in request:
        parts.append(f"prompt {short(request['prompt'], 60)}")
    elif "args" in request:
        parts.append(f"args {short(request['args'], 60)}")
    return " · ".join(parts)


def rerecord_hint(path: Path, *, missing: bool = False) -> str:
    """How to record what is missing, in the words of the context the program runs in."""
    mode = "once" if missing else "new_episodes"
    policy = current_policy()
    if policy.rerecord_hint:
        return policy.rerecord_hint.format(path=path, name=path.name, mode=mode)
    refused = (
        f" (recording is refused now: {policy.refuse_recording})" if policy.refuse_recording else ""
    )
    rewrite = "" if missing else f"; =record re-records {path.name} from scratch"
    return (
        f"to record it: set {MODE_ENV_VAR}={mode}{rewrite}, "
        f"or under pytest pass --cassette-mode={mode}{refused}"
    )


def missing_file(path: Path, mode: RecordMode, request: dict[str, Any], key: str) -> CassetteMiss:
    message = (
        f"cassette file {path} does not exist, and mode {mode.value!r} never calls the live model.\n"
        f"  requested: {describe(request)}\n"
        f"  {rerecord_hint(path, missing=True)}"
    )
    return CassetteMiss(message, path=path, mode=mode.value, request=request, key=key)


def exhausted(
    path: Path, mode: RecordMode, request: dict[str, Any], key: str, played: int
) -> CassetteMiss:
    times = "time" if played == 1 else "times"
    message = (
        f"no recording left for this request in {path} (mode {mode.value!r}): it was recorded "
        f"{played} {times} and has already been played {played} {times} in this run.\n"
        f"  requested: {describe(request)} · key {key[:12]}\n"
        "  the program now asks the same thing more often than when it was recorded; pass "
        "allow_playback_repeats=True to replay the last answer again, or re-record.\n"
        f"  {rerecord_hint(path)}"
    )
    return CassetteMiss(
        message,
        path=path,
        mode=mode.value,
        request=request,
        key=key,
        nearest=request,
        played=played,
    )


def no_match(
    path: Path,
    mode: RecordMode,
    request: dict[str, Any],
    key: str,
    recorded: Sequence[tuple[int, dict[str, Any], dict[str, Any]]],
) -> CassetteMiss:
    """``recorded`` holds (index, stored request, meta) of every interaction in the cassette."""
    lines = [
        f"no recording matches this request in {path} (mode {mode.value!r}, "
        f"{len(recorded)} recorded interaction{'s' if len(recorded) != 1 else ''}).",
        f"  requested: {describe(request)} · key {key[:12]}",
    ]
    nearest: dict[str, Any] | None = None
    diff: list[str] = []
    if recorded:
        index, nearest, meta = max(recorded, key=lambda item: similarity(item[1], request))
        made_by = f", made by {meta['agent']!r}" if meta.get("agent") else ""
        lines.append(f"  nearest recorded: interaction {index} ({describe(nearest)}{made_by})")
        diff = diff_requests(nearest, request)
        if diff:
            lines.append("  what differs (recorded → requested):")
            lines.extend(f"    - {d}" for d in diff[:MAX_DIFF_LINES])
            if len(diff) > MAX_DIFF_LINES:
                lines.append(f"    … and {len(diff) - MAX_DIFF_LINES} more")
        else:
            lines.append(
                "  the stored request looks identical but its key differs: the cassette was "
                "probably edited by hand (or a redacted value differs); re-record it"
            )
    lines.append(f"  {rerecord_hint(path)}")
    return CassetteMiss(
        "\n".join(lines),
        path=path,
        mode=mode.value,
        request=request,
        key=key,
        nearest=nearest,
        diff=diff,
    )
