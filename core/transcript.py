"""Format version 2: a cassette written as a transcript, growing linearly with agent turns.

Version 1 stored every request whole, so an agent's cassette grew as turns squared. Here
a request that continues an earlier one (every field but the messages equal, the earlier
messages a prefix) stores ``extends: <the earlier key, shortened>`` and only the messages
that follow; tool schemas live once in a top-level ``tools`` table, and long message texts
shared by conversations once in ``texts`` (``content: {$text: name}``).

Keys are stored, never recomputed, and ``decode(encode(x)) == x``, so rewriting a file
changes nothing. A reference is by key, so a hand edit cannot make it silently point at
another request: one that finds nothing is an error naming the interaction.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from typing import Any, TypeGuard

from .canonical import canonical_json

TOOLS = "tools"
TEXTS = "texts"
TEXT_REF = "$text"
LITERAL = "$literal"
#: Message texts at least this long that two conversations share are stored once.
SHARED_TEXT_CHARS = 100
#: Shortest key prefix used in ``extends``; longer only when two keys of a file share it.
REF_CHARS = 12
#: The most messages one file's requests may take over from those they extend, in all: a
#: chain of N turns rebuilds about N²/2 (this allows one of about 3,000 messages), and a
#: small hostile file of one-message turns would rebuild billions.
MAX_REBUILT_MESSAGES = 5_000_000
_REF = re.compile(r"^[0-9a-f]{" + str(REF_CHARS) + r",64}$")
#: More sha256 keys than this sharing their first ``REF_CHARS`` digits is no recording.
MAX_SHARED_PREFIX = 64
_KEY = re.compile(r"^[0-9a-f]{64}$")
_HASH = re.compile(r"^[0-9a-f]{16}$")


class TranscriptError(ValueError):
    """A v2 section that cannot be read; ``where`` is the path to it in the document."""

    def __init__(self, problem: str, where: tuple[Any, ...] = ()) -> None:
        super().__init__(problem)
        self.problem = problem
        self.where = where


def response_hash(response: Any) -> str:
    """16 hex digits of the sha256 of the response's canonical JSON: ``chaincassette
    verify`` tells a response edited by hand (the key covers only the request)."""
    return hashlib.sha256(canonical_json(response).encode("utf-8")).hexdigest()[:16]


# -- writing -------------------------------------------------------------------------------------


def encode(interactions: list[dict[str, Any]]) -> dict[str, Any]:
    """The v2 sections (``tools``, ``texts``, ``interactions``) for plain interactions."""
    keys = sorted({str(item["key"]) for item in interactions})
    ref_chars = _ref_length(keys)
    entries: list[dict[str, Any]] = []
    for item, (base, start) in zip(interactions, continuations(interactions), strict=True):
        request = item["request"]
        entry: dict[str, Any] = {"key": item["key"]}
        if item.get("response_hash"):
            entry["response_hash"] = item["response_hash"]
        if base is not None:
            entry["extends"] = str(interactions[base]["key"])[:ref_chars]
            entry["messages"] = list(request["messages"][start:])
        else:
            entry["request"] = request
        entry["response"] = item["response"]
        if item.get("meta"):
            entry["meta"] = item["meta"]
        entries.append(entry)
    tools = _share_tools(entries)
    texts = _share_texts(entries)
    sections: dict[str, Any] = {}
    if tools:
        sections[TOOLS] = {name: key_sorted(tool) for name, tool in tools.items()}
    if texts:
        sections[TEXTS] = texts
    sections["interactions"] = [_ordered(entry) for entry in entries]
    return sections


def _ref_length(keys: list[str]) -> int:
    """The shortest prefix length (at least ``REF_CHARS``) that tells the keys apart."""
    length = REF_CHARS
    for a, b in itertools.pairwise(keys):
        common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))
        length = max(length, common + 1)
    return length


def _fields(request: dict[str, Any]) -> str:
    return canonical_json({k: v for k, v in request.items() if k != "messages"})


def _digests(messages: list[Any]) -> list[bytes]:
    """Running digests: ``out[n]`` identifies ``messages[:n]``."""
    running = hashlib.blake2b(digest_size=16)
    out = [running.digest()]
    for message in messages:
        running.update(hashlib.blake2b(canonical_json(message).encode("utf-8")).digest())
        out.append(running.copy().digest())
    return out


def _chat(request: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(request, dict) and isinstance(request.get("messages"), list)


def continuations(interactions: list[dict[str, Any]]) -> list[tuple[int | None, int]]:
    """For each interaction, (the index of the earlier one whose request it continues, how
    many of its messages come from there), or ``(None, 0)``; the longest prefix wins.

    A base is always the first interaction of its key: ``extends`` names a key, and a
    reader finds that key's first request (a later one of the key may hold other ids)."""
    seen: dict[tuple[str, bytes], int] = {}
    keys: set[Any] = set()
    out: list[tuple[int | None, int]] = []
    for index, item in enumerate(interactions):
        request = item["request"]
        first_of_key = item["key"] not in keys
        keys.add(item["key"])
        if not _chat(request) or not request["messages"]:
            out.append((None, 0))
            continue
        fields = _fields(request)
        digests = _digests(request["messages"])
        found: tuple[int | None, int] = (None, 0)
        for length in range(len(digests) - 1, 0, -1):
            base = seen.get((fields, digests[length]))
            if base is not None:
                found = (base, length)
                break
        out.append(found)
        if first_of_key:
            seen.setdefault((fields, digests[-1]), index)
    return out


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        function = tool.get("function")
        for source in (function, tool):
            if isinstance(source, dict) and isinstance(source.get("name"), str):
                name: str = source["name"]
                if name:
                    return name
    return "tool"


def _share_tools(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Move every tool schema of a written request into one table; requests name them."""
    table: dict[str, Any] = {}
    names: dict[str, str] = {}  # canonical schema -> name
    for entry in entries:
        request = entry.get("request")
        if not isinstance(request, dict) or not isinstance(request.get(TOOLS), list):
            continue
        refs = []
        for tool in request[TOOLS]:
            spelled = canonical_json(tool)
            name = names.get(spelled)
            if name is None:
                base = name = _tool_name(tool)
                number = 1
                while name in table:
                    number += 1
                    name = f"{base}~{number}"
                names[spelled] = name
                table[name] = tool
            refs.append(name)
        entry["request"] = {**request, TOOLS: refs}
    return table


def _written_messages(entry: dict[str, Any]) -> list[Any] | None:
    holder = entry if "messages" in entry else entry.get("request")
    messages: list[Any] | None = holder["messages"] if _chat(holder) else None
    return messages


def _share_texts(entries: list[dict[str, Any]]) -> dict[str, str]:
    """Long message texts written more than once go to a table; messages name them."""
    seen: dict[str, int] = {}
    for entry in entries:
        for message in _written_messages(entry) or []:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str) and len(content) >= SHARED_TEXT_CHARS:
                seen[content] = seen.get(content, 0) + 1
    table: dict[str, str] = {}
    names: dict[str, str] = {}
    counters: dict[str, int] = {}
    for entry in entries:
        messages = _written_messages(entry)
        if messages is None:
            continue
        rewritten = []
        for message in messages:
            if not isinstance(message, dict):
                rewritten.append(message)
                continue
            content = message.get("content")
            if isinstance(content, str) and seen.get(content, 0) > 1:
                name = names.get(content)
                if name is None:
                    role = str(message.get("role") or "text")
                    role = re.sub(r"[^A-Za-z0-9_-]", "_", role) or "text"
                    counters[role] = counters.get(role, 0) + 1
                    name = names[content] = f"{role}-{counters[role]}"
                    table[name] = content
                message = {**message, "content": {TEXT_REF: name}}
            elif (
                isinstance(content, dict)
                and len(content) == 1
                and {TEXT_REF, LITERAL} & set(content)
            ):
                message = {**message, "content": {LITERAL: content}}  # data that looks like ours
            rewritten.append(message)
        if "messages" in entry:
            entry["messages"] = rewritten
        else:
            entry["request"] = {**entry["request"], "messages": rewritten}
    return table


def key_sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: key_sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [key_sorted(v) for v in value]
    return value


def _message(message: Any) -> Any:
    """A message reads like a line of the conversation: role, then content, then the rest."""
    if not isinstance(message, dict):
        return key_sorted(message)
    first = [k for k in ("role", "content") if k in message]
    rest = sorted(k for k in message if k not in first)
    return {k: key_sorted(message[k]) for k in first + rest}


def _ordered(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` (in ``encode``'s key order: key, what was asked, response, meta) with what
    was asked and its meta sorted (messages last); the response stays as recorded."""
    out = dict(entry)
    if "messages" in out:
        out["messages"] = [_message(m) for m in out["messages"]]
    request = out.get("request")
    if isinstance(request, dict):
        out["request"] = {k: key_sorted(request[k]) for k in sorted(request) if k != "messages"}
        if "messages" in request:
            messages = request["messages"]
            out["request"]["messages"] = (
                [_message(m) for m in messages]
                if isinstance(messages, list)
                else key_sorted(messages)
            )
    if "meta" in out:
        out["meta"] = key_sorted(out["meta"])
    return out


# -- reading -------------------------------------------------------------------------------------


def decode(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Plain interactions from a parsed v2 document; ``TranscriptError`` says what is wrong.

    A rebuilt request shares its unchanged parts with the one it extends (a list copy, not
    a copy of the conversation): they are read-only.
    """
    tools = _table(data, TOOLS)
    texts = _table(data, TEXTS)
    for name, text in texts.items():
        if not isinstance(text, str):
            raise TranscriptError(f"texts.{name} must be a string", (TEXTS, name))
    out: list[dict[str, Any]] = []
    by_prefix: dict[str, dict[str, Any]] = {}  # key[:REF_CHARS] -> {key: its first request}
    rebuilt = 0  # messages taken over from extended requests so far
    for index, item in enumerate(items(data)):
        where = ("interactions", index)
        check_item(index, item, where)
        if "extends" in item:
            request = _extended(index, item, where, by_prefix, texts)
            rebuilt += len(request["messages"]) - len(item.get("messages") or ())
            if rebuilt > MAX_REBUILT_MESSAGES:
                raise TranscriptError(
                    f"interaction {index}: the requests rebuilt from 'extends' hold more than "
                    f"{MAX_REBUILT_MESSAGES:,} earlier messages in all (each one repeats the "
                    "conversation it continues); a recording this long is not one chaincassette "
                    "writes: split the program's calls over several cassettes, or restore the "
                    "file from git",
                    (*where, "extends"),
                )
        else:
            request = _request(index, item["request"], (*where, "request"), tools, texts)
        plain: dict[str, Any] = {
            "key": item["key"],
            "request": request,
            "response": item["response"],
        }
        if item.get("meta"):
            plain["meta"] = item["meta"]
        if "response_hash" in item:
            plain["response_hash"] = item["response_hash"]
        out.append(plain)
        bucket = by_prefix.setdefault(item["key"][:REF_CHARS], {})
        bucket.setdefault(item["key"], request)
        if len(bucket) > MAX_SHARED_PREFIX:
            raise TranscriptError(
                f"interaction {index}: more than {MAX_SHARED_PREFIX} keys of this file start "
                f"with {item['key'][:REF_CHARS]}; keys are sha256 hashes, so the file was not "
                "written by chaincassette: restore it from git or re-record",
                (*where, "key"),
            )
    return out


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    table = data.get(name)
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise TranscriptError(f"'{name}' must be a mapping of names to values", (name,))
    return table


def items(data: dict[str, Any]) -> list[Any]:
    """The document's ``interactions`` list, unchecked items (none: ``[]``)."""
    found = data.get("interactions", [])
    if found is None:
        return []
    if not isinstance(found, list):
        raise TranscriptError("'interactions' must be a list", ("interactions",))
    return found


def check_item(index: int, item: Any, where: tuple[Any, ...], *, full: bool = False) -> None:
    """Refuse an interaction that is not one; ``full``: its request is stored whole (v1)."""
    if not isinstance(item, dict):
        raise TranscriptError(f"interaction {index} is not a mapping", where)
    if "extends" in item and "request" in item:
        raise TranscriptError(
            f"interaction {index} has both 'request' and 'extends' (it needs one of them)", where
        )
    for required in ("key", "request", "response"):
        if required not in item and (full or not (required == "request" and "extends" in item)):
            raise TranscriptError(f"interaction {index} has no '{required}'", where)
    if not isinstance(item["key"], str) or not _KEY.fullmatch(item["key"]):
        raise TranscriptError(
            f"interaction {index} has an invalid key (expected 64 hex digits)", (*where, "key")
        )
    digest = item.get("response_hash")
    if digest is not None and (not isinstance(digest, str) or not _HASH.match(digest)):
        raise TranscriptError(
            f"interaction {index} has an invalid response_hash (expected 16 hex digits)",
            (*where, "response_hash"),
        )
    if full and not isinstance(item["request"], dict):
        raise TranscriptError(
            f"interaction {index}: 'request' must be a mapping", (*where, "request")
        )
    meta = item.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise TranscriptError(f"interaction {index}: 'meta' must be a mapping", (*where, "meta"))


def _extended(
    index: int,
    item: dict[str, Any],
    where: tuple[Any, ...],
    by_prefix: dict[str, dict[str, Any]],
    texts: dict[str, Any],
) -> dict[str, Any]:
    ref = item["extends"]
    if not isinstance(ref, str) or not _REF.match(ref):
        raise TranscriptError(
            f"interaction {index}: 'extends' must be the key (or its first {REF_CHARS}+ hex "
            f"digits) of an earlier interaction, found {ref!r}",
            (*where, "extends"),
        )
    candidates = by_prefix.get(ref[:REF_CHARS], {})
    found = [request for key, request in candidates.items() if key.startswith(ref)]
    if len(found) > 1:
        raise TranscriptError(
            f"interaction {index}: 'extends: {ref}' matches {len(found)} earlier keys; "
            "give more of the key",
            (*where, "extends"),
        )
    base = found[0] if found else None
    if base is None:
        raise TranscriptError(
            f"interaction {index} extends {ref}, which is not the key of an earlier "
            "interaction (was it deleted or moved by hand?); restore it from git or re-record",
            (*where, "extends"),
        )
    if not _chat(base):
        raise TranscriptError(
            f"interaction {index} extends {ref}, whose request has no messages",
            (*where, "extends"),
        )
    messages = item.get("messages", [])
    if not isinstance(messages, list):
        raise TranscriptError(
            f"interaction {index}: 'messages' must be a list", (*where, "messages")
        )
    added = [
        _resolve_text(index, m, (*where, "messages", n), texts) for n, m in enumerate(messages)
    ]
    return {**base, "messages": base["messages"] + added}


def _request(
    index: int,
    request: Any,
    where: tuple[Any, ...],
    tools: dict[str, Any],
    texts: dict[str, Any],
) -> dict[str, Any]:
    if not isinstance(request, dict):
        raise TranscriptError(f"interaction {index}: 'request' must be a mapping", where)
    rebuilt = dict(request)
    refs = request.get(TOOLS)
    if isinstance(refs, list):
        resolved = []
        for n, name in enumerate(refs):
            if not isinstance(name, str) or name not in tools:
                raise TranscriptError(
                    f"interaction {index}: tools[{n}] names {name!r}, which is not in the "
                    "top-level 'tools' table",
                    (*where, TOOLS, n),
                )
            resolved.append(tools[name])
        rebuilt[TOOLS] = resolved
    messages = request.get("messages")
    if isinstance(messages, list):
        rebuilt["messages"] = [
            _resolve_text(index, m, (*where, "messages", n), texts) for n, m in enumerate(messages)
        ]
    return rebuilt


def _resolve_text(index: int, message: Any, where: tuple[Any, ...], texts: dict[str, Any]) -> Any:
    if not isinstance(message, dict):
        return message
    content = message.get("content")
    if not isinstance(content, dict) or len(content) != 1:
        return message
    if LITERAL in content:
        return {**message, "content": content[LITERAL]}
    if TEXT_REF in content:
        name = content[TEXT_REF]
        if not isinstance(name, str) or name not in texts:
            raise TranscriptError(
                f"interaction {index}: content names text {name!r}, which is not in the "
                "top-level 'texts' table",
                (*where, "content"),
            )
        return {**message, "content": texts[name]}
    return message
