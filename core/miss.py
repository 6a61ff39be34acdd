"""Building the ``CassetteMiss`` message: what was asked, what is closest, what changed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .diff import diff_requests, short, similarity
from .errors import CassetteMiss
from .keyrules import key_view, tool_name, tools_order_only
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
        # compare what the keys are made of: a fresh signature or item id is no difference
        diff = diff_requests(key_view(nearest), key_view(request))
        if diff:
            lines.append("  what differs (recorded → requested):")
            lines.extend(f"    - {d}" for d in diff[:MAX_DIFF_LINES])
            if len(diff) > MAX_DIFF_LINES:
                lines.append(f"    … and {len(diff) - MAX_DIFF_LINES} more")
        else:
            lines.extend(_same_key_view(nearest, request))
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


def _same_key_view(nearest: dict[str, Any], request: dict[str, Any]) -> list[str]:
    """Why a stored request whose key view equals the requested one still missed.

    Its stored key was not made from it by today's rules: an older chaincassette keyed
    something the rules now leave out (the order of tool schemas, a signature…), or the
    file was edited by hand. Say which, when the stored fields show it.
    """
    if tools_order_only(nearest.get("tools"), request.get("tools")):
        return [
            "  the only difference is the order of the tool schemas "
            f"({_names(nearest['tools'])} → {_names(request['tools'])}); keys no longer depend "
            "on it, but this recording's key was made by an older chaincassette that keyed "
            "tool order: re-record it"
        ]
    outside = diff_requests(nearest, request)
    if outside:
        shown = "; ".join(outside[:3]) + (" …" if len(outside) > 3 else "")
        return [
            f"  it differs only in fields the key leaves out ({shown}); its stored key was made "
            "by an older chaincassette that keyed them, or by hand: re-record it"
        ]
    return [
        "  the stored request looks identical but its key differs: the cassette was "
        "probably edited by hand (or a redacted value differs); re-record it"
    ]


def _names(tools: Any) -> str:
    return "[" + ", ".join(str(tool_name(t)) for t in tools) + "]"
