"""What of a canonical request goes into its key: what the model reads, nothing else.

Deleting fields known to be volatile failed: every provider added a new one (signatures,
encrypted reasoning, item ids…). These rules *keep*, per message and content block, what
carries meaning to the model: role, content, names, tool calls and the calls results
answer, reasoning text, media as a hash of what it carries (``media``), the text-like
fields of an unknown block. Parameters lose every client or transport setting
(``is_client_setting``), and tool schemas are a set, sorted by name.

The cassette stores the full normalized request; ``canonical.key_of`` hashes ``key_view``
of it, and ``chaincassette show --key`` prints ``explain``. Every function takes the
version of the rules to apply (``KEY_RULES_VERSION``): a cassette made by older rules is
still keyed by them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .media import PATH_HASH_FIELD, media_view

#: Stored in every cassette (``key_rules``). Bump it with every change that gives any request
#: another key, and say what changed in ``RULE_CHANGES``.
KEY_RULES_VERSION = 3
#: What each version changed: a miss that a rule change explains names it.
RULE_CHANGES: dict[int, str] = {
    1: "the key rules of chaincassette 0.1 (cassettes without 'key_rules')",
    2: "chat models' own fields complete their parameters where LangChain's llm_string "
    "lacks them (ChatOllama); tool results a provider matches by position keep their "
    "order; media keyed by content whatever the block's spelling; whole numbers of "
    "real-valued sampling parameters keyed as floats; @recorded keys an int given for a "
    "float parameter as that float",
    3: "a media block naming a local file (LlamaIndex's ImageBlock(path=...)) keyed by the "
    "file's bytes, hashed when the request is built, not by its path",
}
#: Request fields that steer the normalization pipeline, not keyed since rules 2.
PIPELINE_FIELDS = {
    "tool_result_ids": "how tool results are matched to their calls (false: by position, so "
    "their order is kept, and keyed, in the messages)",
}
#: Sampling parameters an API reads as a real number: ``0`` and ``0.0`` are the same value.
REAL_PARAMS = frozenset(
    {
        "temperature",
        "top_p",
        "min_p",
        "top_a",
        "typical_p",
        "tfs_z",
        "frequency_penalty",
        "presence_penalty",
        "repetition_penalty",
        "repeat_penalty",
        "length_penalty",
        "mirostat_eta",
        "mirostat_tau",
    }
)

#: Exact parameter names that configure the client, not the question.
CLIENT_SETTINGS = frozenset(
    {
        "stream",
        "streaming",
        "disable_streaming",
        "stream_usage",
        "max_retries",
        "timeout",
        "request_timeout",
        "callbacks",
        "callback_manager",
        "verbose",
        "tags",
        "metadata",
        "cache",
        "rate_limiter",
        "http_client",
        "http_async_client",
        "async_http_client",
        "client",
        "async_client",
        "aclient",
        "reuse_client",
        "default_headers",
        "extra_headers",
        "default_query",
        "extra_query",
        "api_base",
        "openai_api_base",
        "openai_proxy",
        "openai_organization",
        "api_version",
        "openai_api_version",
        "keep_alive",
        "ls_structured_output_format",
        "structured_output_format",
        "location",
        "transport",
        "client_options",
        "credentials",
    }
)
#: Name parts (split on ``_``) that mark a client setting wherever they occur:
#: ``base_url``, ``azure_endpoint``, ``max_concurrent_requests``, ``organization_id``…
CLIENT_SETTING_WORDS = frozenset(
    {
        "url",
        "uri",
        "endpoint",
        "host",
        "port",
        "proxy",
        "proxies",
        "timeout",
        "timeouts",
        "retry",
        "retries",
        "concurrency",
        "concurrent",
        "header",
        "headers",
        "organization",
        "org",
        "project",
        "region",
        "callbacks",
        "limiter",
        "ssl",
        "tls",
        "profile",
    }
)
#: Parameters that hold more parameters (the rules apply inside them too).
NESTED_PARAMS = frozenset({"model_kwargs", "additional_kwargs", "extra_body", "kwargs"})

#: Fields of an unknown block (or message extra) that may carry text the model reads.
TEXT_LIKE_FIELDS = frozenset(
    {
        "text",
        "content",
        "thinking",
        "reasoning",
        "reasoning_content",
        "summary",
        "refusal",
        "transcript",
        "name",
        "arguments",
        "args",
        "input",
        "output",
        "result",
        "query",
        "title",
        "value",
    }
)
#: Opaque provider tokens: never meaning, always different on a re-record.
OPAQUE_FIELDS = frozenset(
    {
        "signature",
        "thought_signature",
        "thought_signatures",
        "encrypted_content",
        "__gemini_function_call_thought_signatures__",
        "data",  # of redacted_thinking
    }
)
#: Message fields the model reads (``additional_kwargs`` is filtered on its own).
MESSAGE_FIELDS = frozenset(
    {"role", "content", "name", "tool_calls", "invalid_tool_calls", "tool_call_id", "status"}
)
#: Fields of one tool call the model reads (``function`` is OpenAI's raw ``{name, arguments}``).
CALL_FIELDS = frozenset({"id", "name", "args", "arguments", "function", "type", "error"})

_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text", "summary_text", "refusal"})
_MEDIA_BLOCKS = frozenset(
    {
        "image",
        "image_url",
        "input_image",
        "audio",
        "input_audio",
        "file",
        "input_file",
        "document",
        "video",
        "media",
        "inline_data",
        "file_data",
    }
)
#: Per block type, the fields kept; the rest of a known block is left out.
_BLOCK_FIELDS: dict[str, frozenset[str]] = {
    "thinking": frozenset({"thinking", "content"}),
    "redacted_thinking": frozenset(),
    "reasoning": frozenset({"reasoning", "summary", "content", "text"}),
    "tool_use": frozenset({"id", "name", "input", "partial_json"}),
    "server_tool_use": frozenset({"id", "name", "input", "partial_json"}),
    "tool_call": frozenset({"id", "name", "args", "tool_call_id", "tool_name", "tool_kwargs"}),
    "tool_call_chunk": frozenset({"id", "name", "args"}),
    "function_call": frozenset({"call_id", "name", "arguments"}),
    "function_call_output": frozenset({"call_id", "output"}),
    "tool_result": frozenset({"tool_use_id", "content", "is_error"}),
    "web_search_tool_result": frozenset({"tool_use_id", "content"}),
}
#: Kinds of requests these rules shape; a tool or ``@recorded`` call keeps all its arguments.
MODEL_KINDS = frozenset({"chat", "completion", "embedding", "embeddings"})


def is_client_setting(name: str) -> bool:
    """Whether parameter ``name`` configures the client or transport, never the answer."""
    lowered = name.lower()
    if lowered in CLIENT_SETTINGS:
        return True
    return any(part in CLIENT_SETTING_WORDS for part in lowered.split("_"))


@dataclass
class KeyView:
    """A request's key view and what the rules left out and why."""

    kept: Any
    left_out: list[tuple[str, str]] = field(default_factory=list)
    """(path, reason) of each stored field that is not part of the key."""
    unknown: list[str] = field(default_factory=list)
    """Paths of content blocks of unknown type, keyed by their text-like fields."""


Note = Callable[[str, str], None]


@dataclass(frozen=True)
class _Walk:
    """One walk of a request: the rules it applies, where it notes what it leaves out and
    lists blocks of unknown type."""

    rules: int
    note: Note | None = None
    unknown: list[str] | None = None


def check_rules(rules: int | None = None) -> int:
    """``rules`` (``None``: ``KEY_RULES_VERSION``) if this version applies it, else
    ``ValueError``."""
    if rules is None:
        return KEY_RULES_VERSION
    if rules not in RULE_CHANGES or rules > KEY_RULES_VERSION:
        raise ValueError(
            f"unknown key rules {rules!r} (this chaincassette applies 1…{KEY_RULES_VERSION})"
        )
    return rules


def key_view(request: Any, rules: int | None = None) -> Any:
    """The part of a normalized request its key is computed from, by key rules ``rules``."""
    return _request(request, "", _Walk(check_rules(rules)))


def message_key_view(message: Any, rules: int | None = None) -> Any:
    """What ``key_view`` keeps of one item of a model request's ``messages``."""
    return _message(message, "", _Walk(check_rules(rules)))


def is_model_request(request: Any) -> bool:
    """Whether ``key_view`` applies its rules to ``request`` (else it is keyed whole)."""
    return isinstance(request, dict) and _text(request.get("kind")) in MODEL_KINDS


def explain(request: Any, rules: int | None = None) -> KeyView:
    """``key_view`` plus every stored field it leaves out, with the rule that did."""
    view = KeyView(None)
    note: Note = lambda path, why: view.left_out.append((path, why))  # noqa: E731
    walk = _Walk(check_rules(rules), note, view.unknown)
    view.kept = _request(request, "", walk)
    return view


def tools_order_only(old: Any, new: Any) -> bool:
    """Whether two tool lists hold the same schemas in another order."""
    if not (isinstance(old, list) and isinstance(new, list)) or old == new:
        return False
    quiet = _Walk(KEY_RULES_VERSION)
    return _sorted_tools(old, "", quiet) == _sorted_tools(new, "", quiet)


def tool_name(item: Any) -> str | None:
    """The name of a tool schema in any provider's format (OpenAI, Anthropic, Bedrock…)."""
    if not isinstance(item, dict):
        return None
    for holder in (item.get("function"), item.get("toolSpec"), item):
        if isinstance(holder, dict) and isinstance(holder.get("name"), str):
            return str(holder["name"])
    if isinstance(item.get("title"), str):
        return str(item["title"])
    return None


def content_hash(value: Any) -> str:
    """``sha256:…`` of a media payload's JSON (rules 1; rules 2 for an unknown spelling)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- the walk -------------------------------------------------------------------------------


def _request(request: Any, path: str, walk: _Walk) -> Any:
    if not is_model_request(request):
        return request
    out: dict[str, Any] = {}
    for name, value in request.items():
        here = f"{path}{name}"
        if name == "params" and isinstance(value, dict):
            out[name] = _params(value, here, walk)
        elif name == "messages" and isinstance(value, list):
            out[name] = [_message(m, f"{here}[{i}]", walk) for i, m in enumerate(value)]
        elif name == "tools" and isinstance(value, list):
            out[name] = _sorted_tools(value, here, walk)
        elif name in PIPELINE_FIELDS and walk.rules >= 2:
            if walk.note:
                walk.note(here, PIPELINE_FIELDS[name])
        else:
            out[name] = value
    return out


def _params(params: dict[str, Any], path: str, walk: _Walk) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in params.items():
        here = f"{path}.{name}"
        if is_client_setting(name):
            if walk.note:
                walk.note(here, "client/transport setting: where or how the request travels")
        elif name in NESTED_PARAMS and isinstance(value, dict):
            out[name] = _params(value, here, walk)
        elif name == "tools" and isinstance(value, list):
            out[name] = _sorted_tools(value, here, walk)
        elif walk.rules >= 2:
            out[name] = real_numbers(value, name)
        else:
            out[name] = value
    return out


def real_numbers(value: Any, name: str = "") -> Any:
    """``value`` with every whole number of a ``REAL_PARAMS`` parameter (at any depth) as the
    float an API reads (key rules 2)."""
    if type(value) is int and name in REAL_PARAMS:
        return float(value)
    if isinstance(value, dict):
        return {k: real_numbers(v, k) for k, v in value.items()}
    return value


def _sorted_tools(tools: list[Any], path: str, walk: _Walk) -> list[Any]:
    """Tool schemas as a set: by name (unnamed ones by their JSON), nested lists too."""
    items = [_inner_tools(t) for t in tools]
    ordered = sorted(items, key=_tool_order)
    if walk.note and ordered != items:
        walk.note(f"{path} order", "tool schemas are a set: keyed sorted by name")
    return ordered


def _inner_tools(tool: Any) -> Any:
    """Gemini groups declarations in one tool: ``{"function_declarations": [...]}``."""
    if not isinstance(tool, dict):
        return tool
    out = dict(tool)
    for name in ("function_declarations", "functionDeclarations"):
        if isinstance(out.get(name), list):
            out[name] = sorted(out[name], key=_tool_order)
    return out


def _tool_order(tool: Any) -> tuple[str, str]:
    return tool_name(tool) or "", json.dumps(tool, sort_keys=True)


def _message(message: Any, path: str, walk: _Walk) -> Any:
    if not isinstance(message, dict):
        return message
    out: dict[str, Any] = {}
    for name, value in message.items():
        here = f"{path}.{name}"
        if name == "content":
            out[name] = _content(value, here, walk)
        elif name in ("tool_calls", "invalid_tool_calls") and isinstance(value, list):
            out[name] = [_call(c, f"{here}[{i}]", walk) for i, c in enumerate(value)]
        elif name == "additional_kwargs" and isinstance(value, dict):
            extra = _extra(value, here, walk)
            if extra:
                out[name] = extra
        elif name in MESSAGE_FIELDS:
            out[name] = value
        elif walk.note:
            walk.note(here, "opaque provider token" if name in OPAQUE_FIELDS else _METADATA)
    return out


_METADATA = "not read by the model (message metadata)"


def _call(call: Any, path: str, walk: _Walk) -> Any:
    if not isinstance(call, dict):
        return call
    out: dict[str, Any] = {}
    for name, value in call.items():
        if name == "function" and isinstance(value, dict):
            out[name] = {k: v for k, v in value.items() if k in ("name", "arguments")}
        elif name in CALL_FIELDS:
            out[name] = value
        elif walk.note:
            walk.note(f"{path}.{name}", _why(name))
    return out


def _extra(extra: dict[str, Any], path: str, walk: _Walk) -> dict[str, Any]:
    """A message's provider extras: tool calls and reasoning text stay, tokens and ids go."""
    out: dict[str, Any] = {}
    for name, value in extra.items():
        here = f"{path}.{name}"
        if name == "tool_calls" and isinstance(value, list):
            out[name] = [_call(c, f"{here}[{i}]", walk) for i, c in enumerate(value)]
        elif name == "function_call":
            out[name] = _call(value, here, walk)
        elif name in OPAQUE_FIELDS or _looks_like_id(name):
            if walk.note:
                walk.note(here, _why(name))
        elif name in TEXT_LIKE_FIELDS:
            out[name] = _block(value, here, walk) if isinstance(value, (dict, list)) else value
        elif walk.note:
            walk.note(here, "not read by the model (provider extra without text)")
    return out


def _content(content: Any, path: str, walk: _Walk) -> Any:
    if isinstance(content, list):
        return [_block(b, f"{path}[{i}]", walk) for i, b in enumerate(content)]
    return content


def _text(value: Any) -> str | None:
    """``value`` if it is a string (a hand-edited file may hold a list where a name goes)."""
    return value if isinstance(value, str) else None


def _block_type(block: dict[str, Any]) -> tuple[str, Any]:
    for name in ("type", "block_type"):
        if name in block:
            return name, block[name]
    return "type", None


def _block(block: Any, path: str, walk: _Walk) -> Any:
    if isinstance(block, list):
        return [_block(b, f"{path}[{i}]", walk) for i, b in enumerate(block)]
    if not isinstance(block, dict):
        return block
    type_field, kind = _block_type(block)
    out: dict[str, Any] = {type_field: kind} if type_field in block else {}
    rest = {k: v for k, v in block.items() if k != type_field}
    kind = _text(kind)
    if kind in _MEDIA_BLOCKS:
        return _media(out, kind, rest, path, walk)
    allowed = _allowed(kind, path, walk)
    for name, value in rest.items():
        if name in allowed:
            out[name] = _kept(name, value, f"{path}.{name}", walk)
        elif walk.note:
            walk.note(f"{path}.{name}", _why(name))
    return out


def _allowed(kind: str | None, path: str, walk: _Walk) -> frozenset[str]:
    """The fields a block of type ``kind`` keeps (an unknown type: its text-like ones)."""
    if kind in _TEXT_BLOCKS:
        return _TEXT_FIELDS
    if kind in _BLOCK_FIELDS:
        return _BLOCK_FIELDS[kind]
    if kind is not None and walk.unknown is not None:
        walk.unknown.append(path)
    return TEXT_LIKE_FIELDS


_TEXT_FIELDS = frozenset({"text", "refusal"})


def _kept(name: str, value: Any, here: str, walk: _Walk) -> Any:
    """A kept field of a block, with the blocks it holds walked too."""
    if name == "content" and isinstance(value, list):
        return _content(value, here, walk)
    if isinstance(value, (dict, list)) and name in ("summary", "value", "reasoning"):
        return _block(value, here, walk)
    return value


def _media(
    out: dict[str, Any], kind: str, rest: dict[str, Any], path: str, walk: _Walk
) -> dict[str, Any]:
    """A media block as its content hash: of its JSON (rules 1), of what it carries (rules 2),
    a local file by its bytes (rules 3: the hash stored when the request was built)."""
    payload = {k: v for k, v in rest.items() if k not in ("id", "cache_control", "index")}
    if walk.note:
        walk.note(f"{path} payload", "media: keyed by its content hash")
    if walk.rules < 3 and PATH_HASH_FIELD in payload:
        del payload[PATH_HASH_FIELD]
        if walk.note:
            walk.note(f"{path}.{PATH_HASH_FIELD}", _PATH_HASH_LEFT_OUT.format(walk.rules))
    if list(payload) == ["content_hash"] or (
        walk.rules >= 2 and "content_hash" in payload and set(payload) <= _MEDIA_VIEW
    ):  # a key view (``show --key``) of a key view
        out.update(payload)
        return out
    canonical = media_view(kind, payload, walk.rules) if walk.rules >= 2 else None
    if canonical is not None:
        return canonical
    out["content_hash"] = content_hash(payload)
    return out


_MEDIA_VIEW = frozenset({"content_hash", "mime_type", "detail"})
_PATH_HASH_LEFT_OUT = (
    "the bytes of the local file, which key rules 3 read; key rules {} key its path"
)
_ID_NAME = re.compile(r"(^|_)(id|ids)$")


def _looks_like_id(name: str) -> bool:
    return bool(_ID_NAME.search(name)) and name not in ("tool_call_id", "tool_use_id", "call_id")


def _why(name: str) -> str:
    if name in OPAQUE_FIELDS or "signature" in name or "encrypted" in name:
        return "opaque provider token"
    if _looks_like_id(name):
        return "provider item/message id"
    return "not read by the model"
