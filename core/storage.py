"""Reading and writing cassette files: safe, byte-stable, atomic.

YAML is the default because people review cassettes in pull requests; JSON is there
for speed and tooling. Loading never constructs objects from tags, writing goes to a
temporary file that replaces the old one in a single rename, and a file we cannot
read is reported with its path, the line and what to do.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from . import keyrules, plain, safe_yaml, transcript, yaml_emit
from .canonical import canonical_json
from .errors import CassetteFormatError, CassetteWriteError, describe_os_error

#: Version 2 is the transcript form (``transcript.py``); version 1 (requests in full) loads.
FORMAT_VERSION = 2
FORMATS = ("yaml", "json")

_SafeDumperBase: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
#: ``yaml_emit`` writes what libyaml's emitter writes; PyYAML's own emitter differs a little.
_FAST_YAML = _SafeDumperBase is not yaml.SafeDumper
_HASH = re.compile(r"[0-9a-f]{16}")
_END_MARKER = re.compile(r"(?:^|\n)\.\.\.\s*$")


class _Dumper(_SafeDumperBase):
    """Multi-line strings as literal blocks, short flat containers on one line, no aliases
    (the loader refuses them)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    if "\n" in text:
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", text)


def _represent_dict(dumper: yaml.SafeDumper, value: dict[Any, Any]) -> yaml.MappingNode:
    flow = yaml_emit.flat(value)
    return dumper.represent_mapping("tag:yaml.org,2002:map", value, flow_style=flow)


def _represent_list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.SequenceNode:
    flow = yaml_emit.flat(value)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=flow)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(dict, _represent_dict)
_Dumper.add_representer(list, _represent_list)


@dataclass
class CassetteDocument:
    """The contents of one cassette file."""

    interactions: list[dict[str, Any]] = field(default_factory=list)
    recorded_with: dict[str, str] = field(default_factory=dict)
    trace: list[dict[str, Any]] | None = None
    version: int = FORMAT_VERSION
    trace_digest: str | None = None
    """The digest of the stored trace's data (``trace_digest.data``), when the file has one."""
    deferred_trace: Callable[[], list[dict[str, Any]] | None] | None = None
    """Reads the trace of a file loaded with ``lazy_trace`` (``trace`` is then ``None``)."""
    key_rules: int = field(default_factory=lambda: keyrules.KEY_RULES_VERSION)
    """The file's key rules (1: it names none); ``meta.key_rules`` overrides per interaction."""


#: Before a YAML file's trace, the digests of its data (a replay compares it and never reads
#: the trace, half an agent cassette's text) and of its text (an edited trace is read at once).
TRACE_DIGEST = "trace_digest"
_TRACE_START = "\ntrace:\n- "
#: After the trace section only its items and the end line: no other top-level key.
_TOP_LEVEL_AFTER = re.compile(r"\n(?!\.\.\.\s*$)[^\s\-]")


def trace_digest(trace: list[dict[str, Any]]) -> str:
    return _digest(canonical_json(trace))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def detect_format(path: Path, explicit: str | None = None) -> str:
    """``json`` for an explicit choice or a ``.json`` suffix, else ``yaml``."""
    if explicit is not None:
        fmt = explicit.lower()
        if fmt == "yml":
            fmt = "yaml"
        if fmt not in FORMATS:
            raise ValueError(f"unknown cassette format {explicit!r}; expected 'yaml' or 'json'")
        return fmt
    return "json" if path.suffix.lower() == ".json" else "yaml"


def to_plain(doc: CassetteDocument) -> dict[str, Any]:
    """The document as plain data in the current format (``transcript.encode``), whatever
    version it was read from; responses and traces keep their recorded key order."""
    sections = transcript.encode(_current_rules_unsaid(doc.interactions))
    return _plain(doc, FORMAT_VERSION, keyrules.KEY_RULES_VERSION, sections)


def expanded(doc: CassetteDocument) -> dict[str, Any]:
    """The document with every request in full (what ``chaincassette show --json`` prints)."""
    interactions = [
        {
            "key": i["key"],
            **({"response_hash": i["response_hash"]} if i.get("response_hash") else {}),
            "request": transcript.key_sorted(i["request"]),
            "response": i["response"],
            **({"meta": transcript.key_sorted(i["meta"])} if i.get("meta") else {}),
        }
        for i in doc.interactions
    ]
    return _plain(doc, doc.version, doc.key_rules, {"interactions": interactions})


def _plain(
    doc: CassetteDocument, version: int, rules: int, sections: dict[str, Any]
) -> dict[str, Any]:
    plain: dict[str, Any] = {"version": version, "key_rules": rules}
    plain["recorded_with"] = transcript.key_sorted(doc.recorded_with)
    plain.update(sections)
    if doc.trace is not None:
        plain["trace"] = doc.trace
    return plain


def dumps(doc: CassetteDocument, fmt: str) -> str:
    plain = to_plain(doc)
    if fmt == "json":
        return json.dumps(plain, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    trace = plain.pop("trace", None)
    if trace is None:
        return _yaml(plain, end=True)
    section = _yaml({"trace": trace}, end=True)  # a top-level key: the file's last lines
    plain[TRACE_DIGEST] = {"data": trace_digest(trace), "text": _digest(section)}
    return _yaml(plain, end=False) + section


def _yaml(plain: dict[str, Any], *, end: bool) -> str:
    """``plain`` as libyaml writes it: by ``yaml_emit`` (faster) where it is sure of it."""
    if _FAST_YAML:
        with contextlib.suppress(yaml_emit.Unsupported):
            return yaml_emit.dump(plain, end=end)
    text: str = yaml.dump(
        plain,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000,
        default_flow_style=False,
        explicit_end=end,  # "..." ends the document: a truncated file is detected on load
    )
    return text


def loads(text: str, fmt: str, path: Path, *, lazy_trace: bool = False) -> CassetteDocument:
    """Parse and validate a cassette (``CassetteFormatError``); ``lazy_trace``: a digested
    YAML trace is left for ``deferred_trace`` to read."""
    ended = fmt != "yaml" or _ends_with_end_marker(text)  # checked first, reported last
    head, rest = _split_trace(text) if lazy_trace and fmt == "yaml" else (text, None)
    data = _parse(head, fmt, path)
    digests = data.get(TRACE_DIGEST) if rest is not None and isinstance(data, dict) else None
    if rest is not None and not (
        isinstance(digests, dict) and digests.get("text") == _digest(rest)
    ):
        head, rest = text, None  # an edited (or older) trace section: read it now
        data = _parse(text, fmt, path)
    document = _validate(data, head, fmt, path)
    document.key_rules = _key_rules(data, document.interactions, head, fmt, path)
    if rest is not None:
        document.deferred_trace = partial(_deferred_trace, rest, head.count("\n") - 1, path)
    # chaincassette 0.1 wrote version 1 files without the end line at first
    if not ended and document.version >= 2:
        raise CassetteFormatError(
            path,
            "the file does not end with the end-of-document line '...' that chaincassette "
            "writes: it was truncated, or rewritten by another tool",
            line=text.count("\n") + 1,
            hint="restore it from git (git checkout -- FILE) or re-record it; if another tool "
            "rewrote it and every interaction is complete, add a last line '...'",
        )
    return document


def _split_trace(text: str) -> tuple[str, str | None]:
    """(the text before the trace section, the section) when the trace is the last top-level
    key, as chaincassette writes it; else (the text, ``None``)."""
    start = text.rfind(_TRACE_START)
    if start < 0 or _TOP_LEVEL_AFTER.search(text, start + len(_TRACE_START)):
        return text, None
    return text[: start + 1] + "...\n", text[start + 1 :]


def _deferred_trace(section: str, offset: int, path: Path) -> list[dict[str, Any]] | None:
    """The trace section checked as a whole load would have (lines numbered as in the file)."""
    text = "\n" * offset + section
    data = _parse(text, "yaml", path)
    trace = data.get("trace") if isinstance(data, dict) else None
    _check_trace(trace, _failer(path, text, "yaml"))
    return trace


#: Top-level field: the key rules of every interaction whose ``meta.key_rules`` names none.
KEY_RULES = "key_rules"


def interaction_rules(interaction: dict[str, Any]) -> int:
    """The key rules that made a plain interaction's key (as ``loads`` resolved them)."""
    rules = (interaction.get("meta") or {}).get(KEY_RULES, keyrules.KEY_RULES_VERSION)
    return int(rules)


def _key_rules(
    data: dict[str, Any], interactions: list[dict[str, Any]], text: str, fmt: str, path: Path
) -> int:
    """The file's key rules, checked; an interaction keyed by older ones gets them in ``meta``."""
    fail = _failer(path, text, fmt)
    rules = data.get(KEY_RULES, 1)
    if type(rules) is not int or rules < 1:
        problem = f"'{KEY_RULES}' must be a version of the key rules (a whole number from 1)"
        raise fail(problem, (KEY_RULES,))
    for index, item in enumerate(interactions):
        meta = item.get("meta") or {}
        own = meta.get(KEY_RULES, rules)
        where = ("interactions", index, "meta", KEY_RULES) if KEY_RULES in meta else (KEY_RULES,)
        if own < 1:
            raise fail(
                f"interaction {index}: 'meta.{KEY_RULES}' must be a version of the key rules "
                "(a whole number from 1)",
                where,
            )
        if own > keyrules.KEY_RULES_VERSION:
            raise fail(
                f"keyed by key rules {own}, which a newer chaincassette wrote; this one knows "
                f"key rules 1…{keyrules.KEY_RULES_VERSION}",
                where,
                "upgrade chaincassette (pip install -U chaincassette)",
            )
        if own != keyrules.KEY_RULES_VERSION and KEY_RULES not in meta:
            item["meta"] = {**meta, KEY_RULES: own}
    return int(rules)


def _current_rules_unsaid(interactions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The interactions without a ``meta.key_rules`` that repeats the file's."""
    out = []
    for item in interactions:
        meta = item.get("meta")
        if meta and meta.get(KEY_RULES) == keyrules.KEY_RULES_VERSION:
            meta = {k: v for k, v in meta.items() if k != KEY_RULES}
            item = (
                {**item, "meta": meta} if meta else {k: v for k, v in item.items() if k != "meta"}
            )
        out.append(item)
    return out


def _ends_with_end_marker(text: str) -> bool:
    """Whether the last line that is not blank is ``...`` (searched in the tail only: fast)."""
    return _END_MARKER.search(text[-(len(text) - len(text.rstrip())) - 4 :]) is not None


def _parse(text: str, fmt: str, path: Path) -> Any:
    if fmt == "json":
        return _parse_json(text, path)
    try:
        return safe_yaml.load(text)
    except safe_yaml.Refused as refused:
        raise CassetteFormatError(
            path, refused.problem, line=refused.line, hint=refused.hint
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise CassetteFormatError(
            path, f"invalid YAML: {problem}", line=mark.line + 1 if mark else None
        ) from None


def _json_int(literal: str) -> int:
    if len(literal) > plain.MAX_INT_DIGITS and len(literal.lstrip("-")) > plain.MAX_INT_DIGITS:
        raise plain.PlainDataError(f"an integer with more than {plain.MAX_INT_DIGITS} digits")
    return int(literal)


def _json_int_hooks() -> dict[str, Any]:
    """An integer hook for ``json.loads`` only when Python's own digit limit is off or above
    ours (a hook costs a call per integer)."""
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    return {} if 0 < limit <= plain.MAX_INT_DIGITS else {"parse_int": _json_int}


class _KeyTwice(Exception):
    """A JSON object holding one key twice (the key is the message)."""


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key written twice: ``json.loads`` keeps the last, so a
    pasted second ``"response"`` would replay without a word (YAML's loader refuses it too)."""
    data = dict(pairs)
    if len(data) != len(pairs):
        keys = [key for key, _ in pairs]
        twice = next(key for n, key in enumerate(keys) if key in keys[:n])
        raise _KeyTwice(twice[:40])
    return data


def _json_constant(literal: str) -> Any:
    raise plain.PlainDataError(f"{literal}, which is not a JSON number")


class _NonFinite(Exception):
    """A float literal too large for a float (``1e999``): ``plain.check`` reports where."""


def _json_float(literal: str) -> float:
    """``float``, refusing what overflows (then only the nesting is left to check)."""
    value = float(literal)
    if value - value != 0:  # inf - inf is nan
        raise _NonFinite
    return value


def _parse_json(text: str, path: Path) -> Any:
    hint = (
        "JSON data only: finite numbers of at most "
        f"{plain.MAX_INT_DIGITS} digits, nested at most {plain.MAX_DEPTH} levels; restore "
        "the file from git (git checkout -- FILE) or re-record it"
    )
    numbers_checked = True  # by the hooks
    hooks = {**_json_int_hooks(), "object_pairs_hook": _json_object}
    try:
        try:
            data = json.loads(text, parse_constant=_json_constant, parse_float=_json_float, **hooks)
        except _NonFinite:  # read it again as it is, for check() to name where
            data = json.loads(text, parse_constant=_json_constant, **hooks)
            numbers_checked = False
    except json.JSONDecodeError as exc:
        raise CassetteFormatError(path, f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    except plain.PlainDataError as exc:
        raise CassetteFormatError(path, exc.problem, hint=hint) from None
    except _KeyTwice as exc:
        raise CassetteFormatError(
            path,
            f"the key {exc.args[0]!r} appears twice in one object",
            hint="keep one of the two (chaincassette never writes a key twice) or restore the "
            "file from git",
        ) from None
    except ValueError:  # an integer beyond this interpreter's int_max_str_digits
        raise CassetteFormatError(
            path, f"an integer with more than {plain.MAX_INT_DIGITS} digits", hint=hint
        ) from None
    except RecursionError:
        raise CassetteFormatError(
            path, f"data nested deeper than {plain.MAX_DEPTH} levels", hint=hint
        ) from None
    try:
        if numbers_checked:
            plain.check_depth(data)
        else:
            plain.check(data)
    except plain.PlainDataError as exc:
        where = f" at {plain.path_text(exc.where)}" if exc.where else ""
        raise CassetteFormatError(path, f"{exc.problem}{where}", hint=hint) from None
    return data


Fail = Callable[..., CassetteFormatError]


def _failer(path: Path, text: str, fmt: str) -> Fail:
    def fail(problem: str, where: tuple[Any, ...] = (), hint: str = "") -> CassetteFormatError:
        return CassetteFormatError(path, problem, line=_line_of(text, fmt, where), hint=hint)

    return fail


def _validate(data: Any, text: str, fmt: str, path: Path) -> CassetteDocument:
    fail = _failer(path, text, fmt)
    if data is None:
        raise fail(
            "the file is empty (a crash mid-write cannot cause this; was it truncated by hand?)"
        )
    if not isinstance(data, dict):
        raise fail(f"expected a mapping at the top level, found {type(data).__name__}")
    version = _version(data, fail)
    try:
        interactions = transcript.decode(data) if version >= 2 else _validate_v1(data)
    except transcript.TranscriptError as exc:
        raise fail(exc.problem, exc.where) from None
    _check_metas(interactions, fail)
    recorded_with = data.get("recorded_with") or {}
    if not isinstance(recorded_with, dict) or not all(
        isinstance(v, (str, int, float)) for v in recorded_with.values()
    ):
        raise fail(
            "'recorded_with' must be a mapping of package names to versions", ("recorded_with",)
        )
    trace = data.get("trace")
    _check_trace(trace, fail)
    digests = _trace_digests(data, fail)
    return CassetteDocument(
        interactions=interactions,
        recorded_with={str(k): str(v) for k, v in recorded_with.items()},
        trace=trace,
        version=version,
        trace_digest=digests["data"] if digests is not None else None,
    )


def _version(data: dict[str, Any], fail: Fail) -> int:
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise fail("missing or invalid 'version' field (expected an integer)")
    if version > FORMAT_VERSION:
        raise fail(
            f"format version {version} was written by a newer chaincassette; this one reads "
            f"version {FORMAT_VERSION}",
            ("version",),
            hint="upgrade chaincassette (pip install -U chaincassette)",
        )
    if version < 1:
        raise fail(f"unknown format version {version}", ("version",))
    return version


def _check_metas(interactions: list[dict[str, Any]], fail: Fail) -> None:
    for index, item in enumerate(interactions):  # ``meta`` is a mapping: the decoders check
        for name, problem in _meta_problems(item.get("meta") or {}):
            raise fail(
                f"interaction {index}: {problem}", ("interactions", index, "meta", name), _META_HINT
            )


def _trace_digests(data: dict[str, Any], fail: Fail) -> dict[str, str] | None:
    digests = data.get(TRACE_DIGEST)
    if digests is not None and not (
        isinstance(digests, dict)
        and set(digests) == {"data", "text"}
        and all(isinstance(d, str) and _HASH.fullmatch(d) for d in digests.values())
    ):
        raise fail(
            f"'{TRACE_DIGEST}' must be {{data: …, text: …}}, 16 hex digits each", (TRACE_DIGEST,)
        )
    return digests


def _check_trace(trace: Any, fail: Fail) -> None:
    if trace is None:
        return
    if not isinstance(trace, list) or not all(isinstance(node, dict) for node in trace):
        raise fail("'trace' must be a list of mappings (one per run)", ("trace",))
    broken = _trace_problem(trace)
    if broken is not None:
        raise fail(broken[1], ("trace", broken[0]), _TRACE_HINT)


def _validate_v1(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The interactions of a version 1 file (every request in full), checked."""
    interactions = transcript.items(data)
    for index, item in enumerate(interactions):
        transcript.check_item(index, item, ("interactions", index), full=True)
    for item in interactions:  # v1 stored no response hashes: what the file holds is trusted
        item["response_hash"] = transcript.response_hash(item["response"])
    return interactions


_META_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "tokens": ((int,), "a whole number of tokens"),
    "duration_ms": ((int, float), "a number of milliseconds"),
    "recorded": ((str,), "a date (YYYY-MM-DD)"),
    "model": ((str,), "a model name"),
    "key_rules": ((int,), "a version of the key rules"),
}
_META_HINT = (
    "meta is what chaincassette wrote about the recording (date, model, tokens); fix the "
    "value by hand, delete the field, or restore the file from git"
)
_TRACE_HINT = (
    "the trace is the recording run's tree: each node has an integer 'id', and its 'parent' is "
    "null or the id of an earlier node; delete the 'trace' section (replay does not need it) "
    "or restore the file from git"
)


def _meta_problems(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, problem) for each field of ``meta`` that readers use and that has the wrong type."""
    problems = []
    for name, (types, what) in _META_FIELDS.items():
        value: Any = meta.get(name)
        if value is None:
            continue
        if (
            not isinstance(value, types)
            or isinstance(value, bool)
            or (name in ("tokens", "duration_ms") and meta[name] < 0)
        ):
            problems.append((name, f"'meta.{name}' must be {what}, found {value!r}"[:200]))
    return problems


def _trace_problem(trace: list[dict[str, Any]]) -> tuple[int, str] | None:
    """(node index, problem) for a trace that is not a tree readers can walk, else ``None``."""
    depth: dict[int, int] = {}
    deepest = plain.MAX_DEPTH
    for index, node in enumerate(trace):  # ``type(…) is int``: a bool is no id
        ident, parent = node.get("id"), node.get("parent")
        if type(ident) is not int:
            return index, f"trace[{index}] has no integer 'id'"
        if parent is None:
            level = 1
        elif type(parent) is int and parent in depth:
            level = depth[parent] + 1
        else:
            return index, f"trace[{index}]: 'parent' {parent!r} is not the id of an earlier node"
        if level > deepest:
            return index, f"trace[{index}] is nested deeper than {plain.MAX_DEPTH} runs"
        if ident not in depth:
            depth[ident] = level
    return None


#: A longer file is not parsed again for an error's line number: a hostile one fails fast.
LINE_SEARCH_CHARS = 1_000_000


def _line_of(text: str, fmt: str, where: tuple[Any, ...]) -> int | None:
    """The 1-based line of a path in a YAML file, found only when reporting an error."""
    if fmt != "yaml" or not where or len(text) > LINE_SEARCH_CHARS:
        return None
    try:
        node = safe_yaml.compose(text)
    except yaml.YAMLError:
        return None
    for step in where:
        if isinstance(node, yaml.MappingNode) and isinstance(step, str):
            node = next((v for k, v in node.value if k.value == step), None)
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value)
        ):
            node = node.value[step]
        else:
            node = None
        if node is None:
            return None
    return int(node.start_mark.line) + 1 if node is not None else None


def read(path: Path, fmt: str, *, lazy_trace: bool = False) -> CassetteDocument | None:
    """The document at ``path``, or ``None`` when there is no file."""
    raw = read_bytes(path)
    return None if raw is None else loads_bytes(raw, fmt, path, lazy_trace=lazy_trace)


#: A larger file is refused unread (``CHAINCASSETTE_MAX_BYTES`` sets another limit).
MAX_CASSETTE_BYTES = 256 * 1024 * 1024
_READ_CHUNK = 1 << 20


def max_cassette_bytes() -> int:
    """``CHAINCASSETTE_MAX_BYTES``, else ``MAX_CASSETTE_BYTES``."""
    value = os.environ.get("CHAINCASSETTE_MAX_BYTES", "").strip()
    return int(value) if value.isdigit() else MAX_CASSETTE_BYTES


def read_bytes(path: Path) -> bytes | None:
    """The bytes of the file at ``path`` (``None``: no file). Only a regular file of at
    most ``max_cassette_bytes()`` is read: no read blocks on a pipe or drains ``/dev/zero``."""
    limit = max_cassette_bytes()
    try:
        _check_readable(path, os.stat(path), limit)
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CassetteFormatError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        _check_readable(path, os.fstat(fd), limit)  # what was opened, not what was stat'ed
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(_READ_CHUNK, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise CassetteFormatError(path, f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise _too_large(path, limit)
    return b"".join(chunks)


#: Opening a FIFO to read blocks until a writer comes; O_NONBLOCK returns at once.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _check_readable(path: Path, info: os.stat_result, limit: int) -> None:
    """Refuse what is not a regular file of at most ``limit`` bytes."""
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
        link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
        raise CassetteFormatError(
            path,
            f"is {kind}{link}, not a cassette file",
            hint="a cassette is a regular YAML or JSON file: point the cassette path at one",
        )
    if info.st_size > limit:
        raise _too_large(path, limit)


def _too_large(path: Path, limit: int) -> CassetteFormatError:
    return CassetteFormatError(
        path,
        f"is larger than {limit:,} bytes, the most a cassette may hold",
        hint="a cassette this large is not one chaincassette writes; split the recording "
        "over several cassettes, or set CHAINCASSETTE_MAX_BYTES to a larger limit",
    )


def loads_bytes(raw: bytes, fmt: str, path: Path, *, lazy_trace: bool = False) -> CassetteDocument:
    """``loads`` for the bytes of a file (read from disk or from git); a byte order mark
    (some editors write one) is dropped, as YAML's parser drops it and JSON's would refuse it."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)  # past the mark
        line = raw[:start].count(b"\n") + 1
        raise CassetteFormatError(path, f"is not UTF-8 text (byte {start})", line=line) from None
    return loads(text, fmt, path, lazy_trace=lazy_trace)


STALE_TEMP_SECONDS = 600.0
"""A temp file this old is debris whoever wrote it: a write takes well under a second."""
LEGACY_STALE_SECONDS = 60.0
"""For files without a writer in their name (written by chaincassette before 0.2)."""
_HOST = hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one rename; a crash leaves the old file intact.

    The temp file's name holds its writer (``<host>-<pid>``), so debris of a dead writer
    can be told from a write in progress. A symbolic link is written through: it stays a link.
    """
    path = write_target(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.{_HOST}-{os.getpid()}.", suffix=".tmp"
        )
    except OSError as exc:
        raise CassetteWriteError(path, describe_os_error(exc, path.parent, named=True)) from None
    written = False
    try:
        os.chmod(tmp, _mode_for(path))  # mkstemp creates 0600; a cassette is a normal file
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        written = True
    except OSError as exc:
        raise CassetteWriteError(path, describe_os_error(exc, path.parent, named=True)) from None
    except UnicodeError as exc:
        raise CassetteWriteError(path, f"text that is not valid Unicode: {exc}") from None
    finally:
        if not written:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    remove_debris(path)


def write_target(path: Path) -> Path:
    """The file a write of ``path`` replaces: ``path``, or the file its link points to."""
    if not os.path.islink(path):
        return path
    target = Path(os.path.realpath(path))
    if os.path.islink(target):  # realpath gives up on a loop and hands a link back
        raise CassetteWriteError(path, "is a symbolic link that loops; point it at a file")
    return target


def remove_debris(path: Path) -> list[Path]:
    """Remove what interrupted writes left beside ``path`` (temp files of dead or stale
    writers, the lock file of chaincassette before 0.2); return what was removed."""
    temp = re.compile(
        rf"\.{re.escape(path.name)}\.(?:(?P<host>[0-9a-f]{{8}})-(?P<pid>[0-9]+)\.)?"
        r"[a-z0-9_]{8}\.tmp"
    )
    legacy_lock = f".{path.name}.cclock"
    removed: list[Path] = []
    now = time.time()
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        match = temp.fullmatch(entry.name)
        if match is None and entry.name != legacy_lock:
            continue
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if match is None or match["pid"] is None:
            stale = age > LEGACY_STALE_SECONDS
        elif match["host"] == _HOST:
            stale = age > STALE_TEMP_SECONDS or not _alive(int(match["pid"]))
        else:
            stale = age > STALE_TEMP_SECONDS
        if stale:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def _alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (it may not be the writer)."""
    if pid == os.getpid() or os.name == "nt":  # on Windows, signal 0 is CTRL_C_EVENT
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, ValueError, OverflowError):
        return True  # another user's process, or a pid we cannot ask about: assume alive
    return True


def _mode_for(path: Path) -> int:
    """The existing file's permissions, or 0o644 narrowed by the umask for a new one."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask & 0o777
