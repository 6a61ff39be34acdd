"""Reading YAML as plain JSON data, refusing whatever a cassette never holds.

A cassette is data a program replays, often from a pull request or a bug report, so
loading it must cost what reading it costs and build nothing but dicts, lists, strings,
numbers, booleans and ``None``. PyYAML's safe loader is not enough: its composer turns an
alias bomb (a few KB of ``&a [*b, *b, ...]`` standing for billions of strings) into a
shared graph that every later walk of the data explodes, it recurses once per nesting
level, and it accepts non-string keys, ``.inf`` and integers of any length. Here the
data is built from libyaml's events instead, and the first anchor, alias, tag, key that
is not a string, number out of bounds or level past ``plain.MAX_DEPTH`` is refused where
it stands, with its line.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from . import plain

_SafeLoaderBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _SafeLoader(_SafeLoaderBase):
    """libyaml's parser and the safe resolver, narrowed to JSON's types.

    A cassette replays exactly what it holds, so an unquoted date must stay the string
    it looks like, not come back as a ``date``. Only the parser's events are used:
    ``_construct`` builds the data from them itself (see there for why).
    """


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
#: First characters of a plain scalar that an implicit resolver may turn into something other
#: than a string (digits, signs, ``.``, ``~``, the letters of true/false/yes/no/on/off/null,
#: and ``<``/``=``, which the safe resolver maps to tags a cassette refuses); any other plain
#: scalar, and every quoted one, is the string it spells without asking the resolver.
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
    """The document's data, built from the parser's events without recursion.

    PyYAML's composer expands an alias bomb (a few KB of ``&a [*b, *b, ...]`` that stands
    for billions of strings) into a shared graph that every later walk of the data
    explodes, and recurses once per nesting level. Building from events instead refuses
    the first anchor or alias before anything is expanded, refuses nesting beyond
    ``plain.MAX_DEPTH`` when it is opened, and checks each scalar as it is read, so a
    hostile file costs what reading it costs.
    """
    get_event = loader.get_event
    get_event()  # StreamStartEvent
    if type(get_event()) is yaml.StreamEndEvent:
        return None  # an empty file
    root: Any = None
    plain_values: dict[str, Any] = {}  # each distinct plain scalar is resolved once
    keys: dict[str, str] = {}  # one string object per distinct mapping key: less to hold
    stack: list[Any] = []  # the open containers: a list, or a _Map while it is read
    while True:
        event = get_event()
        kind = type(event)
        if kind is yaml.ScalarEvent:
            if event.anchor is not None:
                raise _anchor(event)
            value = event.value
            if event.tag is None and (not event.implicit[0] or value[:1] not in _RESOLVED):
                pass  # quoted, or plain with no resolver for its first character: a string
            elif event.tag is None:  # plain: its value depends on its text alone
                text = value
                value = plain_values.get(text, _NO_KEY)
                if value is _NO_KEY:
                    value = plain_values[text] = _scalar(loader, event)
            else:
                value = _scalar(loader, event)
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            value = stack.pop()
            if type(value) is _Map:
                value = value.data
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            if event.anchor is not None:
                raise _anchor(event)
            if event.tag not in _COLLECTION_TAGS[kind]:
                raise _tag_error(event, event.tag)
            if len(stack) >= plain.MAX_DEPTH:
                raise Refused(
                    f"data nested deeper than {plain.MAX_DEPTH} levels",
                    _line(event),
                    "a cassette holds JSON-like data a few levels deep; this file was not "
                    "written by chaincassette: restore it from git or re-record it",
                )
            if stack and type(stack[-1]) is _Map and stack[-1].key is _NO_KEY:
                raise _key_error(event, "a mapping or list")
            stack.append(_Map() if kind is yaml.MappingStartEvent else [])
            continue
        elif kind is yaml.AliasEvent:
            raise Refused(f"the YAML alias *{event.anchor}", _line(event), _ALIAS_HINT)
        elif kind is yaml.DocumentEndEvent:
            break
        else:  # pragma: no cover - the parser emits nothing else inside a document
            raise Refused(f"unexpected YAML event {kind.__name__}", _line(event))
        if not stack:
            root = value
            continue
        top = stack[-1]
        if type(top) is list:
            top.append(value)
        elif top.key is _NO_KEY:
            if type(value) is not str:
                raise _key_error(event, repr(value)[:40])
            top.key = keys.setdefault(value, value)
        else:
            top.data[top.key] = value
            top.key = _NO_KEY
    if type(get_event()) is not yaml.StreamEndEvent:
        raise Refused("the file holds more than one YAML document", _line(event) + 1)
    return root


class _Map:
    """A mapping being read: its data so far and the key waiting for its value."""

    __slots__ = ("data", "key")

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.key: Any = _NO_KEY


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
    """libyaml's node tree of ``text`` (``None`` for an empty one), for finding the line
    of a path when reporting an error; only for a text ``load`` accepted (no aliases,
    bounded nesting)."""
    return yaml.compose(text, Loader=_SafeLoader)
