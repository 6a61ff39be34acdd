"""Building the ``CassetteMiss`` message: what was asked, what is closest, what changed."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from . import keyrules, media
from .canonical import fresh_copy
from .diff import diff_requests, short, similarity
from .errors import CassetteMiss
from .keyrules import key_view, tool_name, tools_order_only
from .modes import MODE_ENV_VAR, RecordMode, current_policy

MAX_DIFF_LINES = 12


def describe(request: dict[str, Any]) -> str:
    """A short, one-line description of a request."""
    parts = [str(request.get("kind", "request"))]
    for field in ("model", "function", "tool", "path"):
        if request.get(field):
            parts.append(str(request[field]))
    messages = request.get("messages")
    if isinstance(messages, list):
        parts.append(f"{len(messages)} message{'s' if len(messages) != 1 else ''}")
        users = [m for m in messages if isinstance(m, dict) and m.get("role") in ("user", "human")]
        if users:
            parts.append(f"last user message {short(users[-1].get('content'), 60)}")
    elif "prompt" in request:
        parts.append(f"prompt {short(request['prompt'], 60)}")
    elif "args" in request:
        parts.append(f"args {short(request['args'], 60)}")
    return " · ".join(parts)


def command(path: Path, mode: str, argument: RecordMode | None = None) -> str:
    """The command that runs the program again in ``mode``, phrased for its runner.
    ``argument`` is the mode the program passed (``mode=``): it beats ``CHAINCASSETTE_MODE``,
    so then the advice is to change the argument."""
    rerecord = current_policy().rerecord_command
    if callable(rerecord):
        return rerecord(mode)
    if rerecord:
        return rerecord.format(path=path, name=path.name, mode=mode)
    if argument is not None:
        return (
            f"pass mode={mode!r} to the cassette (in place of its mode={argument.value!r}, "
            f"which wins over {MODE_ENV_VAR})"
        )
    return f"run it again with {MODE_ENV_VAR}={mode} (or pass mode={mode!r} to the cassette)"


def option(text: str, opened_by: str = "use_cassette") -> str:
    """How to pass the cassette option ``text`` (``replay_tools=True``) in this context:
    a runner's own spelling, else to the call that took the path (``opened_by``)."""
    syntax = current_policy().option_syntax or f"{opened_by}(..., {{option}})"
    return syntax.format(option=text)


def _refused() -> str:
    """Why the plain advice would not record now; a runner's own command already overrides it."""
    policy = current_policy()
    if not policy.refuse_recording or policy.rerecord_command:
        return ""
    return f" (recording is refused now: {policy.refuse_recording})"


# -- why a request missed, and the hint that fixes that cause ---------------------------------

CHANGED = "changed"
"""The program's own prompt or code changed: re-record this cassette."""
TOOL_RESULT = "tool_result"
"""Only a tool result differs: replay the tools too (``replay_tools=True``)."""
PARAMETER = "parameter"
"""Only sampling parameters differ: name them."""
NEW_CALL = "new_call"
"""A call the recording never had (extends a recorded conversation, or nothing alike)."""
TOOLS_NOT_RECORDED = "tools_not_recorded"
"""Tools are replayed (``replay_tools=True``) but the cassette was recorded without them."""
HAND_EDITED = "hand_edited"
"""The stored request reads the same but its key differs."""
REKEYED = "rekeyed"
"""The stored key was made by older key rules (it keyed what the rules now leave out)."""

_CALL_FIELDS = ("kind", "model", "function", "tool", "tools", "tool_choice", "response_format")


def _messages(request: dict[str, Any]) -> list[Any]:
    messages = request.get("messages")
    return messages if isinstance(messages, list) else []


def _is_tool_message(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") in ("tool", "function")


def classify(
    nearest: dict[str, Any] | None, request: dict[str, Any], *, nearest_played: bool = False
) -> tuple[str, list[str]]:
    """(cause, details) of a miss, from the nearest recording and the request;
    ``nearest_played``: this run replayed it already, so this request is a new call."""
    if nearest is None or nearest.get("kind") != request.get("kind"):
        return NEW_CALL, []
    old, new = _messages(nearest), _messages(request)
    same_call = _same_call(nearest, request)
    same_params = nearest.get("params") == request.get("params")
    if same_call and same_params:
        found = _same_settings(old, new)
        if found is not None:
            return found
    if nearest_played:
        return NEW_CALL, []
    if same_call and old == new and not same_params:
        return PARAMETER, _differing_params(nearest, request)
    return CHANGED, []


def _same_call(nearest: dict[str, Any], request: dict[str, Any]) -> bool:
    """Every field but the messages and the parameters is the recorded one."""
    fields = (set(nearest) | set(request)) - {"messages", "params"}
    return all(nearest.get(f) == request.get(f) for f in [*_CALL_FIELDS, *sorted(fields)])


def _same_settings(old: list[Any], new: list[Any]) -> tuple[str, list[str]] | None:
    """The cause when only the messages differ: a later turn, or only tool results."""
    if len(new) > len(old) and new[: len(old)] == old:
        return NEW_CALL, []  # the recorded conversation, one or more turns further
    if len(old) != len(new):
        return None
    differing = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    if differing and all(_is_tool_message(old[i]) and _is_tool_message(new[i]) for i in differing):
        return TOOL_RESULT, [f"messages[{i}] (tool)" for i in differing]
    return None


def _differing_params(nearest: dict[str, Any], request: dict[str, Any]) -> list[str]:
    old: dict[str, Any] = nearest.get("params") or {}
    new: dict[str, Any] = request.get("params") or {}
    names = sorted(n for n in set(old) | set(new) if old.get(n) != new.get(n))
    return [f"params.{n}" for n in names]


def cause_hint(
    path: Path,
    cause: str,
    details: Sequence[str] = (),
    argument: RecordMode | None = None,
    opened_by: str = "use_cassette",
) -> str:
    """The advice that fixes ``cause``, in the words of the runner the program is under
    (``argument``: the mode the program passed, see ``command``)."""
    refused = _refused()
    rerecord = command(path, "record", argument)
    if cause == TOOL_RESULT:
        return (
            f"only a tool result differs ({', '.join(details)}): a tool whose result changes "
            "from run to run (the time, a random id, a live API) never matches a recording; "
            f"record and replay the tools' results too: {option('replay_tools=True', opened_by)}, then "
            f"re-record once: {rerecord}{refused}"
        )
    if cause == TOOLS_NOT_RECORDED:
        return (
            "tools are replayed (replay_tools=True) but this cassette was recorded without their "
            f"results; re-record it once with replay_tools=True: {rerecord}{refused}"
        )
    if cause == PARAMETER:
        names = ", ".join(details)
        ignore = ", ".join(repr(d) for d in details)
        return (
            f"only the sampling parameter{'s' if len(details) != 1 else ''} {names} "
            f"differ{'' if len(details) != 1 else 's'}: if the change is intended, re-record "
            f"this cassette: {rerecord}{refused}; if the value varies from run to run, leave it "
            f"out of the key: {option(f'ignore=[{ignore}]', opened_by)}"
        )
    if cause == NEW_CALL:
        return (
            "the program makes a call the recording does not have; to add it and keep what "
            f"matches: {command(path, 'new_episodes', argument)}{refused}"
        )
    if cause == REKEYED:
        changed = f" ({', '.join(details)})" if details else ""
        return (
            f"the key rules changed since this recording was made{changed}, not the program "
            f"and not the file; re-record this cassette with this version's key rules: "
            f"{rerecord}{refused}"
        )
    if cause == HAND_EDITED:
        return (
            "the stored request looks identical but its key differs: the cassette was "
            "probably edited by hand (or a redacted value differs); re-record this cassette: "
            f"{rerecord}{refused}"
        )
    return (
        "the program's own requests changed (a prompt, a tool schema, the model or the code "
        "that builds them); re-record this cassette so it holds only the new calls (keeping "
        f"the old ones would leave them unused): {rerecord}{refused}"
    )


def missing_file(
    path: Path,
    mode: RecordMode,
    request: dict[str, Any],
    key: str,
    *,
    argument: RecordMode | None = None,
) -> CassetteMiss:
    message = (
        f"cassette file {path} does not exist, and mode {mode.value!r} never calls the live model.\n"
        f"  requested: {describe(request)}\n"
        f"  hint: to record it: {command(path, 'once', argument)}{_refused()}"
    )
    return CassetteMiss(
        message, path=path, mode=mode.value, request=request, key=key, cause="missing"
    )


def not_cancelled(
    path: Path,
    mode: RecordMode,
    request: dict[str, Any],
    key: str,
    duration_ms: float,
    waited: float | None,
    *,
    argument: RecordMode | None = None,
) -> CassetteMiss:
    """A call recorded as cancelled by the program that nothing cancelled in this run
    (``waited``: how long it waited, s; ``None``: a sync call, which cannot be cancelled)."""
    now = (
        "a sync call cannot be cancelled, so it is not replayed"
        if waited is None
        else f"nothing cancelled it in this replay (it waited {waited:.1f} s)"
    )
    message = (
        f"cassette {path}: this call was cancelled by the program after {duration_ms:.0f} ms "
        f"when it was recorded, and {now} (mode {mode.value!r}).\n"
        f"  requested: {describe(request)} · key {key[:12]}\n"
        "  the program's own timeout (asyncio.wait_for, asyncio.timeout, a TaskGroup, "
        "LangGraph's step_timeout) no longer fires where it did: if it no longer cancels this "
        f"call, re-record the cassette: {command(path, 'record', argument)}{_refused()}"
    )
    return CassetteMiss(
        message, path=path, mode=mode.value, request=request, key=key, cause="not_cancelled"
    )


def exhausted(
    path: Path,
    mode: RecordMode,
    request: dict[str, Any],
    key: str,
    played: int,
    *,
    argument: RecordMode | None = None,
    opened_by: str = "use_cassette",
) -> CassetteMiss:
    times = "time" if played == 1 else "times"
    message = (
        f"no recording left for this request in {path} (mode {mode.value!r}): it was recorded "
        f"{played} {times} and has already been played {played} {times} in this run.\n"
        f"  requested: {describe(request)} · key {key[:12]}\n"
        "  the program now asks the same thing more often than when it was recorded: to replay "
        f"the last answer again, {option('allow_playback_repeats=True', opened_by)}; to record the extra "
        f"call{'s' if played != 1 else ''}: {command(path, 'new_episodes', argument)}{_refused()}"
    )
    return CassetteMiss(
        message,
        path=path,
        mode=mode.value,
        request=request,
        key=key,
        nearest=fresh_copy(request),
        played=played,
        cause="exhausted",
    )


def no_match(
    path: Path,
    mode: RecordMode,
    request: dict[str, Any],
    key: str,
    recorded: Sequence[tuple[int, dict[str, Any], dict[str, Any]]],
    played: Collection[int] = (),
    *,
    under: Callable[[int], dict[str, Any]] | None = None,
    argument: RecordMode | None = None,
    opened_by: str = "use_cassette",
) -> CassetteMiss:
    """``recorded``: (index, stored request, meta) of every interaction; ``played``: the
    indexes this run replayed; ``under``: the request as older key rules normalize it;
    ``argument``: the mode the program passed (see ``command``); ``opened_by``: see
    ``option``."""
    lines = [
        f"no recording matches this request in {path} (mode {mode.value!r}, "
        f"{len(recorded)} recorded interaction{'s' if len(recorded) != 1 else ''}).",
        f"  requested: {describe(request)} · key {key[:12]}",
    ]
    nearest: dict[str, Any] | None = None
    diff: list[str] = []
    cause, details = NEW_CALL, list[str]()
    if recorded:
        index, nearest, meta = max(recorded, key=lambda item: similarity(item[1], request))
        made_by = f", made by {meta['agent']!r}" if meta.get("agent") else ""
        lines.append(f"  nearest recorded: interaction {index} ({describe(nearest)}{made_by})")
        rules = _rules_of(meta)
        asked = (
            under(rules) if under is not None and rules != keyrules.KEY_RULES_VERSION else request
        )
        # compare what the keys are made of: a fresh signature or item id is no difference
        diff = diff_requests(key_view(nearest, rules), key_view(asked, rules))
        lines.extend(_rules_lines(rules, bool(diff)))
        lines.extend(_path_lines(rules, nearest, bool(diff)))
        if diff:
            lines.append("  what differs (recorded → requested):")
            lines.extend(f"    - {d}" for d in diff[:MAX_DIFF_LINES])
            if len(diff) > MAX_DIFF_LINES:
                lines.append(f"    … and {len(diff) - MAX_DIFF_LINES} more")
            cause, details = classify(nearest, asked, nearest_played=index in played)
        else:
            cause, details = _same_view_cause(nearest, asked, rules, lines)
        if request.get("kind") == "tool" and all(r.get("kind") != "tool" for _, r, _ in recorded):
            cause, details = TOOLS_NOT_RECORDED, []
    lines.append(f"  hint: {cause_hint(path, cause, details, argument, opened_by)}")
    return CassetteMiss(
        "\n".join(lines),
        path=path,
        mode=mode.value,
        request=request,
        key=key,
        nearest=fresh_copy(nearest),  # the cassette's own record: the error holds a copy
        diff=diff,
        cause=cause,
    )


def _rules_of(meta: dict[str, Any]) -> int:
    """The key rules a recording was keyed by, when this chaincassette applies them."""
    rules = meta.get("key_rules", keyrules.KEY_RULES_VERSION)
    try:
        return keyrules.check_rules(rules) if isinstance(rules, int) else keyrules.KEY_RULES_VERSION
    except ValueError:
        return keyrules.KEY_RULES_VERSION


def _rules_lines(rules: int, differs: bool) -> list[str]:
    """Say that the nearest recording was keyed by older rules, and how it is compared."""
    current = keyrules.KEY_RULES_VERSION
    if rules == current:
        return []
    if differs:
        return [
            f"  that recording was keyed by key rules {rules} (this chaincassette keys by key "
            f"rules {current}); it is compared as key rules {rules} read this request"
        ]
    changes = "; ".join(keyrules.RULE_CHANGES[v] for v in range(rules + 1, current + 1))
    return [
        f"  it reads the same by key rules {rules}, which keyed it, but its stored key is not "
        f"what key rules {rules} make of this request: the key rules changed since it was "
        f"recorded (key rules {rules} → {current}: {changes})"
    ]


def _path_lines(rules: int, nearest: dict[str, Any], differs: bool) -> list[str]:
    """A recording keyed by rules before 3 keyed a local file by its path, and stored no hash
    of its bytes: at another path (a new ``tmp_path``) it misses until it is recorded again."""
    paths = media.files_by_path(nearest.get("messages")) if differs and rules < 3 else []
    if not paths:
        return []
    return [
        f"  key rules {rules} keyed the local file {short(paths[0], 60)} by its path, so the "
        "same file elsewhere misses; key rules 3 key it by its bytes: re-record this call"
    ]


def _same_view_cause(
    nearest: dict[str, Any], request: dict[str, Any], rules: int, lines: list[str]
) -> tuple[str, list[str]]:
    """The cause of a miss whose nearest recording reads the same as the request."""
    if rules != keyrules.KEY_RULES_VERSION:
        return REKEYED, [f"key rules {rules} → {keyrules.KEY_RULES_VERSION}"]
    explained = _same_key_view(nearest, request)
    lines.extend(explained)
    return (REKEYED if explained else HAND_EDITED), []


def _same_key_view(nearest: dict[str, Any], request: dict[str, Any]) -> list[str]:
    """Why a stored request whose key view equals the requested one still missed: an older
    chaincassette keyed what the rules now leave out, or a hand edit (said if it shows)."""
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
    return []  # identical: the hint says what that means


def _names(tools: Any) -> str:
    return "[" + ", ".join(str(tool_name(t)) for t in tools) + "]"
