"""Cassette documents read before in this process, shared by every cassette that replays them.

A suite opens the same file once per test (a module's tests, a parametrized test), and
each fresh ``Cassette`` read it in full: parse, validate, rebuild every request from the
transcript. The document depends on the file's bytes and format only, and a cassette
never changes what it loaded: requests are its read-only record (``chat_keys`` and the
miss report only read them), each hit hands out a fresh copy of the response, the
recorded trace is only compared, and the public accessors (``Cassette.interactions``,
``Cassette.recorded_trace``) hand out copies. So one document per file content serves
every later ``Cassette`` of that file until the file changes.

Only ``Cassette.load`` reads through here; the CLI's editing commands (``prune``,
``fault``, ``rewrite``) change the document they read and use ``storage.read``.
"""

from __future__ import annotations

import threading
from pathlib import Path

from . import storage
from .storage import CassetteDocument

#: What the kept documents may weigh before the whole store is dropped and regrown, as
#: ``_weight`` estimates it (a 37 KB agent cassette of 20 turns weighs about 250 KB).
MAX_KEPT_BYTES = 50_000_000

_kept: dict[tuple[bytes, str], CassetteDocument] = {}
_kept_bytes = 0
_lock = threading.Lock()


def read(path: Path, fmt: str) -> CassetteDocument | None:
    """``storage.read``, with the document shared with earlier reads of the same bytes:
    its lists of interactions and metadata are the caller's own, what they hold is shared
    and must not be changed."""
    raw = storage.read_bytes(path)
    if raw is None:
        return None
    kept = _kept.get((raw, fmt))
    if kept is None:
        kept = storage.loads_bytes(raw, fmt, path)  # a bad file raises: nothing is kept
        _keep(raw, fmt, kept)
    return CassetteDocument(
        interactions=list(kept.interactions),
        recorded_with=dict(kept.recorded_with),
        trace=kept.trace,
        version=kept.version,
    )


def forget() -> None:
    """Drop every kept document (the next read of any file loads it again)."""
    global _kept_bytes
    with _lock:
        _kept.clear()
        _kept_bytes = 0


def _keep(raw: bytes, fmt: str, document: CassetteDocument) -> None:
    global _kept_bytes
    weight = _weight(raw, document)
    if weight > MAX_KEPT_BYTES // 4:  # one huge file would crowd out every other
        return
    with _lock:
        if _kept_bytes + weight > MAX_KEPT_BYTES:
            _kept.clear()
            _kept_bytes = 0
        _kept[(raw, fmt)] = document
        _kept_bytes += weight


def _weight(raw: bytes, document: CassetteDocument) -> int:
    """About what a loaded document holds in memory: six times its file (the objects of
    its data), and a reference per message of each rebuilt request (a request shares its
    messages with the one it extends, but has a list of its own: turns² references)."""
    messages = 0
    for interaction in document.interactions:
        request = interaction.get("request")
        listed = request.get("messages") if isinstance(request, dict) else None
        messages += len(listed) if isinstance(listed, list) else 0
    return 6 * len(raw) + 8 * messages
