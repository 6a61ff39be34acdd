"""LLM-aware differences between two requests, for misses and for ``chaincassette diff``.

A bare hash tells a user nothing; "messages[3] (user).content changed" tells them
which prompt edit broke the recording.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .keyrules import tool_name

MAX_VALUE_CHARS = 80
#: Fields that make two requests alike, a point each (``similarity``).
_SAME_FIELDS = ("model", "tools", "tool_choice", "params", "response_format", "stream", "function")


def short(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """A one-line preview of a value."""
    text = (
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    )
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _message_label(index: int, message: Any) -> str:
    role = message.get("role") if isinstance(message, dict) else None
    return f"messages[{index}] ({role})" if role else f"messages[{index}]"


def diff_requests(old: Any, new: Any, path: str = "") -> list[str]:
    """Differences from ``old`` (recorded) to ``new`` (requested), one line each."""
    out: list[str] = []
    _diff(old, new, path, out)
    return out


def _diff(old: Any, new: Any, path: str, out: list[str]) -> None:
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):  # a hand-edited file may mix key types
            child = f"{path}.{key}" if path else str(key)
            if key not in old:
                out.append(f"{child}: added {short(new[key])}")
            elif key not in new:
                out.append(f"{child}: removed (was {short(old[key])})")
            elif path == "" and key == "messages" and _lists(old[key], new[key]):
                _diff_items(old[key], new[key], out, _message_label, _preview)
            else:
                _diff(old[key], new[key], child, out)
        return
    if _lists(old, new):
        if _all_named(old) and _all_named(new):
            _diff_named(old, new, path, out)
        else:
            _diff_items(old, new, out, lambda index, _: f"{path}[{index}]", lambda item: item)
        return
    out.append(f"{path}: {short(old)} → {short(new)}")


def _lists(old: Any, new: Any) -> bool:
    return isinstance(old, list) and isinstance(new, list)


def _diff_items(
    old: list[Any],
    new: list[Any],
    out: list[str],
    child: Callable[[int, Any], str],
    shown: Callable[[Any], Any],
) -> None:
    """Item by item; ``child`` names an item, ``shown`` is what an added or removed one shows."""
    for index in range(max(len(old), len(new))):
        if index >= len(old):
            out.append(f"{child(index, new[index])}: added {short(shown(new[index]))}")
        elif index >= len(new):
            out.append(f"{child(index, old[index])}: removed (was {short(shown(old[index]))})")
        else:
            _diff(old[index], new[index], child(index, new[index]), out)


def _preview(message: Any) -> Any:
    if isinstance(message, dict) and "content" in message:
        return message["content"]
    return message


def _all_named(items: list[Any]) -> bool:
    names = [tool_name(i) for i in items]
    return bool(items) and all(names) and len(set(names)) == len(names)


def _diff_named(old: list[Any], new: list[Any], path: str, out: list[str]) -> None:
    old_by = {tool_name(i): i for i in old}
    new_by = {tool_name(i): i for i in new}
    if list(old_by) != list(new_by) and set(old_by) == set(new_by):
        out.append(f"{path}: same names in another order {list(old_by)} → {list(new_by)}")
    for name in list(old_by) + [n for n in new_by if n not in old_by]:
        child = f"{path}[{name}]"
        if name not in new_by:
            out.append(f"{child}: removed")
        elif name not in old_by:
            out.append(f"{child}: added")
        else:
            _diff(old_by[name], new_by[name], child, out)


def similarity(a: dict[str, Any], b: dict[str, Any]) -> float:
    """How alike two requests are, for picking the nearest recording (higher is closer)."""
    if a.get("kind") != b.get("kind"):
        return -1.0
    score = float(sum(a.get(field) == b.get(field) for field in _SAME_FIELDS))
    ma, mb = a.get("messages"), b.get("messages")
    if isinstance(ma, list) and isinstance(mb, list):
        same_prefix = 0
        for x, y in zip(ma, mb, strict=False):
            if x != y:
                break
            same_prefix += 1
        score += 2.0 * same_prefix - 0.5 * abs(len(ma) - len(mb))
    elif a.get("prompt") == b.get("prompt") or a.get("args") == b.get("args"):
        score += 2.0
    return score - 0.1 * len(diff_requests(a, b))
