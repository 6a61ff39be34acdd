"""The normalization pipeline: what a request keeps before it is hashed into a key.

Each step is a small pure function from a JSON-able request to a new one, so each
can be tested alone and users can add their own. The defaults remove everything that
changes between two live runs of the same program without changing the model's
answer: provider IDs, timestamps, usage, memory addresses and credentials.
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
#: Request field: ``False`` when the provider sends tool results without the ids of the calls
#: they answer and matches them by position (Gemini, Ollama); ``order_tool_results`` then
#: keeps their order. Set by the integrations, left out of the key (``keyrules``).
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
    """Remove secret-named fields and mask credential-shaped strings.

    A different API key must never cause a miss, and a key must never be derivable
    from a cassette. Names are judged only outside what the model is asked (tool
    schemas, arguments and messages may well have a property called ``token``).
    """
    return _drop_secrets(request, _SECRET_VALUE, might_hold_secret)


def secret_dropper(extra_patterns: Iterable[str]) -> Normalizer:
    """``drop_secrets`` that also masks the user's own secret patterns."""
    patterns = [*DEFAULT_SECRET_PATTERNS.values(), *extra_patterns]
    combined = re.compile("|".join(f"(?:{p})" for p in patterns))

    def drop_secrets_and_user_patterns(request: Request) -> Request:
        return _drop_secrets(request, combined, lambda text: True)

    return drop_secrets_and_user_patterns


def _drop_secrets(
    request: Request, secret_value: re.Pattern[str], maybe: Callable[[str], bool]
) -> Request:
    result: Request = _mask_secrets(request, True, secret_value, maybe)
    return result


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
    """Drop run IDs and, in messages, IDs, response metadata, usage and timestamps.

    LangChain injects ``usage_metadata.total_cost`` on every cache hit, and providers
    stamp each answer with a fresh ID and time; an earlier answer carried into the
    next request must not change that request's key.
    """
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


def alias_tool_call_ids(request: Request, prefix: str = "call_") -> Request:
    """Rename tool-call IDs to ``call_1``, ``call_2``… in order of first appearance.

    Providers mint random IDs; the same ID is renamed the same way wherever it
    occurs, so a tool result still points at its call. Traversal visits dict keys in
    sorted order so that the numbering never depends on dict order. An ID used as a
    dict key (Gemini's ``__gemini_function_call_thought_signatures__`` maps call IDs to
    signatures) is renamed like the same ID used as a value.
    """
    aliaser = ToolCallAliaser(prefix)
    result: Request = aliaser.walk(request)
    if aliaser.renames_keys():
        result = aliaser.rename_keys(result)
    return result


class ToolCallAliaser:
    """The state of ``alias_tool_call_ids`` part way through a request.

    An object so that ``request_keys`` can walk a conversation one message at a
    time, resuming from the state an earlier request's prefix reached: the numbering
    depends only on what was met before, in walk order.
    """

    __slots__ = ("aliases", "keys", "prefix")

    def __init__(self, prefix: str = "call_") -> None:
        self.prefix = prefix
        self.aliases: dict[str, str] = {}
        #: every mapping key met: an ID used as one is renamed by ``rename_keys``
        self.keys: set[Any] = set()

    def copy(self) -> ToolCallAliaser:
        twin = ToolCallAliaser(self.prefix)
        twin.aliases = dict(self.aliases)
        twin.keys = set(self.keys)
        return twin

    def alias(self, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            return value
        aliases = self.aliases
        if value not in aliases:
            aliases[value] = f"{self.prefix}{len(aliases) + 1}"
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


def order_tool_results(request: Request) -> Request:
    """Sort each run of consecutive tool-result messages by the call they answer.

    Parallel tools finish in any order and frameworks append results as they arrive;
    after aliasing, the call order is the order the model asked for them. A provider
    that matches results to calls by position (``tool_result_ids: false``: Gemini,
    Ollama) reads their order, and so does a model given a result that names no call:
    such a run keeps its order (key rules 2).
    """
    messages = request.get("messages")
    if not isinstance(messages, list):
        return request
    positional = request.get(TOOL_RESULT_IDS) is False
    return {**request, "messages": tool_results_ordered(messages, positional=positional)}


def order_tool_results_by_rules_1(request: Request) -> Request:
    """``order_tool_results`` as key rules 1 did it: every run sorted, a result that names
    no call after those that do."""
    messages = request.get("messages")
    if not isinstance(messages, list):
        return request
    return {**request, "messages": tool_results_ordered(messages, rules=1)}


def is_tool_result(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "tool"


def tool_results_ordered(
    messages: list[Any], *, positional: bool = False, rules: int | None = None
) -> list[Any]:
    """``messages`` with each run of consecutive tool results sorted by the call answered
    (``positional``: the provider matches results by position, so nothing moves), by key
    rules ``rules`` (this chaincassette's unless given)."""
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
            out = {}
            for k, v in value.items():
                if head in ("*", k):
                    if not rest:
                        continue
                    out[k] = remove(v, rest)
                else:
                    out[k] = v
            return out
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
    """What ``DEFAULT_PIPELINE`` does to one item of a request's ``messages``, given the
    aliasing state the messages before it left (``order_tool_results`` aside, which
    ``request_keys`` applies to each closed run).

    Inside ``messages`` each default step maps items one by one: ``drop_secrets`` masks
    string values (names are not judged there), ``drop_volatile_fields`` drops top-level
    fields, ``strip_memory_addresses`` rewrites strings, then ``alias_tool_call_ids``
    walks. So one walk does all four: strings are cleaned where met, before the aliaser
    reads them. ``tests/core/test_request_keys.py`` holds this to the four steps.
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
    """The default steps, then ``ignore`` paths, then the user's own normalizers.

    ``secret_patterns`` (the cassette's ``redact_patterns``) are masked in the key too, so
    a rotated in-house token never causes a miss. ``rules``: the key rules whose pipeline
    to build (a cassette made by older rules is looked up by them).
    """
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
    met them: a request is keyed by rules 1 as it was built then)."""
    if PIPELINE_FIELDS.keys().isdisjoint(request):
        return request
    return {k: v for k, v in request.items() if k not in PIPELINE_FIELDS}


_RULES_1_PIPELINE: tuple[Normalizer, ...] = (
    without_pipeline_fields,
    drop_secrets,
    drop_volatile_fields,
    strip_memory_addresses,
    alias_tool_call_ids,
    order_tool_results_by_rules_1,
)


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
