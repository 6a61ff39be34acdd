"""One canonical form per media content: the same bytes key the same, whatever the spelling.

A PNG reaches a model as a LangChain ``base64`` block, an OpenAI data URL, an Anthropic
``source``, a Gemini ``inline_data`` part…: the model reads the same image. Key rules 2 key
a media block by its kind, the sha256 of its decoded bytes (or of the address it points
to), its MIME type and ``detail``. A block no spelling fits is hashed as written (rules 1).
Key rules 3 key a block naming a local file by the sha256 of the file's bytes, which the
integration stores in the block (``PATH_HASH_FIELD``) when it builds the request: the file
may be gone, or changed, when a stored request is keyed again.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import stat
from collections.abc import Iterator
from os import PathLike
from typing import Any

#: Fields that carry a media payload as base64 text (or as a data URL).
BASE64_FIELDS = ("base64", "data", "image", "audio", "video", "file_data", "bytes", "__bytes__")
#: Fields that point at a payload somewhere else; it is keyed by the address.
URL_FIELDS = ("url", "image_url", "file_url", "uri", "file_uri", "fileUri")
ID_FIELDS = ("file_id", "fileId")
PATH_FIELDS = ("path",)
#: The ``bytes_hash`` of the local file a block's ``path`` names, taken when the request was
#: built (``file_hash``); key rules 3 key the block by it, rules 1 and 2 leave it out.
PATH_HASH_FIELD = "path_content_hash"
MIME_FIELDS = ("mime_type", "mimeType", "media_type", "image_mimetype", "audio_mimetype")
#: Block types, by the kind of media they carry (when no MIME type says it).
KINDS = {
    "image": "image",
    "image_url": "image",
    "input_image": "image",
    "audio": "audio",
    "input_audio": "audio",
    "video": "video",
    "file": "file",
    "input_file": "file",
    "document": "file",
}
#: How deep a payload is looked for inside a block (``image_url.url``, ``source.data``…).
MAX_DEPTH = 3
_DATA_URL = re.compile(r"^data:(?P<mime>[^;,]*)(?P<params>(?:;[^;,]*)*),", re.DOTALL)
_MIME_KINDS = ("image", "audio", "video")


def media_view(block_type: Any, payload: dict[str, Any], rules: int = 2) -> dict[str, Any] | None:
    """``{"type": kind, "content_hash": …}`` (and ``mime_type``, ``detail``) of a media block
    less its type field by key rules ``rules`` (2 or later), or ``None`` when no known
    spelling carries it."""
    found = _content(payload, rules)
    if found is None:
        return None
    digest, mime = found
    mime = mime or _mime(payload)
    view: dict[str, Any] = {"type": _kind(block_type, mime), "content_hash": digest}
    if mime:
        view["mime_type"] = mime.lower()
    detail = _detail(payload)
    if detail is not None:
        view["detail"] = detail
    return view


def bytes_hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_hash(path: str | PathLike[str]) -> str | None:
    """``bytes_hash`` of the regular file at ``path``, read in chunks (a video may be large),
    or ``None`` when it cannot be read (the block is then keyed by its address)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return None
            while chunk := file.read(_CHUNK):
                digest.update(chunk)
    except (OSError, ValueError):  # missing, unreadable, a directory, a NUL in the name
        return None
    return "sha256:" + digest.hexdigest()


_CHUNK = 1 << 20


def files_by_path(value: Any) -> list[str]:
    """The paths of the media blocks in ``value`` (a request's messages, at any depth: a tool
    result may hold an image) that ``names_a_file``."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            if names_a_file(item):
                found.append(str(item[PATH_FIELDS[0]]))
            stack.extend(v for v in reversed(item.values()) if isinstance(v, (list, dict)))
    return found


def names_a_file(block: dict[str, Any]) -> bool:
    """Whether a media block is sent as the bytes of the local file its ``path`` names (no
    inline bytes) without their stored hash: what key rules 1 and 2 keyed by the path."""
    kind = block.get("type", block.get("block_type"))
    path = block.get(PATH_FIELDS[0])
    if kind not in KINDS or not (isinstance(path, str) and path) or PATH_HASH_FIELD in block:
        return False
    return not any(isinstance(block.get(name), str) and block[name] for name in BASE64_FIELDS)


def _content(payload: dict[str, Any], rules: int) -> tuple[str, str | None] | None:
    """(content hash, MIME type of a data URL) of the first payload found, by priority:
    inline bytes (a data URL or base64 text), then (rules 3) the stored hash of a local
    file, then an address (URL, file id, path)."""
    strings = list(_strings(payload, 0))
    for _name, text in strings:
        match = _DATA_URL.match(text)
        if match is not None:
            body = text[match.end() :]
            inline = _decoded(body) if ";base64" in match["params"] else None
            return bytes_hash(inline if inline is not None else _text("", body)), match["mime"]
    for name, text in strings:
        if name in BASE64_FIELDS:
            raw = _decoded(text)
            return bytes_hash(raw if raw is not None else _text(None, text)), None
    stored = payload.get(PATH_HASH_FIELD)
    if rules >= 3 and isinstance(stored, str) and stored.startswith("sha256:"):
        return stored, None
    for fields, prefix in ((URL_FIELDS, "url:"), (ID_FIELDS, "file:"), (PATH_FIELDS, "path:")):
        for name, text in strings:
            if name in fields:
                return bytes_hash(_text(prefix, text)), None
    return None


def _text(prefix: str | None, text: str) -> bytes:
    """An address (or text that is not base64) as the bytes its hash is taken of."""
    return f"{prefix or ''}{text}".encode("utf-8", "surrogatepass")


def _strings(value: dict[str, Any], depth: int) -> Iterator[tuple[str, str]]:
    """(field name, text) of every non-empty string field, the block's own first."""
    nested = []
    for name, item in value.items():
        if isinstance(item, str) and item:
            yield str(name), item
        elif isinstance(item, dict):
            nested.append(item)
    if depth < MAX_DEPTH:
        for item in nested:
            yield from _strings(item, depth + 1)


def _decoded(text: str) -> bytes | None:
    """The bytes of base64 text (standard or URL-safe, any padding or line breaks)."""
    compact = "".join(text.split())
    compact += "=" * (-len(compact) % 4)
    for altchars in (None, b"-_"):
        try:
            return base64.b64decode(compact.encode("ascii"), altchars, validate=True)
        except (binascii.Error, ValueError):  # not base64, or not ASCII
            continue
    return None


def _mime(payload: dict[str, Any]) -> str | None:
    for name, text in _strings(payload, 0):
        if name in MIME_FIELDS:
            return text
    return None


def _kind(block_type: Any, mime: str | None) -> str:
    head = (mime or "").split("/", 1)[0].lower()
    if head in _MIME_KINDS:
        return head
    if isinstance(block_type, str) and block_type in KINDS:
        return KINDS[block_type]
    return "file" if mime else "media"


def _detail(payload: dict[str, Any]) -> str | None:
    """The resolution a model is asked to see an image at (``auto`` is every API's default)."""
    for holder in (payload, payload.get("image_url")):
        if isinstance(holder, dict):
            detail = holder.get("detail")
            if isinstance(detail, str) and detail not in ("", "auto"):
                return detail
    return None
