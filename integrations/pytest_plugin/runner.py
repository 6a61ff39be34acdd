"""The plugin's logic (``plugin.py`` only registers hooks): a cassette around each test,
the checks after it, the session's data; one ``CassetteRunner`` per pytest process."""

from __future__ import annotations

import importlib
import sys
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from chaincassette.deferred import enter_hook
from chaincassette.errors import CassetteError
from chaincassette.live_guard import LiveCallBlocked
from chaincassette.modes import ModePolicy, policy, set_policy
from chaincassette.registry import register_hook, unregister_hook

from . import guard, location, shared
from .markers import MARKER, marker_arguments
from .session import SessionState
from .settings import Settings
from .stash import (
    ATTEMPT,
    CALL_EXCEPTION,
    CALL_PASSED,
    FIXTURE_CASSETTE,
    OWN_MISSES,
    PER_ATTEMPT,
    REFUSAL,
    UNSAVED_BEFORE,
    UNUSED_ONLY,
    cassette_error_in_chain,
    forget,
    raised_by,
)

OPTION_SYNTAX = (
    "@pytest.mark.cassette({option}) (use_cassette(..., {option}) for a cassette the test opens)"
)
WORKER_OUTPUT_KEY = "chaincassette"
#: pytest's ``--lf``: the modules holding last run's failures are collected without the
#: tests that passed (``cacheprovider`` drops them while collecting, before any hook here).
LAST_FAILED = "lf"
ENGINE = "chaincassette.cassette"
"""The engine's module: until a test imports it, no cassette exists in the process."""


def unsaved_cassettes() -> list[Any]:
    """The cassettes holding recordings not on disk yet (none before the engine is imported)."""
    engine = sys.modules.get(ENGINE)
    return [] if engine is None else list(engine.unsaved_cassettes())


class _EngineListener:
    """One of the engine's listeners (``kind``: ``miss`` or ``open``), added when the engine
    is imported (a hook of ``chaincassette.deferred``) and removed at the session's end."""

    requires = ENGINE

    def __init__(self, kind: str, listener: Callable[..., None]) -> None:
        self._kind = kind
        self._listener = listener

    def __call__(self, _cassette: object) -> AbstractContextManager[Any]:
        engine = importlib.import_module(ENGINE)
        getattr(engine, f"add_{self._kind}_listener")(self._listener)
        stack = ExitStack()
        stack.callback(getattr(engine, f"remove_{self._kind}_listener"), self._listener)
        return stack


class CassetteRunner:
    """One per pytest process: settings, per-test cassettes, the session's data."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.rootdir = Path(config.rootpath).resolve()
        self.state = SessionState()
        self.cassette_options: frozenset[str] | None = None
        """``Cassette``'s own options, read by the first ``cassette`` fixture."""
        self._previous_policy: ModePolicy | None = None
        self._unsaved_before_run: set[Any] = set()
        self._collected: list[pytest.Item] = []
        """The collected tests, turned into the cassettes they use only for a usage record."""
        self._current: pytest.Item | None = None
        """The test running now, whose cassettes' misses are noted (``watching``)."""
        self._opened: dict[str, set[Path]] = {}
        """Test node id → the cassettes it opened itself: its blocks, its wrappers (``opened``)."""
        self._outside: set[Path] = set()
        """The cassettes opened while no test ran: a wrapper a module makes at import."""
        self._observing = ExitStack()
        self._module_dirs: dict[Path, Path] = {}
        """Test module → the folder of its cassettes (one entry per test module)."""
        self._folders: dict[Path, str] = {}
        """Cassette folder → its path relative to the rootdir (one entry per folder)."""
        self._redactor: Any = None
        """What masks the secrets of parametrize ids (``_masked``), made at the first."""
        self._naming: dict[str, list[str]] = {}
        """A cassette named by markers (``relative``) → the collected tests naming it,
        deselected ones too."""
        self._reached: set[str] = set()
        """The cassettes a marker name reaches into from outside its test module's folder
        (``../other/x``): tests of other modules may name them too."""
        self.problems: list[str] = []
        """Strict mode's problems with shared cassettes, found at the session's end."""
        self._alive: weakref.WeakSet[Any] = weakref.WeakSet()
        """The cassettes opened so far that still exist: each attempt of a test marks them
        (``begin_attempt``), as a session's or a module's may record into any test."""

    # -- the process-wide policy -------------------------------------------------------------

    def install_policy(self) -> None:
        """Make ``--cassette-mode``, the CI rule and strict mode reach every cassette of the
        run; note the cassettes each test's blocks open (``opened``)."""
        register_hook(self.opened)
        enter_hook(_EngineListener("open", self.opened), None, self._observing)
        policy = self.settings.policy()
        if policy is not None:
            self._unsaved_before_run = set(unsaved_cassettes())
            self._previous_policy = set_policy(policy)
            enter_hook(_EngineListener("miss", self.heard_miss), None, self._observing)

    def restore_policy(self) -> None:
        unregister_hook(self.opened)
        self._observing.close()
        if self._previous_policy is None:
            return
        if self.settings.strict:  # refused recordings must not be written at exit either
            for cassette in unsaved_cassettes():
                if cassette not in self._unsaved_before_run:
                    cassette.discard_unsaved()
        set_policy(self._previous_policy)
        self._previous_policy = None

    # -- where ---------------------------------------------------------------------------

    def module_dir(self, item: pytest.Item) -> Path:
        """The folder of the cassettes of ``item``'s test module (worked out once per module)."""
        found = self._module_dirs.get(item.path)
        if found is None:
            found = location.module_cassette_dir(
                Path(item.path), self.rootdir, self.settings.cassette_dir
            )
            self._module_dirs[item.path] = found
        return found

    def path_for(self, item: pytest.Item, name: str | None, fmt: str | None) -> Path:
        module_dir = self.module_dir(item)
        if name is not None:
            return location.cassette_path(module_dir, str(name), is_name=True, format=fmt)
        classes = [node.name for node in item.listchain() if isinstance(node, pytest.Class)]
        stem = location.test_file_stem(self._masked(item.name), classes, unmasked=item.name)
        return location.cassette_path(module_dir, stem, format=fmt)

    def _masked(self, name: str) -> str:
        """``name`` with each secret its parametrize id holds (a key, a secret variable's
        value) masked: the file name is committed and printed. The redactor is made at
        the first id (the engine is not imported before a test needs it)."""
        if "[" not in name:
            return name
        if self._redactor is None:
            from chaincassette.redact import Redactor

            self._redactor = Redactor()
        masked: str = self._redactor.redact_response(name)  # values and formats, no tokens
        return masked

    def relative(self, path: Path) -> str:
        """``path`` relative to the rootdir when it is inside it (POSIX separators). Its
        folder is resolved (symlinks, ``..``), once per folder; the file is named as given."""
        folder = self.relative_folder(path.parent)
        return path.name if folder == "." else f"{folder}/{path.name}"

    def relative_folder(self, folder: Path) -> str:
        found = self._folders.get(folder)
        if found is None:
            resolved = folder.resolve()
            try:
                found = resolved.relative_to(self.rootdir).as_posix()
            except ValueError:
                found = resolved.as_posix()
            self._folders[folder] = found
        return found

    def note_collected(self, items: list[pytest.Item]) -> None:
        """Remember the collected tests (before ``-k`` deselects some): the tests naming each
        shared cassette, and, for ``chaincassette prune``, the cassettes they use, worked out
        only if this run writes a usage record (``expected``)."""
        functions: list[pytest.Item] = [i for i in items if isinstance(i, pytest.Function)]
        for item in functions:
            marked = self.marked_cassette(item) if item.get_closest_marker(MARKER) else None
            if marked is not None and marked[0] is not None:
                path = self.relative(marked[1])
                self._naming.setdefault(path, []).append(item.nodeid)
                if not marked[1].resolve().is_relative_to(self.module_dir(item).resolve()):
                    self._reached.add(path)
        self._note_unjudged(functions)
        if any("::" in str(arg) for arg in self.config.args) or self.config.getoption(
            LAST_FAILED, default=False
        ):
            return  # only part of a module was collected: nothing can be called orphaned
        self._collected = functions
        for path, tests in self._naming.items():
            if len(tests) > 1 or path in self._reached:
                self.state.shared[path] = tests

    def _note_unjudged(self, functions: list[pytest.Item]) -> None:
        """The cassettes tests of modules this run did not collect use too, which strict
        mode and prune leave alone: one another module's marker reaches into (its folder's
        module was not collected), and one the last run's usage record says a test of such
        a module used (the record is how a module learns of a name reaching in)."""
        from . import usage

        collected = {item.nodeid.split("::")[0] for item in functions}
        folders = {self.module_dir(item).resolve() for item in functions}
        unjudged = usage.used_elsewhere(self.rootdir, collected)
        for path in sorted(self._reached):
            full = (self.rootdir / path).resolve()
            owned = any(full.is_relative_to(folder) for folder in folders)
            if not owned and location.owner_module_exists(
                full, self.rootdir, self.settings.cassette_dir
            ):
                unjudged.setdefault(path, [])
        self.state.unjudged = unjudged

    def marked_cassette(self, item: pytest.Item) -> tuple[str | None, Path] | None:
        """(the name ``item``'s markers give its cassette, or ``None``, and the cassette's
        path); ``None`` for markers the fixture will refuse (it says why)."""
        try:
            name, _, options = marker_arguments(item)
        except pytest.UsageError:
            return None
        return name, self.path_for(item, name, options.get("format"))

    def _note_expected(self) -> None:
        """Which cassettes the collected tests use, by test module folder."""
        for item in self._collected:
            marked = self.marked_cassette(item)
            folder = self.relative_folder(self.module_dir(item))
            if marked is not None:
                self.state.expect(folder, self.relative(marked[1]))
            for path in sorted(self._opened.get(item.nodeid, ())):
                self.state.expect(folder, self.relative(path))
        self._collected = []
        # opened outside every test: used by the tests of the module whose folder holds it
        for outside in sorted(map(self.relative, self._outside)):
            for folder in list(self.state.expected):
                if outside.startswith(f"{folder}/") or folder == ".":
                    self.state.expect(folder, outside)

    # -- the checks ------------------------------------------------------------------------

    def check_call(self, item: pytest.Item) -> None:
        """After a test function returned: fail it (in its call, once) for a miss the code
        under test swallowed, and under ``--cassette-strict`` for unplayed interactions or
        for anything that would change a cassette."""
        problems: list[str] = []
        cassette = item.stash.get(FIXTURE_CASSETTE, None)
        misses = _misses(item)
        if misses:
            problems.append(_miss_message(misses))
        refused = guard.swallowed(item, None)
        if refused:
            problems.append(guard.swallowed_message(refused))
        unused_problem = ""
        if cassette is not None:
            problems += self._strict_write_problem(cassette)
            unused_problem = self._unused_problem(item, cassette)
        if self.settings.strict:
            problems.extend(self._own_writes(item))
        if unused_problem:
            item.stash[UNUSED_ONLY] = not problems
            problems.append(unused_problem)
        refusal = item.stash.get(REFUSAL, "")
        if problems and refusal:
            problems.append(refusal)
        if problems:
            pytest.fail("\n\n".join(problems), pytrace=False)

    def _strict_write_problem(self, cassette: Any) -> list[str]:
        """``--cassette-strict``: the fixture's cassette would be written."""
        from .fixture import is_strict

        if not (is_strict(cassette) and cassette.dirty):
            return []
        return [_would_write(self.relative(cassette.path), cassette.stats.recorded)]

    def _unused_problem(self, item: pytest.Item, cassette: Any) -> str:
        """``--cassette-strict``: interactions of the fixture's cassette never played (a
        cassette other tests share is judged with them at the session's end, ``end_session``:
        the others' interactions are played by them)."""
        tests = self.sharing(item)
        path = self.relative(cassette.path)
        if not self.settings.strict or cassette.misses or len(tests) > 1:
            return ""
        if path in self._reached or path in self.state.unjudged:
            return ""  # other modules' tests use it: judged with them, or not in this run
        try:
            unused = cassette.unused_interactions()
        except CassetteError:
            return ""
        if not unused:
            return ""
        return shared.never_played(path, unused, cassette.stats.interactions, tests)

    def _own_writes(self, item: pytest.Item) -> list[str]:
        """Strict mode: what the cassettes the test opened itself recorded (then dropped)."""
        from .session import CassetteUse

        problems = []
        before = item.stash.get(UNSAVED_BEFORE, set())
        for cassette in unsaved_cassettes():
            if cassette in before or _is_fixture_cassette(cassette):
                continue
            count = cassette.discard_unsaved()
            path = self.relative(cassette.path)
            self.state.add(
                CassetteUse(
                    nodeid=item.nodeid,
                    path=path,
                    mode=cassette.mode.value,
                    recorded=count,
                    blocked_write=True,
                )
            )
            problems.append(_would_write(path, count, OWN_WRITE))
        return problems

    def sharing(self, item: pytest.Item) -> list[str]:
        """``item``'s node id, then those of the other collected tests naming its cassette."""
        marked = self.marked_cassette(item)
        named = (
            self._naming.get(self.relative(marked[1]), [])
            if marked and marked[0] is not None
            else []
        )
        return list(dict.fromkeys([item.nodeid, *named]))

    @contextmanager
    def watching(self, item: pytest.Item) -> Iterator[None]:
        """Watch the cassettes a test opens itself, setup to teardown: ``check_call`` fails it
        for a miss they swallowed and, strict, for what they recorded (dropped, even when the
        code under test caught the ``CassetteWriteError``); miss hints name this test."""
        if self._previous_policy is None:
            self._current = item
            try:
                yield
            finally:
                self._current = None
            return
        if self.settings.strict:
            item.stash[UNSAVED_BEFORE] = set(unsaved_cassettes())
        self._current = item
        try:
            rerecord = shared.rerecord_command(self.sharing(item))
            with policy(rerecord_command=rerecord, option_syntax=OPTION_SYNTAX):
                yield
        finally:
            self._current = None
        if self.settings.strict:  # the test failed before check_call: drop what it recorded
            self._own_writes(item)

    def opened(self, cassette: Any) -> None:
        """A ``use_cassette`` block began (a hook of ``chaincassette.registry``), or a wrapper
        was given a cassette (an open listener): a cassette the running test opens
        itself is one it uses, which ``chaincassette prune`` must not call an orphan."""
        item = self._current
        path = getattr(cassette, "path", None)
        if path is None:
            return
        self._alive.add(cassette)
        if item is None:
            self._outside.add(Path(path))
            return
        self._opened.setdefault(item.nodeid, set()).add(Path(path))
        attempt = item.stash.get(ATTEMPT, None)
        if attempt is not None and not any(h() is cassette for h, _ in attempt):
            attempt.append(_marked(cassette))

    def begin_attempt(self, item: pytest.Item) -> None:
        """Before a test's setup: a test run again after it failed (pytest-rerunfailures)
        starts over, as if its failed attempt had never run: what that attempt recorded is
        taken back (the passing attempt's answers are the ones replayed), what it noted is
        dropped. A test that fails every attempt keeps its last one's, as one failing run.
        The cassettes that exist already are marked now: a session fixture's or a module's
        may be used without being opened again."""
        earlier = item.stash.get(ATTEMPT, None)
        if earlier is not None:
            for held, replays in earlier:
                cassette = held()
                if cassette is not None:
                    cassette.retract(to=replays)
            self.state.uses = [use for use in self.state.uses if use.nodeid != item.nodeid]
            forget(item, PER_ATTEMPT)
            guard.restart(item)
        item.stash[ATTEMPT] = [_marked(cassette) for cassette in list(self._alive)]

    def heard_miss(self, cassette: Any, miss: Exception) -> None:
        """The session's miss listener: a miss of a cassette the running test opened itself
        (not a fixture's, which ``check_call`` reads from the cassette)."""
        item = self._current
        if item is None or _is_fixture_cassette(cassette):
            return
        if cassette is not item.stash.get(FIXTURE_CASSETTE, None):
            item.stash.setdefault(OWN_MISSES, []).append(miss)

    # -- reports -------------------------------------------------------------------------

    def note_call(
        self, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
    ) -> None:
        error = call.excinfo.value if call.excinfo is not None else None
        if call.when == "setup" and report.failed:  # a fixture's live call the guard refused
            blocked = cassette_error_in_chain(error)
            if isinstance(blocked, LiveCallBlocked):
                self._shorten(report, blocked, item.nodeid, "?")
            return
        if call.when != "call":
            return
        item.stash[CALL_PASSED] = report.passed
        item.stash[CALL_EXCEPTION] = error
        if not report.failed:
            return
        caught = [m for m in _misses(item) if not raised_by(error, m)]
        raised = cassette_error_in_chain(error)
        note = item.stash.get(REFUSAL, "")
        if raised is not None and self._shorten(
            report, raised, item.nodeid, self._cassette_path(item, raised), note
        ):
            return
        if caught:  # the test failed on something else; a miss it swallowed is the likely cause
            report.sections.append(("chaincassette", _miss_message(caught)))
        refused = guard.swallowed(item, error)
        if refused and raised is None:
            report.sections.append(("chaincassette", guard.swallowed_message(refused)))
        if note and (raised is not None or caught):
            report.sections.append(("chaincassette", note))

    def _shorten(
        self,
        report: pytest.TestReport,
        error: CassetteError,
        nodeid: str,
        path: str,
        note: str = "",
    ) -> bool:
        """Report a failure a cassette error caused without its framework traceback (unless
        ``--tb`` asks for one); whether it did."""
        if self.config.option.tbstyle in ("long", "native", "no"):
            return False
        from . import failure

        report.longrepr = failure.short_report(error, nodeid, path, note)  # type: ignore[assignment]
        return True

    def _cassette_path(self, item: pytest.Item, error: CassetteError) -> str:
        path = getattr(error, "path", None)
        if path is None:
            cassette = item.stash.get(FIXTURE_CASSETTE, None)
            path = cassette.path if cassette is not None else None
        return self.relative(Path(path)) if path is not None else "?"

    def quiet_header(self) -> list[str]:
        """The mode header, for ``-q`` runs (where pytest hides headers) that refused a mode."""
        run_refused = self.settings.resolve(None).refused is not None
        marker_refusals = sorted({u.refused for u in self.state.uses if u.refused})
        if not run_refused and not marker_refusals:
            return []
        lines = self.header()
        if marker_refusals and not run_refused:
            lines.append(
                f"  refused because CI is set: {', '.join(repr(m) for m in marker_refusals)} "
                "(from markers or CHAINCASSETTE_MODE); those tests replayed"
            )
        return lines

    def header(self) -> list[str]:
        s = self.settings
        where = str(s.cassette_dir) if s.cassette_dir else "<test module dir>/cassettes/<module>/"
        default = s.resolve(None)
        mode = f"{default.mode.value} ({default.source})"
        if default.refused is not None:
            mode += f"; {default.refused.value!r} refused because CI is set"
        return [f"chaincassette: mode {mode}, cassettes in {where}{', strict' if s.strict else ''}"]

    def worker_output(self) -> dict[str, Any]:
        self._note_expected()
        return self.state.to_plain()

    def merge_worker(self, plain: dict[str, Any] | None) -> None:
        if plain:
            self.state.merge(plain)

    def end_session(self) -> bool:
        """The session's end in the process that reports (an xdist controller, or the only
        one): strict mode judges the cassettes several tests share, as a whole; then the
        usage record is written. Whether strict mode fails the session."""
        if self.settings.strict:
            judged = {p: t for p, t in self.state.shared.items() if p not in self.state.unjudged}
            self.problems = shared.session_problems(judged, self.state.uses)
        self.write_usage()
        return bool(self.problems)

    def write_usage(self) -> Path | None:
        """Write the usage record when some test used a cassette (or keep an existing one
        current); a project whose tests never use one gets no ``.chaincassette`` folder."""
        from . import usage

        if not self.state.uses and not usage.usage_path(self.rootdir).is_file():
            return None
        self._note_expected()
        try:
            return usage.write(usage.build(self.state, self.rootdir, self.settings.cassette_dir))
        except OSError:
            return None  # a read-only checkout: the record is a convenience, not a result

    def note_live_calls(self, item: pytest.Item, let_through: list[str]) -> None:
        """A recording run says which tests called the model outside every cassette: those
        calls were made, and kept nowhere (the test has no cassette to record them in)."""
        if let_through and self.settings.resolve(None).mode.may_record:
            self.state.live[item.nodeid] = len(let_through)

    def terminal_lines(self, verbose: bool) -> list[str]:
        """The summary at the end of the run; nothing when no test used a cassette and none
        called a model outside one."""
        if not self.state.uses and not self.state.live:
            return []
        from .terminal import summary_lines

        return summary_lines(self.state, verbose=verbose) + self.problems


OWN_WRITE = (
    " through a cassette it opened itself, and no CassetteWriteError failed the test (the code "
    "under test caught it, or the cassette was never saved)"
)


def _marked(cassette: Any) -> tuple[Callable[[], Any], Any]:
    """``cassette`` held for an attempt, with its ``replays()`` mark. One that replays has
    nothing in its file to take back: held weakly, it goes with its last reference (an
    object that outlives the attempt is asked again by the rerun)."""
    held = partial(_same, cassette) if cassette.mode.may_record else weakref.ref(cassette)
    return held, cassette.replays()


def _same(value: Any) -> Any:
    """``value`` (a strong hold on an attempt's cassette, beside ``weakref.ref``'s weak one)."""
    return value


def _would_write(path: str, count: int, how: str = "") -> str:
    return (
        f"--cassette-strict: this test would write {path} ({count} new "
        f"interaction{'s' if count != 1 else ''}){how}; strict runs never change cassettes. "
        "Record locally, review and commit the cassette."
    )


def _is_fixture_cassette(cassette: Any) -> bool:
    """A strict run's fixture cassettes are ``StrictCassette``s (the fixture module is then
    loaded); the test's own fixture cassette is told apart by the caller."""
    fixture = sys.modules.get(f"{__package__}.fixture")
    return fixture is not None and bool(fixture.is_strict(cassette))


def _misses(item: pytest.Item) -> list[Exception]:
    """The misses of the test's fixture cassette, then of the cassettes it opened itself."""
    cassette = item.stash.get(FIXTURE_CASSETTE, None)
    return [*(cassette.misses if cassette is not None else []), *item.stash.get(OWN_MISSES, [])]


def _miss_message(swallowed: list[Exception]) -> str:
    total, others = len(swallowed), len(swallowed) - 1
    more = f"\n\n({others} more miss{'es' if others != 1 else ''} in this test)" if others else ""
    return (
        "CassetteMiss raised during the test and caught by the code under test "
        f"({total} miss{'es' if total != 1 else ''} in all):\n{swallowed[0]}{more}"
    )
