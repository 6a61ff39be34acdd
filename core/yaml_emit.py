"""Writing a cassette's plain data as YAML, byte for byte as libyaml writes it, several times faster.

PyYAML's dumper costs many times a parse of the same file (a representer call and a node
per value, resolver calls per scalar). A cassette holds only JSON's types in a fixed
layout, so this module writes that layout directly, choosing each scalar's style by
libyaml's own rules (``yaml_emitter_analyze_scalar``, ``select_scalar_style``). What it
does not cover raises ``Unsupported``, and the caller uses PyYAML's dumper for that file.
A test compares both on generated documents and on every cassette of the repository.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

FLOW_CHARS = 120
"""A mapping or list of one-line scalars that fits in about this many characters is
written on one line (``params: {max_tokens: 96, temperature: 0.7}``)."""
MAX_SIMPLE_KEY = 128
"""libyaml writes a key longer than this (in UTF-8 bytes) as a complex ``? key``."""
MAX_LINE = 100_000
"""Strings longer than this may pass libyaml's line width (1,000,000) and be folded."""


class Unsupported(Exception):
    """A value this writer does not write exactly as libyaml would: use PyYAML's dumper."""


_RESOLVERS = yaml.resolver.Resolver.yaml_implicit_resolvers
# line breaks libyaml writes as they are (not escaped) but "\n", and lone surrogates
_UNSUPPORTED = re.compile("[\u2028\u2029\ud800-\udfff]")
_KEY_BREAKS = re.compile("[\n\r\x85\u2028\u2029]")  # a key with one is a complex key
# libyaml's IS_PRINTABLE: "\n", " "-"~", U+00A0-U+D7FF, U+E000-U+FFFD but U+FEFF
_SPECIAL = re.compile("[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd]")
_BLANK = " \t\r\n\x85\u2028\u2029"
_FIRST_BOTH = set("#,[]{}&*!|>'\"%@`")
_INNER_FLOW = re.compile(r"[,?\[\]{}:]")
_INNER_BLOCK = re.compile(r":(?:[ \t\n]|\Z)|[ \t\n]#")
_ESCAPE = re.compile('[^\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd]|["\\\\]')
_NAMED = {
    "\x00": "0",
    "\x07": "a",
    "\x08": "b",
    "\x09": "t",
    "\x0a": "n",
    "\x0b": "v",
    "\x0c": "f",
    "\x0d": "r",
    "\x1b": "e",
    '"': '"',
    "\\": "\\",
    "\x85": "N",
    "\u2028": "L",
    "\u2029": "P",
}
_JSON_ESCAPED = re.compile(r'[\x00-\x1f"\\]')


def dump(plain: dict[str, Any], *, end: bool) -> str:
    """``plain`` (a non-empty mapping of JSON values) as libyaml writes it in block style,
    ending with ``...`` when ``end``; raises ``Unsupported`` where it cannot be sure."""
    if type(plain) is not dict or not plain:
        raise Unsupported("not a non-empty mapping")
    writer = _Writer()
    if flat(plain, writer.chars):  # a short document is one flow mapping, as any is
        writer.out += [writer.flow(plain), "\n"]
    else:
        writer.block(plain, 0, inline=False)
    if end or writer.open_ended:  # libyaml ends the document so after a "|+" block too
        writer.out.append("...\n")
    return "".join(writer.out)


def flat(value: dict[Any, Any] | list[Any], chars: dict[str, int] | None = None) -> bool:
    """A short mapping or list holding only one-line scalars and empty containers: written
    on one line. "Short" is its JSON spelling less its quotes, at most ``FLOW_CHARS``.
    ``chars`` remembers the length of strings met before (one dump's keys repeat)."""
    chars = {} if chars is None else chars
    items = value.values() if type(value) is dict else value
    length = 2
    for item in items:
        kind = type(item)
        if kind is str:
            if "\n" in item or len(item) > FLOW_CHARS:
                return False
            length += _measured(item, chars)
        elif kind is dict or kind is list:
            if item:
                return False
            length += 2
        elif kind is bool or item is None:
            length += 4 if item is not False else 5
        elif kind is int:
            length += len(str(item))
        elif kind is float:
            length += len(repr(item)) if item - item == 0 else len(json.dumps(item))
        else:  # a type a cassette never holds: measure it as the dumper always did
            spelled = json.dumps(value, ensure_ascii=False, default=str)
            return len(spelled) - spelled.count('"') <= FLOW_CHARS
    count = len(value)
    length += 2 * max(count - 1, 0)  # ", "
    if type(value) is dict:
        length += sum(_measured(str(key), chars) for key in value) + 2 * count  # ": "
    return length <= FLOW_CHARS


def _measured(text: str, chars: dict[str, int]) -> int:
    found = chars.get(text)
    if found is None:
        found = chars[text] = _json_chars(text)
    return found


def _json_chars(text: str) -> int:
    """Characters of ``text``'s JSON spelling (``ensure_ascii=False``) that are not ``"``."""
    if not _JSON_ESCAPED.search(text):
        return len(text)
    spelled = json.dumps(text, ensure_ascii=False)
    return len(spelled) - spelled.count('"')


class _Writer:
    """One dump: the output, and the renderings of scalars met so far (keys repeat)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.open_ended = False
        self._block: dict[str, str] = {}
        self._flow: dict[str, str] = {}
        self._keys: dict[str, str] = {}
        self.chars: dict[str, int] = {}
        """The JSON length of each string met (a dump's keys repeat)."""

    # -- collections -----------------------------------------------------------------------

    def block(self, value: dict[str, Any] | list[Any], indent: int, *, inline: bool) -> None:
        """A block mapping or sequence at ``indent``; ``inline``: it begins after a ``-``."""
        pad = " " * indent
        mapping = type(value) is dict
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            if not inline:
                self.out.append(pad)
            inline = False
            self.out.append(f"{self.key(key)}:" if mapping else "-")
            self.value(item, indent, mapping=mapping)

    def value(self, item: Any, indent: int, *, mapping: bool) -> None:
        """What follows ``key:`` or ``-`` for ``item``, in a container at ``indent``."""
        kind = type(item)
        if kind is str and "\n" not in item:  # the most common value: one append
            self.out.append(f" {self.scalar(item, flow=False)}\n")
        elif (kind is dict or kind is list) and flat(item, self.chars):
            self.out.append(f" {self.flow(item)}\n")
        elif kind is dict or kind is list:  # a sequence in a mapping is not indented
            self.out.append("\n" if mapping else " ")
            self.block(item, indent if mapping and kind is list else indent + 2, inline=not mapping)
        elif kind is str:
            self.out.append(" ")
            self.literal(item, indent + 2)
        else:
            self.out.append(f" {self.scalar(item, flow=False)}\n")

    def flow(self, value: dict[Any, Any] | list[Any]) -> str:
        if type(value) is dict:
            parts = [f"{self.key(k, flow=True)}: {self._flow_item(v)}" for k, v in value.items()]
            return "{" + ", ".join(parts) + "}"
        return "[" + ", ".join(self._flow_item(v) for v in value) + "]"

    def _flow_item(self, item: Any) -> str:
        if type(item) is dict:
            return "{}"
        if type(item) is list:
            return "[]"
        return self.scalar(item, flow=True)

    # -- scalars ---------------------------------------------------------------------------

    def key(self, key: Any, *, flow: bool = False) -> str:
        if type(key) is not str:
            raise Unsupported("a key that is not a string")
        cache = self._flow if flow else self._keys
        found = cache.get(key)
        if found is None:
            if (
                _KEY_BREAKS.search(key)
                or len(key.encode("utf-8", "surrogatepass")) > MAX_SIMPLE_KEY
            ):
                raise Unsupported("a key libyaml writes as a complex key")
            found = cache[key] = _styled(key, flow=flow, key=True)
        return found

    def scalar(self, item: Any, *, flow: bool) -> str:
        kind = type(item)
        if kind is str:
            cache = self._flow if flow else self._block
            found = cache.get(item)
            if found is None:
                found = _styled(item, flow=flow, key=False)
                if len(item) < 200:
                    cache[item] = found
            return found
        if kind is bool:
            return "true" if item else "false"
        if item is None:
            return "null"
        if kind is int:
            return str(item)
        if kind is float:
            return _float(item)
        raise Unsupported(f"a value of type {kind.__name__}")

    def literal(self, text: str, indent: int) -> None:
        """A string with line breaks, as libyaml's literal block (or double-quoted)."""
        if len(text) > MAX_LINE or _UNSUPPORTED.search(text):
            raise Unsupported("a string libyaml may fold or break otherwise")
        if not _block_allowed(text):
            self.out.append(f"{_double(text)}\n")
            return
        header = "|"
        if text[0] in " \n":
            header += "2"
        if not text.endswith("\n"):
            header += "-"
        elif len(text) == 1 or text[-2] == "\n":
            header += "+"
        pad = " " * indent
        body = "\n".join(pad + line if line else line for line in text.split("\n"))
        self.out += [header, "\n", body, "" if text.endswith("\n") else "\n"]
        self.open_ended = header.endswith("+")


def _float(value: float) -> str:
    """PyYAML's ``represent_float``."""
    if value != value:
        return ".nan"
    if value == float("inf"):
        return ".inf"
    if value == float("-inf"):
        return "-.inf"
    text = repr(value).lower()
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return text


def _styled(text: str, *, flow: bool, key: bool) -> str:
    """``text`` (no line break) as libyaml writes it: plain, single- or double-quoted."""
    if len(text) > MAX_LINE or _UNSUPPORTED.search(text):
        raise Unsupported("a string libyaml may fold or break otherwise")
    if not text:
        return "''"
    if _SPECIAL.search(text) or "\n" in text:  # "\n": a key, or a flow value, spanning lines
        return _double(text)
    if _plain_allowed(text, flow) and _resolves_to_str(text):
        return text
    return "'" + text.replace("'", "''") + "'"


def _plain_allowed(text: str, flow: bool) -> bool:
    """libyaml's flow_plain_allowed / block_plain_allowed for a one-line printable string."""
    first, last = text[0], text[-1]
    if first in " \t" or last in " \t":
        return False
    if text.startswith(("---", "...")) or first in _FIRST_BOTH:
        return False
    followed = len(text) == 1 or text[1] in _BLANK
    if first == "-" and followed:
        return False
    if first in "?:" and (flow or followed):
        return False
    if flow and _INNER_FLOW.search(text, 1):
        return False
    return not _INNER_BLOCK.search(text, 1)


def _resolves_to_str(text: str) -> bool:
    """Whether the plain spelling reads back as a string (not a number, bool, null, date)."""
    return not any(regexp.match(text) for _tag, regexp in _RESOLVERS.get(text[0], ()))


def _block_allowed(text: str) -> bool:
    """libyaml's block_allowed for a printable string of "\\n"-separated lines."""
    if _SPECIAL.search(text) or text.endswith((" ", "\t")):
        return False
    return " \n" not in text and "\t\n" not in text


def _double(text: str) -> str:
    return '"' + _ESCAPE.sub(_escaped, text) + '"'


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return "\\" + named
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"
