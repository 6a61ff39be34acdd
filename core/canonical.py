"""Canonical JSON and the key derived from it.

One spelling per value (sorted keys, no whitespace, UTF-8) so that the key of a
request does not depend on dict order, process, platform or hash seed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from . import plain
from .keyrules import key_view

#: One encoder per spelling for every call: ``json.dumps`` with options builds a new one
#: each time, which costs as much as encoding a small value (keys and traces encode
#: thousands). ``encode`` keeps no state between calls.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
_PLAIN = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def plain_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, allow_nan=False)``: a recording's copy and its
    journal line spell a response with this one encoder, so the line can reuse the copy's text."""
    return _PLAIN.encode(value)


def canonical_json(value: Any) -> str:
    """Serialize ``value`` deterministically; non-JSON values raise ``TypeError``."""
    return _CANONICAL.encode(value)


def key_of(normalized_request: Any, rules: int | None = None) -> str:
    """The sha256 hex digest of what the model reads of an already normalized request.

    The cassette stores the whole normalized request; only its ``keyrules.key_view`` (no
    signatures, item ids or transport settings, tool schemas as a set) is hashed, so a
    re-recording with fresh provider tokens, or a replay behind another endpoint, keys
    the same. ``rules``: the version of the key rules to apply (a recording made by
    older rules is looked up by them; ``None``: this chaincassette's).
    """
    text = canonical_json(key_view(normalized_request, rules))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_copy(value: Any, *, what: str = "value") -> Any:
    """A fresh, JSON-only copy of ``value``.

    Callers mutate what they get back (agents append messages, edit blocks), so a
    recording is never handed out twice; the round trip also proves the value can
    be stored before anything is written, and that the loader will read it back
    (``plain.check``: bounded nesting and numbers).
    """
    return json_copy_text(value, what=what)[0]


def json_copy_text(value: Any, *, what: str = "value") -> tuple[Any, str]:
    """``json_copy`` and the JSON text it was read from (``json.dumps(value,
    ensure_ascii=False)``): a recording's secret scan reads that text at once."""
    try:
        text = plain_json(value)
        text.encode("utf-8")  # a lone surrogate (half an emoji) would only fail at save time
        copy = json.loads(text)
        if not plain.fits_trivially(text):
            plain.check(copy)
        return copy, text
    except UnicodeEncodeError as exc:
        raise TypeError(f"{what} holds text that is not valid Unicode: {exc}") from None
    except plain.PlainDataError as exc:
        where = f" at {plain.path_text(exc.where)}" if exc.where else ""
        raise TypeError(
            f"{what} holds {exc.problem}{where}, which a cassette cannot store"
        ) from None
    except RecursionError:
        raise TypeError(
            f"{what} holds data nested deeper than {plain.MAX_DEPTH} levels, which a cassette "
            "cannot store"
        ) from None
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} is not JSON-serializable: {exc}") from None


def fresh_copy(value: Any) -> Any:
    """A deep copy of a value already known to be JSON-only (faster than ``copy.deepcopy``)."""
    kind = type(value)
    if kind is dict:
        return {k: fresh_copy(v) for k, v in value.items()}
    if kind is list:
        return [fresh_copy(v) for v in value]
    return value
