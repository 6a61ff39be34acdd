"""The plugin's logic: a cassette around each test, checks at teardown, the session's data.

``plugin.py`` registers options, markers, fixtures and hooks and delegates each to a
``CassetteRunner``, the one object per pytest process that holds the settings and the
``SessionState``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from chaincassette import Cassette, CassetteMiss, CassetteWriteError, use_cassette
from chaincassette.cassette import add_miss_listener, remove_miss_listener, unsaved_cassettes
from chaincassette.modes import ModePolicy, set_policy

from . import location, usage
from .report import summarize
from .session import CassetteUse, SessionState
from .settings import ResolvedMode, Settings
from .terminal import summary_lines

MARKER = "cassette"
CALL_EXCEPTION = pytest.StashKey[BaseException | None]()
CALL_PASSED = pytest.StashKey[bool]()
REFUSAL = pytest.StashKey[str]()
FIXTURE_CASSETTE = pytest.StashKey[Cassette]()
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
    def cassette_for(self, request: pytest.FixtureRequest) -> Iterator[Cassette]:
        item = request.node
        name, marker_mode, options = marker_arguments(item)
        try:
            resolved = self.settings.resolve(marker_mode)
        except ValueError as exc:
            raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
        path = self.path_for(item, name, options.get("format"))
        cls = StrictCassette if self.settings.strict else Cassette
        try:
            cassette = cls(path, mode=resolved.mode, **options)
        except TypeError as exc:
            raise pytest.UsageError(
                f"{item.nodeid}: bad @pytest.mark.cassette option: {exc}"
            ) from None
        if resolved.refused is not None:
            item.stash[REFUSAL] = resolved.refusal_note()
        item.stash[FIXTURE_CASSETTE] = cassette
        with use_cassette(cassette) as active:
            yield active
        self._after_test(item, cassette, resolved)

    def _after_test(self, item: pytest.Item, cassette: Cassette, resolved: ResolvedMode) -> None:
        stats = cassette.stats
        unused = cassette.unused_interactions()
        blocked = isinstance(cassette, StrictCassette) and cassette.blocked_write
        call_passed = item.stash.get(CALL_PASSED, False)
        call_error = item.stash.get(CALL_EXCEPTION, None)
        swallowed = [m for m in cassette.misses if not _raised_by(call_error, m)]
        problems: list[str] = []
        if swallowed:
            problems.append(_miss_message(swallowed, len(cassette.misses)))
        if blocked:
            problems.append(
                f"--cassette-strict: this test would write {relative_to_root(cassette.path, self.rootdir)} "
                f"({stats.recorded} new interaction{'s' if stats.recorded != 1 else ''}); strict runs "
                "never change cassettes. Record locally, review and commit the cassette."
            )
        if self.settings.strict and unused and call_passed and not cassette.misses:
            problems.append(
                f"--cassette-strict: {len(unused)} of {stats.interactions} interactions in "
                f"{relative_to_root(cassette.path, self.rootdir)} were never played "
                f"(indexes {', '.join(map(str, unused[:20]))}). The program no longer makes these "
                "calls: re-record the cassette or run `chaincassette prune`."
            )
        refusal = item.stash.get(REFUSAL, "")
        if problems and refusal:
            problems.append(refusal)
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
                interactions=stats.interactions,
                unused_indexes=unused,
                written=stats.recorded > 0 and not blocked,
                blocked_write=blocked,
                clean=call_passed and not cassette.misses and not problems,
            )
        )
        if blocked:
            cassette.discard_unsaved()  # nothing of it is written at exit either
        if problems:
            pytest.fail("\n\n".join(problems), pytrace=False)

    @contextmanager
    def guard_own_writes(self, item: pytest.Item) -> Iterator[None]:
        """Watch the cassettes a test opened itself (``use_cassette`` blocks, ``CassetteCache``,
        ``CassetteLLM``): a miss the code under test swallowed fails the test, as it does for
        the fixture; under strict mode, so does anything they recorded, unless the refused
        write already failed it, and their recordings are dropped so nothing writes them later."""
        if self._previous_policy is None:
            yield
            return
        own_misses: list[Exception] = []

        def collect(cassette: Cassette, miss: Exception) -> None:
            if not isinstance(cassette, StrictCassette) and cassette is not item.stash.get(
                FIXTURE_CASSETTE, None
            ):
                own_misses.append(miss)

        add_miss_listener(collect)
        before = set(unsaved_cassettes())
        try:
            yield
        finally:
            remove_miss_listener(collect)
        call_error = item.stash.get(CALL_EXCEPTION, None)
        problems: list[str] = []
        swallowed = [m for m in own_misses if not _raised_by(call_error, m)]
        if swallowed:
            problems.append(_miss_message(swallowed, len(own_misses)))
        for cassette in unsaved_cassettes() if self.settings.strict else ():
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
            if not _write_refused_in(call_error, cassette.path):
                problems.append(
                    f"--cassette-strict: this test would write {path} ({count} new "
                    f"interaction{'s' if count != 1 else ''}) through a cassette it opened itself, "
                    "and no CassetteWriteError failed the test (the code under test caught it, or "
                    "the cassette was never saved); strict runs never change cassettes. Record "
                    "locally, review and commit the cassette."
                )
        if problems:
            pytest.fail("\n\n".join(problems), pytrace=False)

    # -- reports -------------------------------------------------------------------------

    def note_call(
        self, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
    ) -> None:
        if call.when != "call":
            return
        item.stash[CALL_PASSED] = report.passed
        error = call.excinfo.value if call.excinfo is not None else None
        item.stash[CALL_EXCEPTION] = error
        note = item.stash.get(REFUSAL, "")
        if note and report.failed and _miss_in_chain(error):
            report.sections.append(("chaincassette", note))

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


def _write_refused_in(error: BaseException | None, path: Path) -> bool:
    """Whether ``error`` (or one it came from) is the refused write of the cassette at ``path``."""
    target = path.resolve()
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, CassetteWriteError) and error.path.resolve() == target:
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _miss_in_chain(error: BaseException | None) -> bool:
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, CassetteMiss):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _miss_message(swallowed: list[Exception], total: int) -> str:
    first = swallowed[0]
    others = len(swallowed) - 1
    more = f"\n\n({others} more miss{'es' if others != 1 else ''} in this test)" if others else ""
    return (
        "CassetteMiss raised during the test and caught by the code under test "
        f"({total} miss{'es' if total != 1 else ''} in all):\n{first}{more}"
    )
