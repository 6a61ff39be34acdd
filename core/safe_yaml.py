"""Reading YAML as plain JSON data, refusing whatever a cassette never holds.

A cassette may come from a pull request or a bug report, so loading it must cost what
reading it costs. PyYAML's safe loader is not enough: its composer turns an alias bomb (a
few KB of ``&a [*b, *b, ...]`` standing for billions of strings) into a shared graph that
every later walk explodes, it recurses once per nesting level, and it accepts non-string
keys, a key written twice, ``.inf`` and integers of any length. Here the data is built from
libyaml's events, and the first anchor, alias, tag, non-string or repeated key, number out of
bounds or level past ``plain.MAX_DEPTH`` is refused where it stands, with its line.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from . import plain

_SafeLoaderBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _SafeLoader(_SafeLoaderBase):
    """libyaml's parser and the safe resolver without timestamps: an unquoted date stays the
    string it looks like."""


_SafeLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _SafeLoaderBase.yaml_implicit_resolvers.items()
}
_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = frozenset(f"{_TAG}{name}" for name in ("str", "int", "float", "bool", "null"))
_COLLECTION_TAGS = {
    yaml.MappingStartEvent: (None, "!", f"{_TAG}map"),
    yaml.SequenceStartEvent: (None, "!", f"{_TAG}seq"),
}
#: First characters of a plain scalar that the resolver may turn into something other than a
#: string; any other plain scalar, and every quoted one, is a string without asking it.
_RESOLVED = frozenset(k for k in _SafeLoader.yaml_implicit_resolvers if k is not None)
if None in _SafeLoader.yaml_implicit_resolvers or _SafeLoader.yaml_path_resolvers:
    _RESOLVED = frozenset(map(chr, range(0x110000)))  # pragma: no cover - not in PyYAML 6
_BOOLS = {"yes": True, "no": False, "true": True, "false": False, "on": True, "off": False}
_NO_KEY = object()


class Refused(Exception):
    """A YAML construct a cassette may not use; ``line`` is 1-based."""

    def __init__(self, problem: str, line: int, hint: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line
        self.hint = hint


_ALIAS_HINT = (
    "chaincassette never writes anchors (&name) or aliases (*name); a hand edit or another "
    "tool added them. Write the value out in full, restore the file from git "
    "(git checkout -- FILE) or re-record it"
)


def _construct(loader: Any) -> Any:
    """The document's data, built from the parser's events without recursion (see the
    module docstring). The open container, whether it is a mapping and the key waiting for
    its value are locals, pushed when a child opens: this loop runs once per scalar.
    """
    get_event = loader.get_event
    get_event()  # StreamStartEvent
    if type(get_event()) is yaml.StreamEndEvent:
        return None  # an empty file
    scalar_event, mapping_start = yaml.ScalarEvent, yaml.MappingStartEvent
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    starts = (mapping_start, yaml.SequenceStartEvent)
    resolved = _RESOLVED
    plain_values: dict[str, Any] = {}  # each distinct plain scalar is resolved once
    keys: dict[str, str] = {}  # one string object per distinct mapping key: less to hold
    stack: list[tuple[Any, bool, Any]] = []  # the containers above ``top``, as pushed
    document: list[Any] = []  # holds the root once it is read
    top: Any = document  # the open container: a list, or a dict while it is read
    in_mapping = False
    key: Any = _NO_KEY
    while True:
        event = get_event()
        kind = type(event)
        if kind is scalar_event:
            value = event.value
            if (event.tag, event.anchor) != (None, None):  # a tag, or an anchor (refused)
                value = _tagged(loader, event)
            elif event.implicit[0] and value[:1] in resolved:  # plain: maybe not a string
                known = plain_values.get(value, _NO_KEY)  # its value depends on its text alone
                if known is _NO_KEY:
                    known = plain_values[value] = _scalar(loader, event)
                value = known
        elif kind in ends:
            value = top
            top, in_mapping, key = stack.pop()
        elif kind in starts:
            if in_mapping and key is _NO_KEY:
                raise _key_error(event, "a mapping or list")
            _check_opened(event, kind, len(stack))
            stack.append((top, in_mapping, key))
            in_mapping = kind is mapping_start
            top = {} if in_mapping else []
            key = _NO_KEY
            continue
        elif kind is yaml.DocumentEndEvent:
            break
        else:
            raise _refused(event, kind)
        if not in_mapping:
            top.append(value)
        elif key is _NO_KEY:
            if type(value) is not str or value in top:
                raise _key_refused(event, value)
            key = keys.setdefault(value, value)
        else:
            top[key] = value
            key = _NO_KEY
    if type(get_event()) is not yaml.StreamEndEvent:
        raise Refused("the file holds more than one YAML document", _line(event) + 1)
    return document[0] if document else None


def _tagged(loader: Any, event: Any) -> Any:
    """A scalar with an anchor (refused) or a tag (only JSON's own are accepted)."""
    if event.anchor is not None:
        raise _anchor(event)
    return _scalar(loader, event)


def _check_opened(event: Any, kind: Any, depth: int) -> None:
    """Refuse a container a cassette may not hold: an anchored or tagged one, or one
    nested past ``plain.MAX_DEPTH``."""
    if event.anchor is not None:
        raise _anchor(event)
    if event.tag not in _COLLECTION_TAGS[kind]:
        raise _tag_error(event, event.tag)
    if depth >= plain.MAX_DEPTH:
        raise Refused(
            f"data nested deeper than {plain.MAX_DEPTH} levels",
            _line(event),
            "a cassette holds JSON-like data a few levels deep; this file was not "
            "written by chaincassette: restore it from git or re-record it",
        )


def _refused(event: Any, kind: type) -> Refused:
    if kind is yaml.AliasEvent:
        return Refused(f"the YAML alias *{event.anchor}", _line(event), _ALIAS_HINT)
    return Refused(f"unexpected YAML event {kind.__name__}", _line(event))


def _line(event: Any) -> int:
    return int(event.start_mark.line) + 1


def _anchor(event: Any) -> Refused:
    return Refused(f"the YAML anchor &{event.anchor}", _line(event), _ALIAS_HINT)


def _key_error(event: Any, found: str) -> Refused:
    return Refused(
        f"a mapping key that is not a string ({found})",
        _line(event),
        "every key in a cassette is a string: quote it ('1': ...) or restore the file from git",
    )


def _key_refused(event: Any, key: Any) -> Refused:
    """A key that is not a string, or that its mapping holds already: YAML says a mapping's
    keys are unique, and PyYAML keeps the last, so a hand edit that pasted a second
    ``response:`` would replay it without a word."""
    if type(key) is not str:
        return _key_error(event, repr(key)[:40])
    return Refused(
        f"the key {key[:40]!r} appears twice in one mapping",
        _line(event),
        "keep one of the two (chaincassette never writes a key twice) or restore the file from git",
    )


def _scalar(loader: Any, event: Any) -> Any:
    """One scalar as JSON data; numbers are bounded, finite and parsed only when short."""
    value: str = event.value
    tag = event.tag
    if tag is None or tag == "!":
        if not event.implicit[0]:  # quoted: always a string
            return value
        tag = loader.resolve(yaml.ScalarNode, value, event.implicit)
    if tag == f"{_TAG}str":
        return value
    if tag not in _SCALAR_TAGS:
        raise _tag_error(event, tag)
    if tag == f"{_TAG}null":
        return None
    if tag == f"{_TAG}bool":
        if value.lower() in _BOOLS:
            return _BOOLS[value.lower()]
        raise Refused(f"{value!r} is not a boolean", _line(event))
    if plain.literal_too_long(value):
        raise _number_error(event, f"a number written with {len(value)} characters")
    if tag == f"{_TAG}int" and sum(map(str.isdigit, value)) > plain.MAX_INT_DIGITS:
        raise _number_error(event, f"an integer with more than {plain.MAX_INT_DIGITS} digits")
    node = yaml.ScalarNode(tag, value)
    try:
        if tag == f"{_TAG}int":
            number = loader.construct_yaml_int(node)
        else:
            number = loader.construct_yaml_float(node)
    except (ValueError, TypeError, yaml.YAMLError):
        raise _number_error(event, f"{value[:40]!r} is not a valid number") from None
    if type(number) is float and not math.isfinite(number):
        raise _number_error(event, f"a non-finite number ({value})")
    if type(number) is int and not plain.int_ok(number):
        raise _number_error(event, f"an integer with more than {plain.MAX_INT_DIGITS} digits")
    return number


def _tag_error(event: Any, tag: str) -> Refused:
    return Refused(
        f"unsafe or unknown YAML tag {tag}; cassettes are plain data and tags like "
        "!!python/object are never executed",
        _line(event),
        "chaincassette never writes tags: remove it, restore the file from git "
        "(git checkout -- FILE) or re-record it",
    )


def _number_error(event: Any, problem: str) -> Refused:
    return Refused(
        problem,
        _line(event),
        "JSON numbers only: finite, at most "
        f"{plain.MAX_INT_DIGITS} digits; quote it to keep it as text, or re-record the cassette",
    )


def load(text: str) -> Any:
    """The data of a one-document YAML text; raises ``Refused`` or ``yaml.YAMLError``."""
    loader = _SafeLoader(text)
    try:
        return _construct(loader)
    finally:
        loader.dispose()


def compose(text: str) -> Any:
    """libyaml's node tree of ``text`` (``None``: empty), to find an error's line; only for a
    text ``load`` accepted (no aliases, bounded nesting)."""
    return yaml.compose(text, Loader=_SafeLoader)
