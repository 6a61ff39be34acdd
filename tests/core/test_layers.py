"""The layering is enforced: ``make lint`` fails on an import cycle or a layer violation."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lint_layers import check

pytestmark = pytest.mark.skipif(
    not Path(sys.executable).with_name("lint-imports").exists(),
    reason="import-linter is not installed (dev extra)",
)


def test_main_keeps_every_contract() -> None:
    result = check([])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_planted_cycle_fails() -> None:
    result = check(["chaincassette.integrations.llama_index.codec:from . import trace"])
    assert result.returncode != 0
    assert "No cycles are allowed in chaincassette.integrations.llama_index" in result.stdout


def test_a_planted_layer_violation_fails() -> None:
    result = check(["chaincassette.cassette:from . import context"])
    assert result.returncode != 0
    assert "chaincassette.cassette is not allowed to import chaincassette.context" in result.stdout
