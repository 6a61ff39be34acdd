"""The fast YAML writer writes what PyYAML's dumper (over libyaml) writes, byte for byte.

Checked on thousands of generated documents whose strings mix the characters that change
a scalar's style (indicators, quotes, blanks, line breaks, non-printables, look-alikes of
numbers, booleans and dates), and on every cassette in the repository. Where the writer
is not sure it raises ``Unsupported`` and storage falls back to PyYAML; that stays rare.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from chaincassette import storage, yaml_emit

ROOT = Path(__file__).resolve().parents[2]

FRAGMENTS = [
    "a", "hello world", "key", "x" * 130, "é", "日本", "😀", "\xa0", "\u2028", "\x85", "\ufeff",
    "\x00", "\x7f", "\t", "\r", " ", "  ", "\n", "\n\n", ":", ": ", " :", "#", " #", "-", "- ",
    "?", "? ", ",", "[", "]", "{", "}", "'", '"', "\\", "&", "*", "!", "|", ">", "%", "@", "`",
    "---", "...", "1", "-5", "1.5", "1e5", "0x1f", "0o17", "1_000", "yes", "No", "on", "null",
    "Null", "~", "true", "False", "2024-01-01", "2024-01-01 10:00:00", "<<", "=", ".inf", ".nan",
    "=foo", "a:b", "a,b", "it's", "say \"hi\"", "C:\\path", "call_1", "<redacted:openai-key>",
]  # fmt: skip


def text(rng: random.Random) -> str:
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.choice([0, 1, 1, 2, 3, 6])))


def key(rng: random.Random) -> str:
    """Keys break lines rarely (libyaml writes those as ``? key``, left to PyYAML)."""
    spelled = text(rng)[:40]
    if rng.random() < 0.95:
        for line_break in "\n\r\x85\u2028\u2029":
            spelled = spelled.replace(line_break, "")
    return spelled


def value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.45:
        return rng.choice(
            [text(rng), text(rng), rng.randint(-(10**6), 10**6), rng.random() * 1e20, True, None]
        )
    if roll < 0.75:
        return {key(rng): value(rng, depth + 1) for _ in range(rng.randint(0, 5))}
    return [value(rng, depth + 1) for _ in range(rng.randint(0, 5))]


def pyyaml(plain: dict[str, Any], end: bool) -> str:
    text: str = yaml.dump(
        plain,
        Dumper=storage._Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000,
        default_flow_style=False,
        explicit_end=end,
    )
    return text


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="the writer copies libyaml's emitter")
def test_generated_documents_are_written_as_libyaml_writes_them() -> None:
    rng = random.Random(282)
    unsupported = 0
    for number in range(3000):
        document = {key(rng) or "k": value(rng, 0) for _ in range(rng.randint(1, 4))}
        end = number % 2 == 0
        try:
            fast = yaml_emit.dump(document, end=end)
        except yaml_emit.Unsupported:
            unsupported += 1
            continue
        assert fast == pyyaml(document, end), json.dumps(document, ensure_ascii=False)
    assert unsupported < 600  # line breaks other than \n and long keys are mixed in on purpose


def test_flat_decides_as_before() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        item = value(rng, 2)
        if isinstance(item, (dict, list)):
            spelled = json.dumps(item, ensure_ascii=False, default=str)
            old = (
                all(
                    not (isinstance(i, (dict, list)) and i)
                    and not (isinstance(i, str) and ("\n" in i or len(i) > yaml_emit.FLOW_CHARS))
                    for i in (item.values() if isinstance(item, dict) else item)
                )
                and len(spelled) - spelled.count('"') <= yaml_emit.FLOW_CHARS
            )
            assert yaml_emit.flat(item) == old, item


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="the writer copies libyaml's emitter")
def test_every_cassette_of_the_repository_is_written_unchanged() -> None:
    paths = sorted((ROOT / "examples").rglob("*.yaml")) + sorted((ROOT / "tests").rglob("*.yaml"))
    assert len(paths) >= 6
    for path in paths:
        document = storage.read(path, "yaml")
        assert document is not None
        plain = storage.to_plain(document)
        trace = plain.pop("trace", None)
        assert yaml_emit.dump(plain, end=trace is None) == pyyaml(plain, trace is None), path
        if trace is not None:
            assert yaml_emit.dump({"trace": trace}, end=True) == pyyaml({"trace": trace}, True)


def test_what_it_cannot_be_sure_of_is_left_to_pyyaml() -> None:
    for document in ({"k": "a\u2028b"}, {"x" * 200: 1}, {"a\nb": 1}, {"k": "\ud800"}):
        with pytest.raises(yaml_emit.Unsupported):
            yaml_emit.dump(document, end=False)
        assert storage.dumps(storage.CassetteDocument(), "yaml")  # the caller's fallback
