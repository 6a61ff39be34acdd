"""The plugin's logic: a cassette around each test, checks at teardown, the session's data.

``plugin.py`` registers options, markers, fixtures and hooks and delegates each to a
``CassetteRunner``, the one object per pytest process that holds the settings and the
``SessionState``.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from chaincassette import (
    Cassette,
    CassetteError,
    CassetteMiss,
    use_cassette,
)
from chaincassette.cassette import add_miss_listener, remove_miss_listener, unsaved_cassettes
from chaincassette.modes import ModePolicy, policy, set_policy

from . import defaults as defaults_module
from . import failure, guard, location, usage
from .report import summarize
from .session import CassetteUse, SessionState
from .settings import ResolvedMode, Settings
from .terminal import summary_lines

MARKER = "cassette"
CALL_EXCEPTION = pytest.StashKey[BaseException | None]()
CALL_PASSED = pytest.StashKey[bool]()
REFUSAL = pytest.StashKey[str]()
FIXTURE_CASSETTE = pytest.StashKey[Cassette]()
OWN_MISSES = pytest.StashKey[list[Exception]]()
UNSAVED_BEFORE = pytest.StashKey[set[Cassette]]()
UNUSED_ONLY = pytest.StashKey[bool]()
"""The test failed only because strict mode found interactions it never played: its
usage is still exact, so ``chaincassette prune`` may act on it."""
OPTION_SYNTAX = (
    "@pytest.mark.cassette({option}) (use_cassette(..., {option}) for a cassette the test opens)"
)
WORKER_OUTPUT_KEY = "chaincassette"


class StrictCassette(Cassette):
    """A cassette that refuses to write: ``--cassette-strict`` forbids changing cassettes."""

    blocked_write = False

    def save(self) -> bool:
        if self.dirty:
            self.blocked_write = True
            return False
        return super().save()


def marker_arguments(item: pytest.Item) -> tuple[str | None, str | None, dict[str, Any]]:
    """(name, mode, options) from every ``cassette`` marker; the closest one wins."""
    name: str | None = None
    mode: str | None = None
    options: dict[str, Any] = {}
    for marker in reversed(list(item.iter_markers(MARKER))):  # outermost first
        if len(marker.args) > 1:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.cassette takes at most one positional argument (name)"
            )
        kwargs = dict(marker.kwargs)
        if marker.args:
            name = marker.args[0]
        if "name" in kwargs:
            name = kwargs.pop("name")
        if "mode" in kwargs:
            mode = kwargs.pop("mode")
        options.update(kwargs)
    return name, mode, options


def relative_to_root(path: Path, rootdir: Path) -> str:
    try:
        return path.resolve().relative_to(rootdir).as_posix()
    except ValueError:
        return path.resolve().as_posix()


class CassetteRunner:
    """One per pytest process: settings, per-test cassettes, the session's data."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.rootdir = Path(config.rootpath).resolve()
        self.state = SessionState()
        self._previous_policy: ModePolicy | None = None
        self._unsaved_before_run: set[Cassette] = set()

    # -- the process-wide policy -------------------------------------------------------------

    def install_policy(self) -> None:
        """Make ``--cassette-mode``, the CI rule and strict mode reach every cassette of the run."""
        policy = self.settings.policy()
        if policy is not None:
            self._unsaved_before_run = set(unsaved_cassettes())
            self._previous_policy = set_policy(policy)

    def restore_policy(self) -> None:
        if self._previous_policy is None:
            return
        if self.settings.strict:  # refused recordings must not be written at exit either
            for cassette in unsaved_cassettes():
                if cassette not in self._unsaved_before_run:
                    cassette.discard_unsaved()
        set_policy(self._previous_policy)
        self._previous_policy = None

    # -- where ---------------------------------------------------------------------------

    def path_for(self, item: pytest.Item, name: str | None, fmt: str | None) -> Path:
        module_dir = location.module_cassette_dir(
            Path(item.path), self.rootdir, self.settings.cassette_dir
        )
        if name is not None:
            return location.cassette_path(module_dir, str(name), is_name=True, format=fmt)
        classes = [node.name for node in item.listchain() if isinstance(node, pytest.Class)]
        stem = location.test_file_stem(item.name, classes)
        return location.cassette_path(module_dir, stem, format=fmt)

    def note_collected(self, items: list[pytest.Item]) -> None:
        """Remember which cassettes the collected tests use, for ``chaincassette prune``."""
        if any("::" in str(arg) for arg in self.config.args):
            return  # only part of a module was collected: nothing can be called orphaned
        for item in items:
            if not isinstance(item, pytest.Function):
                continue
            try:
                name, _, options = marker_arguments(item)
            except pytest.UsageError:
                continue
            path = self.path_for(item, name, options.get("format"))
            module_dir = location.module_cassette_dir(
                Path(item.path), self.rootdir, self.settings.cassette_dir
            )
            self.state.expect(
                relative_to_root(module_dir, self.rootdir), relative_to_root(path, self.rootdir)
            )

    # -- the fixture -----------------------------------------------------------------------

    @contextmanager
    def cassette_for(
        self, request: pytest.FixtureRequest, shared: object = None
    ) -> Iterator[Cassette]:
        """The test's cassette, active for the test; ``shared`` is what its
        ``cassette_config`` fixture returned (defaults the marker overrides)."""
        item = request.node
        config_mode, defaults = defaults_module.shared_options(
            item, {} if shared is None else shared
        )
        name, marker_mode, marked = marker_arguments(item)
        options = {**defaults, **marked}
        try:
            resolved = self.settings.resolve(marker_mode, config_mode)
        except ValueError as exc:
            raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
        path = self.path_for(item, name, options.get("format"))
        cls = StrictCassette if self.settings.strict else Cassette
        try:
            cassette = cls(path, mode=resolved.mode, **options)
        except TypeError as exc:
            source = "@pytest.mark.cassette" if marked else "cassette_config"
            raise pytest.UsageError(f"{item.nodeid}: bad {source} option: {exc}") from None
        if resolved.refused is not None:
            item.stash[REFUSAL] = resolved.refusal_note()
        item.stash[FIXTURE_CASSETTE] = cassette
        try:
            with use_cassette(cassette) as active:
                yield active
        except CassetteError as error:  # at exit (saving, the trace): once is enough
            if not _same_problem(item.stash.get(CALL_EXCEPTION, None), error):
                raise
        finally:
            self._after_test(item, cassette, resolved)

    def _after_test(self, item: pytest.Item, cassette: Cassette, resolved: ResolvedMode) -> None:
        """Bookkeeping at teardown; the checks that fail a test ran at the end of its call
        (``check_call``), so a problem is one failure, never a second teardown error."""
        try:
            stats = cassette.stats
            unused = cassette.unused_interactions()
        except CassetteError as error:  # a corrupt file: the call failed on it already
            if _same_problem(item.stash.get(CALL_EXCEPTION, None), error):
                return
            raise
        blocked = isinstance(cassette, StrictCassette) and (
            cassette.blocked_write or cassette.dirty
        )
        call_passed = item.stash.get(CALL_PASSED, False)
        usable = call_passed or item.stash.get(UNUSED_ONLY, False)
        self.state.add(
            CassetteUse(
                nodeid=item.nodeid,
                path=relative_to_root(cassette.path, self.rootdir),
                mode=resolved.mode.value,
                replayed=stats.replayed,
                recorded=stats.recorded,
                missed=stats.missed,
                unused=len(unused),
                tokens_replayed=stats.tokens_replayed,
                tokens_unknown=stats.tokens_unknown,
                interactions=stats.interactions,
                unused_indexes=unused,
                written=stats.recorded > 0 and not blocked,
                blocked_write=blocked,
                clean=usable and not cassette.misses and not blocked,
                refused=resolved.refused.value if resolved.refused is not None else "",
            )
        )
        if blocked:
            cassette.discard_unsaved()  # nothing of it is written at exit either

    def check_call(self, item: pytest.Item) -> None:
        """After a test function returned: fail it (in its call, once) for a miss the code
        under test swallowed, and under ``--cassette-strict`` for unplayed interactions or
        for anything that would change a cassette."""
        problems: list[str] = []
        cassette = item.stash.get(FIXTURE_CASSETTE, None)
        own: list[Exception] = item.stash.get(OWN_MISSES, [])
        misses = [*(cassette.misses if cassette is not None else []), *own]
        if misses:
            problems.append(_miss_message(misses, len(misses)))
        refused = guard.swallowed(item, None)
        if refused:
            problems.append(guard.swallowed_message(refused))
        unused_problem = ""
        if cassette is not None:
            where = relative_to_root(cassette.path, self.rootdir)
            stats = cassette.stats
            if isinstance(cassette, StrictCassette) and cassette.dirty:
                problems.append(
                    f"--cassette-strict: this test would write {where} ({stats.recorded} new "
                    f"interaction{'s' if stats.recorded != 1 else ''}); strict runs never change "
                    "cassettes. Record locally, review and commit the cassette."
                )
            try:
                unused = cassette.unused_interactions()
            except CassetteError:
                unused = []
            if self.settings.strict and unused and not cassette.misses:
                unused_problem = (
                    f"--cassette-strict: {len(unused)} of {stats.interactions} interactions in "
                    f"{where} were never played (indexes {', '.join(map(str, unused[:20]))}). The "
                    "program no longer makes these calls: remove them with `chaincassette prune` "
                    "(it reads this run's usage record), or re-record the cassette: "
                    f"{self.rerecord_command(item).format(mode='record')}"
                )
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

    def _own_writes(self, item: pytest.Item) -> list[str]:
        """Strict mode: what the cassettes the test opened itself recorded (then dropped)."""
        problems = []
        before = item.stash.get(UNSAVED_BEFORE, set())
        for cassette in unsaved_cassettes():
            if cassette in before or isinstance(cassette, StrictCassette):
                continue
            count = cassette.discard_unsaved()
            path = relative_to_root(cassette.path, self.rootdir)
            self.state.add(
                CassetteUse(
                    nodeid=item.nodeid,
                    path=path,
                    mode=cassette.mode.value,
                    recorded=count,
                    blocked_write=True,
                )
            )
            problems.append(
                f"--cassette-strict: this test would write {path} ({count} new "
                f"interaction{'s' if count != 1 else ''}) through a cassette it opened itself, "
                "and no CassetteWriteError failed the test (the code under test caught it, or "
                "the cassette was never saved); strict runs never change cassettes. Record "
                "locally, review and commit the cassette."
            )
        return problems

    def rerecord_command(self, item: pytest.Item) -> str:
        """``pytest <this test> --cassette-mode={mode}``: re-records this test's cassettes only."""
        return f"pytest {shlex.quote(item.nodeid)} --cassette-mode={{mode}}"

    @contextmanager
    def guard_own_writes(self, item: pytest.Item) -> Iterator[None]:
        """Watch the cassettes a test opened itself (``use_cassette`` blocks, ``CassetteCache``,
        ``CassetteLLM``): ``check_call`` fails the test for a miss the code under test
        swallowed, as it does for the fixture, and under strict mode for anything they
        recorded. Also phrases miss hints for this test (``pytest <test> --cassette-mode=...``)."""
        if self._previous_policy is None:
            yield
            return
        own_misses: list[Exception] = []

        def collect(cassette: Cassette, miss: Exception) -> None:
            if not isinstance(cassette, StrictCassette) and cassette is not item.stash.get(
                FIXTURE_CASSETTE, None
            ):
                own_misses.append(miss)

        item.stash[OWN_MISSES] = own_misses
        item.stash[UNSAVED_BEFORE] = set(unsaved_cassettes())
        add_miss_listener(collect)
        try:
            with policy(rerecord_command=self.rerecord_command(item), option_syntax=OPTION_SYNTAX):
                yield
        finally:
            remove_miss_listener(collect)
        if self.settings.strict:  # the test failed before check_call: drop what it recorded
            self._own_writes(item)

    # -- reports -------------------------------------------------------------------------

    def note_call(
        self, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
    ) -> None:
        if call.when != "call":
            return
        item.stash[CALL_PASSED] = report.passed
        error = call.excinfo.value if call.excinfo is not None else None
        item.stash[CALL_EXCEPTION] = error
        if not report.failed:
            return
        cassette = item.stash.get(FIXTURE_CASSETTE, None)
        caught = [
            m
            for m in [*(cassette.misses if cassette else []), *item.stash.get(OWN_MISSES, [])]
            if not _raised_by(error, m)
        ]
        raised = _cassette_error_in_chain(error)
        note = item.stash.get(REFUSAL, "")
        if raised is not None and self.config.option.tbstyle not in ("long", "native", "no"):
            report.longrepr = failure.short_report(  # type: ignore[assignment]
                raised, item.nodeid, self._cassette_path(item, raised), note
            )
            return
        if caught:  # the test failed on something else; a miss it swallowed is the likely cause
            report.sections.append(("chaincassette", _miss_message(caught, len(caught))))
        refused = guard.swallowed(item, error)
        if refused and raised is None:
            report.sections.append(("chaincassette", guard.swallowed_message(refused)))
        if note and (raised is not None or caught):
            report.sections.append(("chaincassette", note))

    def _cassette_path(self, item: pytest.Item, error: CassetteError) -> str:
        path = getattr(error, "path", None)
        if path is None:
            cassette = item.stash.get(FIXTURE_CASSETTE, None)
            path = cassette.path if cassette is not None else None
        return relative_to_root(Path(path), self.rootdir) if path is not None else "?"

    def quiet_header(self) -> list[str]:
        """The mode header, for ``-q`` runs (where pytest hides headers) that refused a mode."""
        refused = self.settings.resolve(None).refused is not None or any(
            u.refused for u in self.state.uses
        )
        if not refused:
            return []
        lines = self.header()
        marker_refusals = sorted({u.refused for u in self.state.uses if u.refused})
        if marker_refusals and self.settings.resolve(None).refused is None:
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
        return self.state.to_plain()

    def merge_worker(self, plain: dict[str, Any] | None) -> None:
        if plain:
            self.state.merge(plain)

    def write_usage(self) -> Path | None:
        """Write the usage record when some test used a cassette (or keep an existing one
        current); a project whose tests never use one gets no ``.chaincassette`` folder."""
        if not self.state.uses and not usage.usage_path(self.rootdir).is_file():
            return None
        try:
            return usage.write(usage.build(self.state, self.rootdir, self.settings.cassette_dir))
        except OSError:
            return None  # a read-only checkout: the record is a convenience, not a result

    def terminal_lines(self, verbose: bool) -> list[str]:
        return summary_lines(summarize(self.state), verbose=verbose)


def _raised_by(error: BaseException | None, miss: BaseException) -> bool:
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if error is miss:
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _same_problem(reported: BaseException | None, error: CassetteError) -> bool:
    """Whether the test's call already failed with ``error``'s problem (a corrupt file read
    again at teardown must not turn "1 failed" into "1 failed, 1 error")."""
    earlier = _cassette_error_in_chain(reported)
    return earlier is not None and type(earlier) is type(error) and str(earlier) == str(error)


def _cassette_error_in_chain(error: BaseException | None) -> CassetteError | None:
    """The ``CassetteMiss`` or other cassette error a failure came from, if any (a miss first)."""
    seen: set[int] = set()
    found: CassetteError | None = None
    while error is not None and id(error) not in seen:
        if isinstance(error, CassetteMiss):
            return error
        if isinstance(error, CassetteError) and found is None:
            found = error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return found


def _miss_message(swallowed: list[Exception], total: int) -> str:
    first = swallowed[0]
    others = len(swallowed) - 1
    more = f"\n\n({others} more miss{'es' if others != 1 else ''} in this test)" if others else ""
    return (
        "CassetteMiss raised during the test and caught by the code under test "
        f"({total} miss{'es' if total != 1 else ''} in all):\n{first}{more}"
    )
