"""The normalization pipeline: what a request keeps before it is hashed into a key.

Each step is a pure function from a JSON-able request to a new one, so users can add their
own. The defaults remove what changes between two live runs without changing the answer:
provider IDs, timestamps, usage, memory addresses and credentials.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .keyrules import PIPELINE_FIELDS, check_rules
from .redact import DEFAULT_SECRET_PATTERNS, SEMANTIC_FIELDS, is_secret_name, might_hold_secret

Request = dict[str, Any]
Normalizer = Callable[[Request], Request]
Clean = Callable[[str], str]

#: Field names whose value is a tool-call ID wherever they occur.
TOOL_CALL_ID_FIELDS = frozenset({"tool_call_id", "tool_use_id", "call_id"})
#: Containers whose items carry their tool-call ID in ``id``.
TOOL_CALL_LISTS = frozenset({"tool_calls", "invalid_tool_calls", "tool_call_chunks"})
#: Content-block types whose ``id`` is a tool-call ID.
TOOL_CALL_BLOCK_TYPES = frozenset(
    {"tool_call", "tool_use", "server_tool_use", "function_call", "tool_call_chunk", "function"}
)
#: Per-message fields that differ between runs and never change the answer.
VOLATILE_MESSAGE_FIELDS = frozenset(
    {
        "id",
        "run_id",
        "response_metadata",
        "usage_metadata",
        "usage",
        "created",
        "created_at",
        "timestamp",
        "system_fingerprint",
        "logprobs",
    }
)
#: Request field: ``False`` when the provider matches tool results to calls by position
#: (Gemini, Ollama), so ``order_tool_results`` keeps their order; not keyed (``keyrules``).
TOOL_RESULT_IDS = "tool_result_ids"
#: Request-level fields that only identify a run.
VOLATILE_REQUEST_FIELDS = frozenset({"run_id", "parent_run_id", "request_id", "trace_id"})

_ADDRESS = re.compile(r"(<[^<>]*) at 0x[0-9A-Fa-f]+>")
_SECRET_VALUE = re.compile("|".join(f"(?:{p})" for p in DEFAULT_SECRET_PATTERNS.values()))


def _map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, dict):
        return {k: _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    if isinstance(value, str):
        return fn(value)
    return value


def drop_secrets(request: Request) -> Request:
    """Remove secret-named fields and mask credential-shaped strings: another API key never
    misses. Names are judged only outside what the model reads (a tool may take ``token``)."""
    result: Request = _mask_secrets(request, True, _SECRET_VALUE, might_hold_secret)
    return result


def secret_dropper(extra_patterns: Iterable[str]) -> Normalizer:
    """``drop_secrets`` that also masks the user's own secret patterns."""
    patterns = [*DEFAULT_SECRET_PATTERNS.values(), *extra_patterns]
    combined = re.compile("|".join(f"(?:{p})" for p in patterns))

    def drop_secrets_and_user_patterns(request: Request) -> Request:
        result: Request = _mask_secrets(request, True, combined, lambda text: True)
        return result

    return drop_secrets_and_user_patterns


def _mask_secrets(
    value: Any, check_names: bool, secret_value: re.Pattern[str], maybe: Callable[[str], bool]
) -> Any:
    if isinstance(value, dict):
        return {
            k: _mask_secrets(v, check_names and k not in SEMANTIC_FIELDS, secret_value, maybe)
            for k, v in value.items()
            if not (check_names and is_secret_name(str(k)))
        }
    if isinstance(value, list):
        return [_mask_secrets(v, check_names, secret_value, maybe) for v in value]
    if isinstance(value, str):
        return _masked(value, secret_value, maybe)
    return value


def _masked(text: str, secret_value: re.Pattern[str], maybe: Callable[[str], bool]) -> str:
    if maybe(text) and secret_value.search(text):
        return secret_value.sub("<secret>", text)
    return text


def drop_volatile_fields(request: Request) -> Request:
    """Drop run IDs and, in messages, IDs, response metadata, usage and timestamps: an
    earlier answer carried into the next request must not change its key (providers stamp
    each answer anew, and LangChain adds ``usage_metadata.total_cost`` on every cache hit)."""
    result = {k: v for k, v in request.items() if k not in VOLATILE_REQUEST_FIELDS}
    messages = result.get("messages")
    if isinstance(messages, list):
        result["messages"] = [_without_volatile(m) for m in messages]
    return result


def _without_volatile(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    return {k: v for k, v in message.items() if k not in VOLATILE_MESSAGE_FIELDS}


def strip_memory_addresses(request: Request) -> Request:
    """Remove ``0x…`` addresses that object reprs leak into parameters (per process)."""
    result: Request = _map_strings(request, _without_address)
    return result


def _without_address(text: str) -> str:
    return _ADDRESS.sub(r"\1>", text) if "0x" in text else text


def alias_tool_call_ids(request: Request) -> Request:
    """Rename tool-call IDs to ``call_1``, ``call_2``… in order of first appearance (dict
    keys visited sorted), the same ID the same way wherever it occurs, as a key too (Gemini
    maps call IDs to thought signatures)."""
    aliaser = ToolCallAliaser()
    result: Request = aliaser.walk(request)
    if aliaser.renames_keys():
        result = aliaser.rename_keys(result)
    return result


class ToolCallAliaser:
    """The state of ``alias_tool_call_ids`` part way through a request: ``request_keys``
    resumes a conversation from the state its earlier prefix reached."""

    __slots__ = ("aliases", "keys")

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        #: every mapping key met: an ID used as one is renamed by ``rename_keys``
        self.keys: set[Any] = set()

    def copy(self) -> ToolCallAliaser:
        twin = ToolCallAliaser()
        twin.aliases = dict(self.aliases)
        twin.keys = set(self.keys)
        return twin

    def alias(self, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            return value
        aliases = self.aliases
        if value not in aliases:
            aliases[value] = f"call_{len(aliases) + 1}"
        return aliases[value]

    def walk(self, value: Any, id_is_tool_call: bool = False, clean: Clean | None = None) -> Any:
        """``value`` with its tool-call IDs aliased; ``clean`` (when given) rewrites every
        string first, as the steps before aliasing would have (``default_message_steps``)."""
        if isinstance(value, dict):
            self.keys.update(value)
            kind = value.get("type")
            if clean is not None and isinstance(kind, str):
                kind = clean(kind)
            is_call = id_is_tool_call or (isinstance(kind, str) and kind in TOOL_CALL_BLOCK_TYPES)
            return {k: self.field(k, value[k], is_call, clean) for k in sorted(value)}
        if isinstance(value, list):
            return [self.walk(v, False, clean) for v in value]
        if clean is not None and isinstance(value, str):
            return clean(value)
        return value

    def field(self, name: Any, value: Any, is_call: bool, clean: Clean | None = None) -> Any:
        """One field of a mapping (``is_call``: the mapping is a tool call or call block)."""
        if name in TOOL_CALL_ID_FIELDS or (name == "id" and is_call):
            return self.alias(value if clean is None else _map_strings(value, clean))
        if isinstance(value, str):  # ``walk`` of a string, without the call (most fields)
            return value if clean is None else clean(value)
        if name in TOOL_CALL_LISTS and isinstance(value, list):
            return [self.walk(item, True, clean) for item in value]
        return self.walk(value, False, clean)

    def renames_keys(self) -> bool:
        return not self.keys.isdisjoint(self.aliases)

    def rename_keys(self, value: Any) -> Any:
        aliases = self.aliases
        if isinstance(value, dict):
            return {aliases.get(k, k): self.rename_keys(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.rename_keys(v) for v in value]
        return value


def order_tool_results(request: Request, rules: int | None = None) -> Request:
    """Sort each run of consecutive tool results by the call they answer (parallel tools
    finish in any order), unless the provider or model reads them by position (rules 2)."""
    messages = request.get("messages")
    if not isinstance(messages, list):
        return request
    positional = request.get(TOOL_RESULT_IDS) is False
    ordered = tool_results_ordered(messages, positional=positional, rules=rules)
    return {**request, "messages": ordered}


def order_tool_results_by_rules_1(request: Request) -> Request:
    """``order_tool_results`` as key rules 1 did it: every run sorted."""
    return order_tool_results(request, rules=1)


def is_tool_result(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "tool"


def tool_results_ordered(
    messages: list[Any], *, positional: bool = False, rules: int | None = None
) -> list[Any]:
    """``messages`` with each run of consecutive tool results sorted by the call answered
    (``positional``: nothing moves), by key rules ``rules`` (default: this version's)."""
    rules = check_rules(rules)
    keep = positional and rules >= 2
    ordered: list[Any] = []
    run: list[dict[str, Any]] = []
    for message in [*messages, None]:
        if message is not None and is_tool_result(message):
            run.append(message)
            continue
        ordered.extend(run if keep else _ordered_run(run, rules))
        run = []
        if message is not None:
            ordered.append(message)
    return ordered


def _ordered_run(run: list[dict[str, Any]], rules: int) -> list[dict[str, Any]]:
    if rules >= 2 and not all(m.get("tool_call_id") for m in run):
        return run  # a result that names no call: the model reads them by position
    return sorted(run, key=_answered_call)


def _answered_call(message: dict[str, Any]) -> tuple[int, str]:
    call_id = str(message.get("tool_call_id") or "")
    number = call_id.rsplit("_", 1)[-1]
    return (int(number) if number.isdigit() else 1 << 30, call_id)


def ignore_paths(paths: Iterable[str]) -> Normalizer:
    """A normalizer removing dotted paths; ``*`` matches any key or list index.

    ``ignore=["params.seed", "messages.*.name"]`` drops a parameter and every
    message's ``name``.
    """
    split = [p.split(".") for p in paths if p]

    def remove(value: Any, parts: Sequence[str]) -> Any:
        head, rest = parts[0], parts[1:]
        if isinstance(value, dict):
            return {
                k: remove(v, rest) if head in ("*", k) else v
                for k, v in value.items()
                if rest or head not in ("*", k)
            }
        if isinstance(value, list):
            return [
                remove(v, rest) if rest and head in ("*", str(i)) else v
                for i, v in enumerate(value)
                if rest or head not in ("*", str(i))
            ]
        return value

    def normalizer(request: Request) -> Request:
        for parts in split:
            request = remove(request, parts)
        return request

    return normalizer


DEFAULT_PIPELINE: tuple[Normalizer, ...] = (
    drop_secrets,
    drop_volatile_fields,
    strip_memory_addresses,
    alias_tool_call_ids,
    order_tool_results,
)


def default_message_steps(message: Any, aliaser: ToolCallAliaser) -> Any:
    """What ``DEFAULT_PIPELINE`` does to one item of ``messages``, given the aliasing state
    the items before it left (``order_tool_results`` aside).

    Inside ``messages`` the first four default steps map items one by one, so one walk does
    them all, cleaning strings before the aliaser reads them
    (``tests/core/test_request_keys.py`` holds it to the four steps).
    """
    return aliaser.walk(_without_volatile(message), clean=_cleaned)


def _cleaned(text: str) -> str:
    """A string after ``drop_secrets`` (value masking) and ``strip_memory_addresses``."""
    return _without_address(_masked(text, _SECRET_VALUE, might_hold_secret))


def build_pipeline(
    normalizers: Iterable[Normalizer] = (),
    ignore: Iterable[str] = (),
    secret_patterns: Iterable[str] = (),
    rules: int | None = None,
) -> tuple[Normalizer, ...]:
    """The default steps of key rules ``rules`` (masking ``secret_patterns`` too), then
    ``ignore`` paths, then the user's own normalizers."""
    ignore, secret_patterns = tuple(ignore), tuple(secret_patterns)
    steps = list(DEFAULT_PIPELINE) if check_rules(rules) >= 2 else list(_RULES_1_PIPELINE)
    if secret_patterns:
        steps[steps.index(drop_secrets)] = secret_dropper(secret_patterns)
    if ignore:
        steps.append(ignore_paths(ignore))
    steps.extend(normalizers)
    return tuple(steps)


def without_pipeline_fields(request: Request) -> Request:
    """``request`` without the fields later rules added to steer the pipeline (rules 1 never
    met them)."""
    if PIPELINE_FIELDS.keys().isdisjoint(request):
        return request
    return {k: v for k, v in request.items() if k not in PIPELINE_FIELDS}


#: The default steps as rules 1 ran them, on the request as it was built then.
_RULES_1_PIPELINE = (without_pipeline_fields, *DEFAULT_PIPELINE[:-1], order_tool_results_by_rules_1)


def normalize(request: Request, pipeline: Iterable[Normalizer] = DEFAULT_PIPELINE) -> Request:
    """Run ``request`` through every step of ``pipeline``."""
    if not isinstance(request, dict):
        raise TypeError(f"a request must be a dict, got {type(request).__name__}")
    for step in pipeline:
        request = step(request)
        if not isinstance(request, dict):
            name = getattr(step, "__name__", repr(step))
            raise TypeError(f"normalizer {name} returned {type(request).__name__}, not a dict")
    return request
