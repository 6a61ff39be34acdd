"""What a cassette may hold: JSON data within limits that every reader can afford.

One rule for both sides: the loader refuses a file that breaks it, and the recorder
refuses to record a value that breaks it, so a file chaincassette writes always loads.
The limits are far above what a model or tool returns (real cassettes nest about 15
levels) and far below what makes a reader slow or crash: Python's recursion limit
(every walker of loaded data recurses), its 4,300-digit integer parsing limit, and
non-finite floats that JSON cannot carry.
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 128
"""Nesting levels (mappings and lists) a cassette may use."""
MAX_INT_DIGITS = 4300
"""Decimal digits of the largest integer (Python's own default limit for parsing one)."""
_MAX_INT_BITS = math.ceil(MAX_INT_DIGITS * math.log2(10))


class PlainDataError(ValueError):
    """A value is not plain, bounded JSON data; ``where`` is the path to it."""

    def __init__(self, problem: str, where: tuple[Any, ...] = ()) -> None:
        super().__init__(problem)
        self.problem = problem
        self.where = where


def literal_too_long(text: str) -> bool:
    """Whether a number literal is too long to be worth parsing (parsing a huge integer
    literal is the slow part); a shorter one is parsed and its value checked."""
    return len(text) > 2 * MAX_INT_DIGITS


def int_ok(number: int) -> bool:
    """Whether an integer has at most ``MAX_INT_DIGITS`` digits (roughly: compared in bits)."""
    return number.bit_length() <= _MAX_INT_BITS


def fits_trivially(text: str) -> bool:
    """Whether the value ``json.dumps(..., allow_nan=False)`` wrote as ``text`` keeps every
    limit ``check`` checks (but keys): fewer brackets than ``MAX_DEPTH`` cannot nest that
    deep, text shorter than ``MAX_INT_DIGITS`` holds no integer that long, and the encoder
    writes no non-finite float. Most recordings are such texts (``canonical.json_copy``)."""
    if len(text) >= MAX_INT_DIGITS:
        return False
    return text.count("[") + text.count("{") < MAX_DEPTH


def check(value: Any) -> None:
    """Raise ``PlainDataError`` when ``value`` nests too deeply, holds a non-finite float or an
    integer with too many digits. Iterative, and quick: it runs on every recording and looks
    only at the type of each value. Keys are not looked at: JSON (a copy, or a parse) has only
    string keys."""
    kind = type(value)
    if kind is not dict and kind is not list:
        value = [value]
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth >= MAX_DEPTH:
            raise _locate(value)
        children = item.values() if type(item) is dict else item
        depth += 1
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                push((child, depth))
            elif kind is float:
                if child - child != 0:  # inf - inf and nan - nan are nan
                    raise _locate(value)
            elif kind is int and child.bit_length() > _MAX_INT_BITS:
                raise _locate(value)


def check_depth(value: Any) -> None:
    """``check`` of only the nesting, for data whose parser checked the rest (``storage``'s
    JSON); raises the same ``PlainDataError``."""
    if type(value) is not dict and type(value) is not list:
        return
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth >= MAX_DEPTH:
            raise _locate(value)
        depth += 1
        for child in item.values() if type(item) is dict else item:
            if type(child) is dict or type(child) is list:
                push((child, depth))


def _problem(item: Any, depth: int) -> str | None:
    """What is wrong with ``item`` itself (not its children), found at ``depth``."""
    kind = type(item)
    if kind is dict or kind is list:
        if depth >= MAX_DEPTH:
            return f"data nested deeper than {MAX_DEPTH} levels"
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return f"a mapping key that is not a string ({key!r})"
    elif kind is float and not math.isfinite(item):
        return f"a non-finite number ({item!r}), which JSON cannot hold"
    elif kind is int and item.bit_length() > _MAX_INT_BITS:
        return f"an integer with more than {MAX_INT_DIGITS} digits"
    return None


def _locate(value: Any) -> PlainDataError:
    """The first problem in ``value`` with its path (a second walk, only on failure)."""
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(value, 0, ())]
    while stack:
        item, depth, where = stack.pop()
        problem = _problem(item, depth)
        if problem is not None:
            return PlainDataError(problem, where)
        if type(item) is dict:
            stack.extend((v, depth + 1, (*where, k)) for k, v in reversed(item.items()))
        elif type(item) is list:
            stack.extend((v, depth + 1, (*where, i)) for i, v in reversed(list(enumerate(item))))
    return PlainDataError("data that is not plain JSON")  # pragma: no cover - check() found one


def path_text(where: tuple[Any, ...]) -> str:
    """``("interactions", 0, "response")`` → ``interactions[0].response``."""
    text = ""
    for step in where:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text
