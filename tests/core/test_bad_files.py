"""Every bad cassette file ends in ``CassetteFormatError``: at load, in replay, in record mode
and in each review command (``show``, ``ls``, ``verify``, ``diff``, ``prune``).

Hand-picked hostile files first (the YAML alias bomb, huge numbers, deep nesting, non-finite
floats, wrong field types, non-string keys), then a property-based fuzz over mutations of
real cassettes (the committed examples).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaincassette import Cassette, CassetteFormatError, CassetteMiss, storage
from chaincassette.cli import build_parser, compare, listing, main, prune, show, verify
from chaincassette.plain import MAX_DEPTH, MAX_INT_DIGITS, PlainDataError, check, fits_trivially

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: The hand-mutation cases edit the block-style text of the version 1 copy of the example
#: (version 1 files still load, so every check applies to them); the fuzz test mutates the
#: current examples too.
SUPERVISOR = Path(__file__).resolve().parents[1] / "examples" / "v1_cassettes" / "supervisor.yaml"


def bomb(level: int) -> str:
    """The supervisor example with its first response replaced by a ``level``-deep alias bomb
    (``&l0`` is nine strings, each next level nine aliases of the one before)."""
    text = SUPERVISOR.read_text()
    start = text.index("\n  response:\n") + 1
    end = text.index("\n  meta:\n", start) + 1
    lines = ["  response:", "    l0: &l0 [" + ", ".join(["lol"] * 9) + "]"]
    for n in range(1, level + 1):
        lines.append(f"    l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]")
    padding = "\n".join(f"    pad{n}: {'x' * 60}" for n in range(30))  # to the 18 KB of the issue
    return text[:start] + "\n".join(lines) + "\n" + padding + "\n" + text[end:]


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


PARSER = build_parser()
HANDLERS = {"show": show, "ls": listing, "verify": verify, "diff": compare, "prune": prune}


def run_cli(*argv: str) -> tuple[int, str]:
    """What ``chaincassette ARGV`` prints and returns (the parser built once: it is slower
    than reading a small cassette, and the fuzz runs each command hundreds of times)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        args = PARSER.parse_args(list(argv))
        code = HANDLERS[args.command].run(args)
    return code, out.getvalue()


def usage_record(root: Path, cassette: Path) -> Path:
    """A usage record (what the pytest plugin writes) that makes ``prune`` read ``cassette``."""
    record = root / ".chaincassette" / "usage.json"
    record.parent.mkdir(exist_ok=True)
    entry = {
        "tests": ["test_x"],
        "clean": True,
        "unused": [0],
        "sha256": hashlib.sha256(cassette.read_bytes()).hexdigest(),
    }
    record.write_text(
        json.dumps(
            {
                "version": 1,
                "rootdir": str(root),
                "cassettes": {cassette.relative_to(root).as_posix(): entry},
                "modules": {},
            }
        )
    )
    return record


def every_entry_point(path: Path, original: Path) -> list[str]:
    """Load ``path`` every way chaincassette does; return the errors (all CassetteFormatError,
    or the test fails on whatever else escaped)."""
    errors = []
    for mode in ("replay", "record", "new_episodes", "once"):
        try:
            cassette = Cassette(path, mode=mode)
            cassette.load()
            if mode == "replay":
                for interaction in cassette.interactions[:3]:
                    with contextlib.suppress(CassetteMiss):
                        cassette.begin(interaction.request)
                with contextlib.suppress(CassetteMiss):
                    cassette.begin({"kind": "chat", "messages": [{"role": "user", "content": "?"}]})
                cassette.stats  # noqa: B018 - counts tokens of what was played
        except CassetteFormatError as error:
            assert str(path) in str(error) and "what to do:" in str(error)
            errors.append(str(error))
    root = path.parent
    for argv in (
        ("show", str(path)),
        ("show", "--json", str(path)),
        ("ls", str(root)),
        ("verify", str(root)),
        ("diff", str(original), str(path)),
    ):
        code, out = run_cli(*argv)
        assert code in (0, 1, 2), (argv, out)
        if errors and argv[0] in ("show", "verify", "diff"):
            assert code != 0 and path.name in out, (argv, out)
    record = usage_record(root, path)
    code, out = run_cli("prune", str(root), "--usage", str(record))
    assert code == 0, out
    if errors:
        assert path.name in out and "skipped" in out, out
    return errors


@pytest.fixture
def original(tmp_path: Path) -> Path:
    folder = tmp_path / "originals"
    folder.mkdir()
    path = folder / "original.yaml"
    path.write_text(SUPERVISOR.read_text())
    return path


def test_alias_bomb_is_refused_at_its_first_anchor(tmp_path: Path, original: Path) -> None:
    text = bomb(8)  # 9**9 strings once expanded
    assert 17_000 < len(text.encode()) < 20_000
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    anchor = line_of(text, "&l0")
    with pytest.raises(CassetteFormatError) as info:
        Cassette(path).load()
    assert info.value.line == anchor and "anchor &l0" in info.value.problem
    assert "never writes anchors" in info.value.hint
    errors = every_entry_point(path, original)
    assert len(errors) == 4 and all(f"bomb.yaml:{anchor}:" in e for e in errors)
    for argv in (["show", str(path)], ["verify", str(path)], ["diff", str(original), str(path)]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(argv)  # the console script's own entry point
        assert code in (1, 2) and f"bomb.yaml:{anchor}: the YAML anchor &l0" in out.getvalue()


def test_an_alias_is_refused_where_it_is(tmp_path: Path) -> None:
    text = SUPERVISOR.read_text().replace("temperature: 0.7", "temperature: *t", 1)
    path = tmp_path / "alias.yaml"
    path.write_text(text)
    with pytest.raises(CassetteFormatError, match=r"alias\.yaml:\d+: the YAML alias \*t") as info:
        Cassette(path).load()
    assert info.value.line == line_of(text, "*t")


def with_first(change: str) -> str:
    """The supervisor example with ``change`` applied: ``old => new`` on the first match."""
    old, new = change.split(" => ")
    text = SUPERVISOR.read_text()
    assert old in text
    return text.replace(old, new, 1)


DEEP = "[" * 1000 + "]" * 1000
BAD_YAML = {
    "huge integer": ("max_tokens: 96", "max_tokens: " + "9" * 5000, "more than 4300 digits"),
    "huge hex integer": ("max_tokens: 96", "max_tokens: 0x" + "f" * 4000, "more than 4300"),
    "huge literal": ("max_tokens: 96", "max_tokens: " + "9" * 20000, "20000 characters"),
    "deep nesting": ("max_tokens: 96", f"max_tokens: {DEEP}", "nesting depth"),  # libyaml's
    "nesting past the limit": ("max_tokens: 96", f"max_tokens: {DEEP[870:-870]}", "deeper than"),
    "deep block nesting": (
        "max_tokens: 96",
        "max_tokens:\n" + "".join(f"{'  ' * (n + 3)}k:\n" for n in range(150)) + "        0",
        f"deeper than {MAX_DEPTH}",
    ),
    "infinity": ("temperature: 0.7", "temperature: .inf", "non-finite number (.inf)"),
    "nan": ("temperature: 0.7", "temperature: .nan", "non-finite number (.nan)"),
    "float overflow": ("temperature: 0.7", "temperature: 1.0e+999", "non-finite"),
    "tokens: many": ("    tokens: ", "    tokens: many\n    x: ", "'meta.tokens' must be"),
    "negative tokens": ("    tokens: ", "    tokens: -5\n    x: ", "'meta.tokens' must be"),
    "integer request key": ("    kind: chat", "    1: chat", "key that is not a string (1)"),
    "null key": ("    kind: chat", "    null: chat", "key that is not a string (None)"),
    "list key": ("    kind: chat", "    ? [a]\n    : chat", "key that is not a string"),
    "key twice": ("    kind: chat", "    kind: chat\n    kind: chat", "'kind' appears twice"),
    "interactions not a list": ("interactions:\n", "interactions: 3\nx:\n", "must be a list"),
    "request not a mapping": (
        "  request:\n    kind: chat",
        "  request: [kind]\n  x:\n    kind: chat",
        "'request' must be a mapping",
    ),
    "response missing": ("  response:\n", "  reply:\n", "has no 'response'"),
    "trace node not a mapping": (
        "trace:\n- id: 1",
        "trace:\n- 7\n- id: 1",
        "'trace' must be a list of mappings",
    ),
    "trace cycle": ("- id: 2\n  parent: 1", "- id: 2\n  parent: 2", "trace[1]"),
    "recorded_with nested": ("  python: '3.11'", "  python: {a: 1}", "'recorded_with'"),
    "merge key": ("    kind: chat", "    <<: {kind: chat}", "YAML tag tag:yaml.org,2002:merge"),
    "python tag": (
        "    kind: chat",
        "    kind: !!python/name:os.system ''",
        "unsafe or unknown YAML tag",
    ),
    "two documents": ("version: 1", "version: 1\n---\nversion: 1", "more than one YAML document"),
}

ON_THE_LINE = {
    "huge integer",
    "huge hex integer",
    "huge literal",
    "nesting past the limit",
    "infinity",
    "nan",
    "float overflow",
    "tokens: many",
    "negative tokens",
    "integer request key",
    "null key",
    "key twice",
    "merge key",
    "python tag",
}


@pytest.mark.parametrize("case", sorted(BAD_YAML))
def test_hostile_yaml_is_a_format_error_everywhere(
    case: str, tmp_path: Path, original: Path
) -> None:
    old, new, problem = BAD_YAML[case]
    text = SUPERVISOR.read_text().replace(old, new, 1)
    assert text != SUPERVISOR.read_text()
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(CassetteFormatError) as info:
        Cassette(path).load()
    assert problem in str(info.value), str(info.value)
    assert info.value.line is not None and f"bad.yaml:{info.value.line}:" in str(info.value)
    if case in ON_THE_LINE:  # the line of the refused value itself
        assert new.split("\n")[0].strip()[:12] in text.splitlines()[info.value.line - 1]
    assert len(every_entry_point(path, original)) == 4


def json_cassette(tmp_path: Path, name: str = "c.json") -> tuple[Path, str]:
    document = storage.read(SUPERVISOR, "yaml")
    assert document is not None
    text = storage.dumps(document, "json")
    return tmp_path / name, text


BAD_JSON = {
    "huge integer": ('"max_tokens": 96', '"max_tokens": ' + "9" * 5000, "more than 4300 digits"),
    "deep nesting": ('"max_tokens": 96', '"max_tokens": ' + DEEP, f"deeper than {MAX_DEPTH}"),
    "very deep nesting": (
        '"max_tokens": 96',
        '"max_tokens": ' + "[" * 100_000 + "]" * 100_000,
        f"deeper than {MAX_DEPTH}",
    ),
    "just too deep": (
        '"max_tokens": 96',
        '"max_tokens": ' + "[" * 130 + "]" * 130,
        f"deeper than {MAX_DEPTH}",
    ),
    "NaN": ('"temperature": 0.7', '"temperature": NaN', "NaN, which is not a JSON number"),
    "Infinity": ('"temperature": 0.7', '"temperature": -Infinity', "-Infinity"),
    "float overflow": ('"temperature": 0.7', '"temperature": 1e999', "non-finite"),
    "tokens: many": ('"tokens": ', '"tokens": "many", "x": ', "'meta.tokens' must be"),
    "key twice": ('"kind": "chat"', '"kind": "chat", "kind": "chat"', "'kind' appears twice"),
    "response not JSON-shaped": (
        '"interactions": [',
        '"interactions": [7, ',
        "interaction 0 is not a mapping",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_hostile_json_is_a_format_error_everywhere(
    case: str, tmp_path: Path, original: Path
) -> None:
    old, new, problem = BAD_JSON[case]
    path, text = json_cassette(tmp_path)
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(CassetteFormatError) as info:
        Cassette(path).load()
    assert problem in str(info.value) and str(path) in str(info.value)
    assert len(every_entry_point(path, original)) == 4


def test_the_limits_leave_real_data_alone(tmp_path: Path) -> None:
    """Nesting to the limit, an integer of 4300 digits and unusual-but-plain values load in
    both formats, and record → load round-trips them."""
    nested: Any = "leaf"
    for _ in range(MAX_DEPTH - 8):  # the response sits a few levels into the document
        nested = [nested]
    response = {"nested": nested, "big": int("9" * 4300), "small": -1e-300, "yes": "yes"}
    for name in ("c.yaml", "c.json"):
        cassette = Cassette(tmp_path / name, mode="record")
        cassette.begin({"kind": "call", "n": 1}).answer(lambda: response)
        cassette.save()
        assert (
            Cassette(tmp_path / name).begin({"kind": "call", "n": 1}).answer(lambda: None)
            == response
        )


def test_recording_a_value_the_loader_would_refuse_fails_at_once(tmp_path: Path) -> None:
    nested: Any = 1
    for _ in range(MAX_DEPTH + 1):
        nested = [nested]
    cassette = Cassette(tmp_path / "c.yaml", mode="record")
    with pytest.raises(TypeError, match=f"nested deeper than {MAX_DEPTH}"):
        cassette.begin({"kind": "call"}).answer(lambda: nested)
    assert not cassette.dirty


def test_a_recording_skips_the_limit_walk_only_where_its_text_cannot_break_a_limit() -> None:
    """``json_copy`` walks a recording for the limits unless its JSON text proves them kept:
    every value the short cut passes, the walk passes too."""
    deep: Any = 1
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    assert not fits_trivially(json.dumps(deep))  # one level past the limit: walked, refused
    with pytest.raises(PlainDataError):
        check(deep)
    assert fits_trivially(json.dumps(deep[0][0]))  # below it
    assert not fits_trivially(json.dumps(int("9" * MAX_INT_DIGITS)))  # long text: walked
    assert not fits_trivially(json.dumps("[" * MAX_DEPTH))  # brackets in a string count too
    for value in ({"a": [{"b": 1.5}] * 40}, "x" * (MAX_INT_DIGITS - 3), deep[0][0], -1e-300):
        if fits_trivially(json.dumps(value)):
            check(value)


# -- the fuzz -----------------------------------------------------------------------------


def _bases() -> dict[str, tuple[str, str]]:
    """Real cassettes to mutate: the committed examples (cut to a few interactions so each
    example runs in milliseconds), in YAML and in JSON."""
    bases = {}
    for name in ("supervisor", "llamaindex_workflow", "recorded_function"):
        document = storage.read(EXAMPLES / name / "cassette.yaml", "yaml")
        assert document is not None
        document.interactions = document.interactions[:2]
        if document.trace:
            document.trace = document.trace[:6]
        bases[f"{name}.yaml"] = ("yaml", storage.dumps(document, "yaml"))
        bases[f"{name}.json"] = ("json", storage.dumps(document, "json"))
    return bases


BASES = _bases()
PARSED = {
    name: json.loads(storage.dumps(storage.loads(text, fmt, Path(name)), "json"))
    for name, (fmt, text) in BASES.items()
}
SafeDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
SENTINEL = "@@FUZZ@@"
YAML_SNIPPETS = (
    " &a",
    " *a",
    " !!python/object:os.system",
    " !!binary",
    " !x",
    " &a [*a]",
    " {? [k]: v}",
    " 1: 2",
    " .inf",
    " -.nan",
    " 0x" + "f" * 5000,
    " <<: *a",
)
JSON_SNIPPETS = (
    "NaN",
    "Infinity",
    "1e999",
    "9" * 5000,
    '{"a": ',
    "[[[",
    "]",
    '"\\ud800"',
    "{1: 2}",
)
SWAPS = ("many", 7, -1, 3.5, True, None, [], {}, ["x"], {"a": 1}, "", "2026-13-45")


def _paths(value: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [where]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*where, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*where, index))
    return found


def _replace(value: Any, where: tuple[Any, ...], new: Any) -> Any:
    if not where:
        return new
    head, *rest = where
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _replace(value[head], tuple(rest), new)
    return copy


@st.composite
def mutations(draw: st.DrawFn) -> tuple[str, str, bytes]:
    """(base name, format, mutated bytes) of one mutation of a real cassette."""
    name = draw(st.sampled_from(sorted(BASES)))
    fmt, text = BASES[name]
    raw = text.encode()
    kind = draw(
        st.sampled_from(("flip", "truncate", "insert", "swap", "huge", "deep", "nonfinite"))
    )
    if kind == "flip":
        data = bytearray(raw)
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return name, fmt, bytes(data)
    if kind == "truncate":
        return name, fmt, raw[: draw(st.integers(0, len(raw) - 1))]
    if kind == "insert":
        lines = text.splitlines(keepends=True)
        index = draw(st.integers(0, len(lines) - 1))
        snippet = draw(st.sampled_from(YAML_SNIPPETS if fmt == "yaml" else JSON_SNIPPETS))
        line = lines[index]
        at = line.find(": ") + 1 if ": " in line and draw(st.booleans()) else len(line.rstrip())
        lines[index] = line[:at] + snippet + line[at:]
        return name, fmt, "".join(lines).encode()
    data = PARSED[name]
    where = draw(st.sampled_from(_paths(data)[1:]))
    if kind == "swap":
        new: Any = draw(st.sampled_from(SWAPS))
        if fmt == "yaml" and draw(st.booleans()):
            new = draw(st.sampled_from(({1: "x"}, {None: 1}, {True: 2}, {1.5: 3})))
        literal = None
    else:
        new = SENTINEL
        size = draw(st.integers(MAX_DEPTH - 2, 3000))
        literal = {
            "huge": draw(
                st.sampled_from(("9" * 4301, "-" + "1" * 9000, "1" * 5000 + ".5", "1e400"))
            ),
            "deep": draw(
                st.sampled_from(("[" * size + "]" * size, '{"a": ' * size + "1" + "}" * size))
            ),
            "nonfinite": draw(
                st.sampled_from((".inf", "-.inf", ".nan") if fmt == "yaml" else ("NaN", "Infinity"))
            ),
        }[kind]
    mutated = _replace(data, where, new)
    if fmt == "yaml":
        out = yaml.dump(mutated, Dumper=SafeDumper, sort_keys=False, width=10**6, explicit_end=True)
    else:
        out = json.dumps(mutated, indent=1)
    if literal is not None:
        out = re.sub(f"['\"]?{SENTINEL}['\"]?", lambda _: literal, out, count=1)
    return name, fmt, out.encode()


def test_fuzzed_cassettes_only_ever_raise_format_errors() -> None:
    """At least 300 distinct mutations: loading (replay, record, new_episodes, once) and every
    review command succeed or end in CassetteFormatError, never another exception."""
    seen: set[bytes] = set()
    refused: list[str] = []

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "originals").mkdir()
        originals = {}
        for name, (_, text) in BASES.items():
            originals[name] = root / "originals" / name
            originals[name].write_text(text)
        (root / "cassettes").mkdir()

        @settings(
            max_examples=330,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(mutations())
        def check(mutation: tuple[str, str, bytes]) -> None:
            name, fmt, raw = mutation
            seen.add(hashlib.sha256(raw).digest())
            path = root / "cassettes" / f"fuzzed.{fmt}"
            for old in (root / "cassettes").glob("fuzzed.*"):
                old.unlink()
            path.write_bytes(raw)
            refused.extend(every_entry_point(path, originals[name]))

        check()
    assert len(seen) >= 300, len(seen)
    assert len(refused) > 300  # most mutations break the file (4 loads each)


def test_the_dumper_never_writes_anchors_even_for_a_shared_value(tmp_path: Path) -> None:
    shared = {"content": "the same answer", "usage": {"total_tokens": 3}}
    key = "a" * 64
    document = storage.CassetteDocument(
        interactions=[
            {"key": key, "request": {"n": n}, "response": shared, "meta": {}} for n in range(2)
        ],
        trace=[{"id": 1, "parent": None, "outputs": shared}],
    )
    text = storage.dumps(document, "yaml")
    assert "&" not in text and "*" not in text
    loaded = storage.loads(text, "yaml", tmp_path / "c.yaml")
    assert [i["response"] for i in loaded.interactions] == [shared, shared]


def test_a_json_float_overflow_is_named_where_it_is(tmp_path: Path) -> None:
    """The parser's float hook refuses ``1e999``; the file is then read again so that the
    error still names the path to the value, as the full check of the data does."""
    path, text = json_cassette(tmp_path)
    path.write_text(text.replace('"temperature": 0.7', '"temperature": 1e999', 1))
    with pytest.raises(CassetteFormatError, match=r"non-finite number \(inf\).* at interactions\["):
        Cassette(path).load()
