"""What of a canonical request goes into its key: what the model reads, nothing else.

Keys used to be built by deleting fields known to be volatile, and every provider added a
new one (thinking signatures, encrypted reasoning, ``rs_…``/``msg_…`` item ids, Gemini's
thought signatures keyed by tool-call id, Mistral's ``endpoint``…). These rules work the
other way round: per message and content block they *keep* what carries meaning to the
model and leave out the rest.

- Messages keep role, content, name, tool calls (name, arguments, aliased id), the call a
  tool result answers, its status, and reasoning the provider sends back as text.
- Content blocks keep, by type: text; thinking/reasoning text (never its signature or
  encrypted content); tool calls and tool results with their aliased ids; images, audio
  and files as a content hash. A block of an unknown type keeps its text-like fields
  (``TEXT_LIKE_FIELDS``) and ``explain`` notes it.
- Parameters lose every client or transport setting: where the request goes (any URL,
  endpoint, host), how it travels (timeouts, retries, concurrency, headers, proxies, HTTP
  clients) and who pays (organization, project). See ``is_client_setting``.
- Tool schemas are a set: sorted by name, so ``bind_tools([a, b])`` and
  ``bind_tools([b, a])`` share a key (frameworks build tool lists from sets).

The cassette stores the full normalized request; ``chaincassette.canonical.key_of`` hashes
``key_view`` of it, and ``chaincassette show --key`` prints ``explain`` of it. The rules
run after normalization, so tool-call ids are already aliased (``call_1``…).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
    """A request's key view and, when explained, what the rules left out and why."""

    kept: Any
    left_out: list[tuple[str, str]] = field(default_factory=list)
    """(path, reason) of each stored field that is not part of the key."""
    unknown: list[str] = field(default_factory=list)
    """Paths of content blocks of unknown type, keyed by their text-like fields."""


Note = Callable[[str, str], None]


def key_view(request: Any) -> Any:
    """The part of a normalized request its key is computed from."""
    return _request(request, "", None, None)


def message_key_view(message: Any) -> Any:
    """What ``key_view`` keeps of one item of a model request's ``messages``."""
    return _message(message, "", None, None)


def is_model_request(request: Any) -> bool:
    """Whether ``key_view`` applies its rules to ``request`` (else it is keyed whole)."""
    return isinstance(request, dict) and _text(request.get("kind")) in MODEL_KINDS


def explain(request: Any) -> KeyView:
    """``key_view`` plus every stored field it leaves out, with the rule that did."""
    view = KeyView(None)
    view.kept = _request(
        request,
        "",
        lambda path, why: view.left_out.append((path, why)),
        view.unknown,
    )
    return view


def tools_order_only(old: Any, new: Any) -> bool:
    """Whether two tool lists hold the same schemas in another order."""
    if not (isinstance(old, list) and isinstance(new, list)) or old == new:
        return False
    return _sorted_tools(old, "", None) == _sorted_tools(new, "", None)


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
    """``sha256:…`` of a media payload's canonical JSON (bytes are already tagged text)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- the walk -------------------------------------------------------------------------------


def _request(request: Any, path: str, note: Note | None, unknown: Any) -> Any:
    if not is_model_request(request):
        return request
    out: dict[str, Any] = {}
    for name, value in request.items():
        here = f"{path}{name}"
        if name == "params" and isinstance(value, dict):
            out[name] = _params(value, here, note)
        elif name == "messages" and isinstance(value, list):
            out[name] = [_message(m, f"{here}[{i}]", note, unknown) for i, m in enumerate(value)]
        elif name == "tools" and isinstance(value, list):
            out[name] = _sorted_tools(value, here, note)
        else:
            out[name] = value
    return out


def _params(params: dict[str, Any], path: str, note: Note | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in params.items():
        here = f"{path}.{name}"
        if is_client_setting(name):
            if note:
                note(here, "client/transport setting: where or how the request travels")
        elif name in NESTED_PARAMS and isinstance(value, dict):
            out[name] = _params(value, here, note)
        elif name == "tools" and isinstance(value, list):
            out[name] = _sorted_tools(value, here, note)
        else:
            out[name] = value
    return out


def _sorted_tools(tools: list[Any], path: str, note: Note | None) -> list[Any]:
    """Tool schemas as a set: by name (unnamed ones by their JSON), nested lists too."""
    items = [_inner_tools(t) for t in tools]
    ordered = sorted(items, key=lambda t: (tool_name(t) or "", json.dumps(t, sort_keys=True)))
    if note and ordered != items:
        note(f"{path} order", "tool schemas are a set: keyed sorted by name")
    return ordered


def _inner_tools(tool: Any) -> Any:
    """Gemini groups declarations in one tool: ``{"function_declarations": [...]}``."""
    if not isinstance(tool, dict):
        return tool
    out = dict(tool)
    for name in ("function_declarations", "functionDeclarations"):
        if isinstance(out.get(name), list):
            out[name] = sorted(
                out[name], key=lambda t: (tool_name(t) or "", json.dumps(t, sort_keys=True))
            )
    return out


def _message(message: Any, path: str, note: Note | None, unknown: Any) -> Any:
    if not isinstance(message, dict):
        return message
    out: dict[str, Any] = {}
    for name, value in message.items():
        here = f"{path}.{name}"
        if name == "content":
            out[name] = _content(value, here, note, unknown)
        elif name in ("tool_calls", "invalid_tool_calls") and isinstance(value, list):
            out[name] = [_call(c, f"{here}[{i}]", note) for i, c in enumerate(value)]
        elif name == "additional_kwargs" and isinstance(value, dict):
            extra = _extra(value, here, note, unknown)
            if extra:
                out[name] = extra
        elif name in MESSAGE_FIELDS:
            out[name] = value
        elif name in OPAQUE_FIELDS:
            if note:
                note(here, "opaque provider token")
        elif note:
            note(here, "not read by the model (message metadata)")
    return out


def _call(call: Any, path: str, note: Note | None) -> Any:
    if not isinstance(call, dict):
        return call
    out: dict[str, Any] = {}
    for name, value in call.items():
        if name == "function" and isinstance(value, dict):
            out[name] = {k: v for k, v in value.items() if k in ("name", "arguments")}
        elif name in CALL_FIELDS:
            out[name] = value
        elif note:
            note(f"{path}.{name}", _why(name))
    return out


def _extra(extra: dict[str, Any], path: str, note: Note | None, unknown: Any) -> dict[str, Any]:
    """A message's provider extras: tool calls and reasoning text stay, tokens and ids go."""
    out: dict[str, Any] = {}
    for name, value in extra.items():
        here = f"{path}.{name}"
        if name == "tool_calls" and isinstance(value, list):
            out[name] = [_call(c, f"{here}[{i}]", note) for i, c in enumerate(value)]
        elif name == "function_call":
            out[name] = _call(value, here, note)
        elif name in OPAQUE_FIELDS or _looks_like_id(name):
            if note:
                note(here, _why(name))
        elif name in TEXT_LIKE_FIELDS:
            if isinstance(value, dict):
                out[name] = _block(value, here, note, unknown)
            elif isinstance(value, list):
                out[name] = [_block(b, f"{here}[{i}]", note, unknown) for i, b in enumerate(value)]
            else:
                out[name] = value
        elif note:
            note(here, "not read by the model (provider extra without text)")
    return out


def _content(content: Any, path: str, note: Note | None, unknown: Any) -> Any:
    if isinstance(content, list):
        return [_block(b, f"{path}[{i}]", note, unknown) for i, b in enumerate(content)]
    return content


def _text(value: Any) -> str | None:
    """``value`` if it is a string (a hand-edited file may hold a list where a name goes)."""
    return value if isinstance(value, str) else None


def _block_type(block: dict[str, Any]) -> tuple[str, Any]:
    for name in ("type", "block_type"):
        if name in block:
            return name, block[name]
    return "type", None


def _block(block: Any, path: str, note: Note | None, unknown: Any) -> Any:
    if isinstance(block, list):
        return [_block(b, f"{path}[{i}]", note, unknown) for i, b in enumerate(block)]
    if not isinstance(block, dict):
        return block
    type_field, kind = _block_type(block)
    out: dict[str, Any] = {type_field: kind} if type_field in block else {}
    rest = {k: v for k, v in block.items() if k != type_field}
    kind = _text(kind)
    if kind in _MEDIA_BLOCKS:
        payload = {k: v for k, v in rest.items() if k not in ("id", "cache_control", "index")}
        already = list(payload) == ["content_hash"]  # a key view (``show --key``) of a key view
        out["content_hash"] = payload["content_hash"] if already else content_hash(payload)
        if note:
            note(f"{path} payload", "media: keyed by its content hash")
        return out
    if kind in _TEXT_BLOCKS:
        allowed: frozenset[str] = frozenset({"text", "refusal"})
    elif kind in _BLOCK_FIELDS:
        allowed = _BLOCK_FIELDS[kind]
    else:
        allowed = TEXT_LIKE_FIELDS
        if kind is not None and unknown is not None:
            unknown.append(path)
    for name, value in rest.items():
        here = f"{path}.{name}"
        if name in allowed:
            if name == "content" and isinstance(value, list):
                out[name] = _content(value, here, note, unknown)
            elif isinstance(value, (dict, list)) and name in ("summary", "value", "reasoning"):
                out[name] = _block(value, here, note, unknown)
            else:
                out[name] = value
        elif note:
            note(here, _why(name))
    return out


_ID_NAME = re.compile(r"(^|_)(id|ids)$")


def _looks_like_id(name: str) -> bool:
    return bool(_ID_NAME.search(name)) and name not in ("tool_call_id", "tool_use_id", "call_id")


def _why(name: str) -> str:
    if name in OPAQUE_FIELDS or "signature" in name or "encrypted" in name:
        return "opaque provider token"
    if _looks_like_id(name):
        return "provider item/message id"
    return "not read by the model"
