"""pytest entry point: options, ini settings, the ``cassette`` marker and fixture, hooks.

Registration only; ``runner.CassetteRunner`` does the work. Every name is prefixed
``cassette``/``chaincassette`` so it coexists with pytest-recording, syrupy and langsmith.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from chaincassette import patching, runs
from chaincassette.credentials import PLACEHOLDERS
from chaincassette.modes import RecordMode

from . import guard
from . import settings as settings_module
from .runner import WORKER_OUTPUT_KEY, CassetteRunner
from .stash import forget

if TYPE_CHECKING:
    from chaincassette.cassette import Cassette

RUNNER = pytest.StashKey[CassetteRunner]()
#: Releases the session's placeholder keys (held while the run replays).
KEYS = pytest.StashKey[Callable[[], None]]()
#: The run a session replaced (a session is one run, its xdist workers included).
PREVIOUS_RUN = pytest.StashKey[str | None]()
#: The class patches installed when the session began (those it did not install stay).
PATCHED_BEFORE = pytest.StashKey[list[patching.Patches]]()
MARKER_HELP = (
    "cassette(name=None, *, mode=None, **options): run the test inside a chaincassette "
    "cassette (<test module dir>/cassettes/<module>/<test>.yaml unless name is given); "
    "options go to chaincassette.Cassette: replay_tools=True, allow_playback_repeats=True, "
    "ignore=[...], normalizers=[...], format='json', redact_patterns=[...], allow_secrets=[...]"
)


def _mode_argument(value: str) -> str:
    try:
        return RecordMode.parse(value).value
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaincassette", "chaincassette: record and replay LLM calls")
    group.addoption(
        "--cassette-mode",
        dest="chaincassette_mode",
        default=None,
        type=_mode_argument,
        metavar="MODE",
        help="record mode for every cassette: replay (default), once, new_episodes, record, off. "
        "Beats CHAINCASSETTE_MODE, markers and the ini setting; the only way to record on CI.",
    )
    group.addoption(
        "--cassette-dir",
        dest="chaincassette_dir",
        default=None,
        metavar="DIR",
        help="keep cassettes in DIR/<module path>/ instead of <test module dir>/cassettes/<module>/",
    )
    group.addoption(
        "--cassette-strict",
        dest="chaincassette_strict",
        action="store_true",
        default=None,
        help="fail a test whose cassette has interactions it never played or that would write "
        "or change a cassette (for CI)",
    )
    guard.add_options(group, parser)
    parser.addini("cassette_mode", "default chaincassette record mode (replay)", default="")
    parser.addini("cassette_dir", "folder for chaincassette cassettes", default="")
    parser.addini(
        "cassette_scope",
        "what --cassette-mode, the CI rule and --cassette-strict govern: 'all' cassettes the "
        "tests open (default) or only the 'fixture' ones (for suites testing cassette tooling)",
        default="all",
    )
    parser.addini(
        "cassette_strict",
        "chaincassette strict mode (see --cassette-strict)",
        type="bool",
        default=False,
    )


def _settings(config: pytest.Config, option: argparse.Namespace) -> settings_module.Settings:
    strict = getattr(option, "chaincassette_strict", None)
    inifile_dir = Path(config.inipath).parent if config.inipath else Path(config.rootpath)
    return settings_module.build(
        cli_mode=getattr(option, "chaincassette_mode", None),
        ini_mode=str(config.getini("cassette_mode") or ""),
        cli_dir=getattr(option, "chaincassette_dir", None),
        ini_dir=str(config.getini("cassette_dir") or ""),
        ini_dir_base=inifile_dir,
        invocation_dir=Path(config.invocation_params.dir),
        strict=bool(strict) if strict is not None else bool(config.getini("cassette_strict")),
        scope=str(config.getini("cassette_scope") or "all"),
    )


def _hold_placeholder_keys(config: pytest.Config, settings: settings_module.Settings) -> None:
    """A run that replays needs no provider key (``chaincassette.credentials``)."""
    if KEYS not in config.stash and settings.replays:
        config.stash[KEYS] = PLACEHOLDERS.hold()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Before any conftest.py is imported: a client one builds at import time needs a key."""
    with contextlib.suppress(ValueError):  # a bad mode: pytest_configure reports it
        _hold_placeholder_keys(
            early_config, _settings(early_config, early_config.known_args_namespace)
        )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    config.addinivalue_line("markers", guard.MARKER_HELP)
    config.stash[PATCHED_BEFORE] = patching.installed()
    # xdist workers inherit their controller's run: --cassette-mode=record keeps all they record
    if not hasattr(config, "workerinput"):
        config.stash[PREVIOUS_RUN] = runs.start_run()
    try:
        resolved = _settings(config, config.option)
    except ValueError as exc:
        raise pytest.UsageError(f"chaincassette: {exc}") from None
    _hold_placeholder_keys(config, resolved)
    runner = CassetteRunner(config, resolved)
    config.stash[RUNNER] = runner
    runner.install_policy()  # xdist workers run this hook too, with the same options


def _end_run(previous: str | None) -> None:
    """End the session's run: its cassettes' state folders are cleaned up by the engine,
    which a session whose processes recorded nothing never imports."""
    run = runs.end_run(previous)
    if runs.touched(run):
        from chaincassette.store import finish_run

        finish_run(run)
    else:
        runs.forget(run, over=not runs.run_alive(run, besides_me=True))


def pytest_unconfigure(config: pytest.Config) -> None:
    if PREVIOUS_RUN in config.stash:
        _end_run(config.stash[PREVIOUS_RUN])
    _undo_patches(config.stash.get(PATCHED_BEFORE, []))
    runner = config.stash.get(RUNNER, None)
    if runner is not None:
        runner.restore_policy()
    release = config.stash.get(KEYS, None)
    if release is not None:
        del config.stash[KEYS]
        release()


def _undo_patches(before: list[patching.Patches]) -> None:
    """Leave the process's classes as the session found them: ``undo_all`` when it began with
    none patched, else undo only what it installed (an inner session, e.g. pytester's, must
    not take the patches of the session around it)."""
    if not before:
        patching.undo_all()
        return
    for patches in reversed(patching.installed()):
        if patches not in before:
            patches.undo()


def pytest_report_header(config: pytest.Config) -> list[str]:
    return config.stash[RUNNER].header()


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> Generator[None, None, None]:
    config.stash[RUNNER].note_collected(items)  # before -k/-m deselect: those tests still exist
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """Around the whole test, its fixtures included: the live-call guard (``guard``) and the
    watch on the cassettes the test opens itself (``CassetteRunner.watching``); what the
    test carried between hooks is dropped once its reports are made."""
    runner = item.config.stash[RUNNER]
    try:
        with guard.guarding(item, runner.settings.replays) as live, runner.watching(item):
            try:
                return (yield)
            finally:
                runner.note_live_calls(item, live)
    finally:
        forget(item)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before the test's fixtures: a rerun takes back what its failed attempt recorded."""
    item.config.stash[RUNNER].begin_attempt(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A test that returned is then checked (swallowed misses, strict): one failure, in its call."""
    result = yield
    item.config.stash[RUNNER].check_call(item)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    item.config.stash[RUNNER].note_call(item, call, report)
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    runner = session.config.stash[RUNNER]
    worker_output: dict[str, Any] | None = getattr(session.config, "workeroutput", None)
    if worker_output is not None:  # an xdist worker: the controller reports
        worker_output[WORKER_OUTPUT_KEY] = runner.worker_output()
    elif runner.end_session() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # strict: a shared cassette's unplayed


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: fold in a finished worker's data (as syrupy does)."""
    output = getattr(node, "workeroutput", None) or {}
    node.config.stash[RUNNER].merge_worker(output.get(WORKER_OUTPUT_KEY))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    runner = config.stash[RUNNER]
    lines = runner.terminal_lines(verbose=config.get_verbosity() > 0)
    if config.get_verbosity() < 0:  # -q hides the header: show it when it refused a mode
        lines = runner.quiet_header() + lines
    if lines:
        terminalreporter.write_sep("-", "chaincassette")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="module")
def cassette_config() -> dict[str, Any]:
    """Defaults for the cassettes of the tests below it: ``mode`` and ``Cassette`` options
    (``{"replay_tools": True}``). Override it in a conftest.py, a module or a class, as
    pytest-recording's ``vcr_config``; a ``@pytest.mark.cassette`` argument wins."""
    return {}


@pytest.fixture
def cassette(request: pytest.FixtureRequest, cassette_config: Any) -> Iterator[Cassette]:
    """The test's ``Cassette``, active for the whole test (stats, trace, ``replaying``)."""
    from .fixture import cassette_for  # the engine: imported by the first test that asks

    with cassette_for(request.config.stash[RUNNER], request, cassette_config) as active:
        yield active


@pytest.fixture(autouse=True)
def _chaincassette_marker(request: pytest.FixtureRequest) -> None:
    """``@pytest.mark.cassette`` alone (without the fixture argument) activates the cassette."""
    if request.node.get_closest_marker("cassette") is not None:
        request.getfixturevalue("cassette")
