"""The canonical request of a provider SDK call, built from its JSON body by path.

OpenAI's chat completions, Responses, embeddings and completions and Anthropic's messages
and complete (under any base URL) take the frameworks' request shape, so the engine's one
rule list keys them; ``api`` names the wire format the answer comes in. Anything else is
keyed by method, path, query and body, so it still never goes live in replay. Headers never
enter a request: the key ignores who pays and where the server is.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any

from chaincassette.keyrules import is_client_setting

from .wire import Client

Request = dict[str, Any]
Builder = Callable[[dict[str, Any], str], Request]

#: Body fields of a chat call that become top-level request fields.
PROMOTED = ("tools", "tool_choice", "response_format")
_AZURE_DEPLOYMENT = re.compile(r"/deployments/([^/]+)/")
_BOUNDARY = re.compile(rb"boundary=\"?([^\";,\s]+)")


#: Per wire format: the path endings of the endpoints it understands (``/completions`` last).
ENDPOINTS = {
    "anthropic": (("/messages", "messages"), ("/complete", "complete")),
    "openai": (
        ("/chat/completions", "chat.completions"),
        ("/responses", "responses"),
        ("/embeddings", "embeddings"),
        ("/completions", "completions"),
    ),
}


def endpoint_of(client: Client, method: str, path: str) -> str | None:
    """The SDK endpoint a request calls (``chat.completions``, ``messages``…), if known."""
    if method != "POST":
        return None
    path = path.rstrip("/")
    return next((name for end, name in ENDPOINTS[client.wire] if path.endswith(end)), None)


def canonical_request(
    client: Client,
    method: str,
    path: str,
    query: Mapping[str, str],
    body: Any,
    raw: bytes,
    content_type: str,
) -> tuple[Request, str]:
    """(the canonical request, the endpoint's name for meta and traces)."""
    endpoint = endpoint_of(client, method, path)
    builder = _BUILDERS.get(f"{client.wire}.{endpoint}") if endpoint else None
    if builder is not None and isinstance(body, dict):
        return builder(body, path), str(endpoint)
    return http_request(method, path, query, body, raw, content_type), f"{method} {path}"


# -- the builders -----------------------------------------------------------------------------


def _model(body: Mapping[str, Any], path: str) -> Any:
    """The body's model, else an Azure deployment's name (Azure puts it in the path)."""
    model = body.get("model")
    if model is None:
        found = _AZURE_DEPLOYMENT.search(path)
        if found:
            return found.group(1)
    return model


def _chat(
    api: str,
    body: Mapping[str, Any],
    path: str,
    messages: list[Any],
    taken: tuple[str, ...],
) -> Request:
    request: Request = {"kind": "chat", "api": api, "model": _model(body, path)}
    for field in PROMOTED:
        if body.get(field) is not None:
            request[field] = body[field]
    skipped = {"model", "stream", *PROMOTED, *taken}
    request["params"] = {k: v for k, v in body.items() if k not in skipped}
    request["messages"] = messages
    request["stream"] = bool(body.get("stream"))
    return request


def chat_completions(body: dict[str, Any], path: str) -> Request:
    messages = body.get("messages")
    return _chat(
        "openai.chat.completions",
        body,
        path,
        list(messages) if isinstance(messages, list) else [],
        ("messages",),
    )


def anthropic_messages(body: dict[str, Any], path: str) -> Request:
    """System prompt first, as a ``system`` message: the model reads it before the turns."""
    messages: list[Any] = []
    system = body.get("system")
    if system not in (None, "", []):
        messages.append({"role": "system", "content": system})
    given = body.get("messages")
    messages.extend(given if isinstance(given, list) else [])
    return _chat("anthropic.messages", body, path, messages, ("messages", "system"))


def responses(body: dict[str, Any], path: str) -> Request:
    """Instructions first, then each input item as the message it is (see ``input_item``)."""
    messages: list[Any] = []
    instructions = body.get("instructions")
    if instructions not in (None, ""):
        messages.append({"role": "system", "content": instructions})
    given = body.get("input")
    if isinstance(given, str):
        messages.append({"role": "user", "content": given})
    elif isinstance(given, list):
        messages.extend(input_item(item) for item in given)
    return _chat("openai.responses", body, path, messages, ("input", "instructions"))


def input_item(item: Any) -> Any:
    """One Responses input item as a canonical message.

    A message stays role and content; a function call becomes an assistant message with
    a tool call (its ``call_id`` is the tool-call id the engine aliases; the ``fc_…`` item
    id goes); a function call's output becomes a tool result; any other item (reasoning,
    built-in tool calls) becomes a content block of a message, where the block rules keep
    its text and leave out ``encrypted_content`` and ids.
    """
    if not isinstance(item, dict):
        return item
    kind = item.get("type")
    if "role" in item and kind in (None, "message"):
        return {"role": item["role"], "content": item.get("content")}
    if kind == "function_call":
        call = {"id": item.get("call_id"), "name": item.get("name")}
        call["arguments"] = item.get("arguments")
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    if kind == "function_call_output":
        return {"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")}
    role = "tool" if str(kind or "").endswith("_output") else "assistant"
    return {"role": role, "content": [item]}


def embeddings(body: dict[str, Any], path: str) -> Request:
    return {
        "kind": "embedding",
        "api": "openai.embeddings",
        "model": _model(body, path),
        "params": {k: v for k, v in body.items() if k not in ("model", "input")},
        "input": body.get("input"),
    }


def completions(api: str) -> Builder:
    def build(body: dict[str, Any], path: str) -> Request:
        return {
            "kind": "completion",
            "api": api,
            "model": _model(body, path),
            "params": {k: v for k, v in body.items() if k not in ("model", "prompt", "stream")},
            "prompt": body.get("prompt"),
            "stream": bool(body.get("stream")),
        }

    return build


_BUILDERS: dict[str, Builder] = {
    "openai.chat.completions": chat_completions,
    "openai.responses": responses,
    "openai.embeddings": embeddings,
    "openai.completions": completions("openai.completions"),
    "anthropic.messages": anthropic_messages,
    "anthropic.complete": completions("anthropic.complete"),
}


# -- a request no rule understands ------------------------------------------------------------


def http_request(
    method: str,
    path: str,
    query: Mapping[str, str],
    body: Any,
    raw: bytes,
    content_type: str,
) -> Request:
    request: Request = {"kind": "http", "method": method, "path": path}
    kept = {k: v for k, v in sorted(query.items()) if not is_client_setting(k.replace("-", "_"))}
    if kept:
        request["query"] = kept
    if body is not None:
        request["body"] = body
    elif raw:
        request["body_sha256"] = _digest(raw, content_type)
    return request


def _digest(raw: bytes, content_type: str) -> str:
    """The sha256 of a body; a multipart body's random boundary does not change it."""
    found = _BOUNDARY.search(content_type.encode("latin-1", "replace"))
    if found:
        raw = raw.replace(found.group(1), b"boundary")
    return hashlib.sha256(raw).hexdigest()
