"""Real pytest runs: the summary, the usage record, pytest-xdist, pytest-recording beside us."""

from __future__ import annotations

import json
import os
import stat
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chaincassette.integrations.pytest_plugin import usage

MODULE = """
import pytest
from provider import ask

@pytest.mark.parametrize("n", range({count}))
def test_ask(cassette, n):
    assert ask("{prefix}%d" % n)["text"] == "{upper}%d" % n
"""


def make_suite(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_one=MODULE.format(count=3, prefix="one", upper="ONE"),
        test_two=MODULE.format(count=3, prefix="two", upper="TWO"),
    )


def summary_line(result: pytest.RunResult) -> str:
    return next(line for line in result.outlines if " used by " in line and "replayed" in line)


def test_summary_and_usage_record(provider: pytest.Pytester) -> None:
    make_suite(provider)
    recorded = provider.runpytest("--cassette-mode=once")
    assert (
        "6 cassettes used by 6 tests: 0 replayed, 6 recorded, 0 missed, 0 unused"
        in summary_line(recorded)
    )
    recorded.stdout.fnmatch_lines(
        ["*written (6), review and commit:*", "*cassettes/test_one/test_ask[[]0].yaml"]
    )
    replayed = provider.runpytest("-k", "not 2")
    assert summary_line(replayed).endswith(
        "4 cassettes used by 4 tests: 4 replayed, 0 recorded, 0 missed, 0 unused interactions; "
        "28 tokens not spent thanks to replay"
    )
    record = json.loads((provider.path / ".chaincassette" / "usage.json").read_text())
    assert sorted(record["cassettes"]) == [
        f"cassettes/test_{m}/test_ask[{n}].yaml" for m in ("one", "two") for n in (0, 1)
    ]
    assert all(entry["clean"] and entry["unused"] == [] for entry in record["cassettes"].values())
    # deselected tests still exist: their cassettes are expected, not orphaned
    assert record["modules"]["cassettes/test_one"] == [
        f"cassettes/test_one/test_ask[{n}].yaml" for n in range(3)
    ]


def test_no_summary_and_no_usage_record_when_no_test_uses_a_cassette(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "cassettes used" not in result.stdout.str()
    assert not (pytester.path / ".chaincassette").exists()


def test_usage_record_is_portable_and_readable(provider: pytest.Pytester) -> None:
    make_suite(provider)
    provider.runpytest("--cassette-mode=once", "--cassette-dir=recordings").assert_outcomes(
        passed=6
    )
    path = provider.path / ".chaincassette" / "usage.json"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    text = path.read_text()
    assert str(provider.path) not in text  # no absolute path: the same on every machine
    assert json.loads(text)["cassette_dir"] == "recordings"
    record = usage.read(path)
    assert record.rootdir == provider.path.resolve()
    assert record.cassette_dir == provider.path.resolve() / "recordings"
    before = path.stat().st_mtime_ns
    provider.runpytest("--cassette-dir=recordings").assert_outcomes(passed=6)
    assert path.read_text() == text and path.stat().st_mtime_ns == before


def test_inner_runs_raise_no_configuration_warnings(provider: pytest.Pytester) -> None:
    make_suite(provider)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        provider.runpytest("--cassette-mode=once").assert_outcomes(passed=6)
    assert [str(w.message) for w in caught if issubclass(w.category, pytest.PytestWarning)] == []


def test_xdist_two_workers_aggregate_on_the_controller(
    provider: pytest.Pytester, live_calls: Callable[[], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_suite(provider)
    provider.runpytest("--cassette-mode=once").assert_outcomes(passed=6)
    # Only the two plugins under test: the others installed here cost seconds per process.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = provider.runpytest_subprocess(
        "-p", "xdist", "-p", "chaincassette.integrations.pytest_plugin.plugin", "-n", "2"
    )
    result.assert_outcomes(passed=6)
    assert (
        "6 cassettes used by 6 tests: 6 replayed, 0 recorded, 0 missed, 0 unused"
        in summary_line(result)
    )
    assert "42 tokens not spent" in summary_line(result)
    record = json.loads((provider.path / ".chaincassette" / "usage.json").read_text())
    assert len(record["cassettes"]) == 6 and len(record["modules"]) == 2
    assert len(live_calls()) == 6


def test_coexists_with_pytest_recording(provider: pytest.Pytester) -> None:
    provider.makepyfile(
        test_both="""
        import pytest
        from provider import ask

        @pytest.mark.vcr
        def test_vcr_and_cassette(vcr, cassette):
            assert type(vcr).__module__.startswith("vcr")
            assert type(cassette).__module__.startswith("chaincassette")
            assert ask("both")["text"] == "BOTH"

        @pytest.mark.vcr
        def test_vcr_only(vcr):
            assert vcr.record_mode == "none"
        """
    )
    result = provider.runpytest("--record-mode=none", "--cassette-mode=once", "-p", "recording")
    result.assert_outcomes(passed=2)
    assert (provider.path / "cassettes" / "test_both" / "test_vcr_and_cassette.yaml").is_file()
    assert "1 cassette used by 1 test" in summary_line(result)
    help_text = provider.runpytest("--help").stdout.str()
    assert "--record-mode" in help_text and "--cassette-mode" in help_text


def test_record_mode_under_xdist_keeps_every_test_of_the_run(
    provider: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 tests sharing one marker name, 4 workers, --cassette-mode=record: the session is
    one run, so each test's open drops only what is older than the run, never another
    worker's recording (and a second run rewrites from scratch)."""
    provider.makepyfile(
        test_shared="""
        import pytest
        from provider import ask

        @pytest.mark.cassette("shared/agent")
        @pytest.mark.parametrize("number", range(40))
        def test_one(number):
            assert ask(f"question {number}")["text"] == f"QUESTION {number}"
        """
    )
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("CHAINCASSETTE_RUN", raising=False)
    plugins = ("-p", "xdist", "-p", "chaincassette.integrations.pytest_plugin.plugin")
    for _ in range(2):
        result = provider.runpytest_subprocess(*plugins, "-n", "4", "--cassette-mode=record")
        result.assert_outcomes(passed=40)
        found = list(provider.path.rglob("agent.yaml"))
        assert len(found) == 1
        prompts = sorted(i["request"]["args"]["prompt"] for i in interactions_of(found[0]))
        assert prompts == sorted(f"question {n}" for n in range(40))


def interactions_of(path: Path) -> list[dict[str, Any]]:
    import yaml

    return list(yaml.safe_load(path.read_text())["interactions"])
