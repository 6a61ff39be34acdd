"""The ``cassette`` fixture's work: the test's cassette, open for the test, noted at teardown.
Imported by the first test that asks for one: it brings in the engine and YAML."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Protocol

import pytest

from chaincassette import options as integration_options
from chaincassette.cassette import Cassette
from chaincassette.context import use_cassette
from chaincassette.errors import CassetteError
from chaincassette.modes import policy

from .markers import marker_arguments, shared_options
from .session import CassetteUse, SessionState
from .settings import ResolvedMode, Settings
from .shared import recording_mode
from .stash import CALL_EXCEPTION, CALL_PASSED, FIXTURE_CASSETTE, REFUSAL, UNUSED_ONLY, same_problem


class Runner(Protocol):
    """What the fixture needs of the session's ``CassetteRunner`` (which imports this module
    on first use: the protocol keeps the two from importing each other)."""

    settings: Settings
    state: SessionState
    cassette_options: frozenset[str] | None

    def path_for(self, item: pytest.Item, name: str | None, fmt: str | None) -> Path: ...

    def relative(self, path: Path) -> str: ...


class StrictCassette(Cassette):
    """A cassette that refuses to write: ``--cassette-strict`` forbids changing cassettes."""

    blocked_write = False

    def save(self) -> bool:
        if self.dirty:
            self.blocked_write = True
            return False
        return super().save()


def known_options(runner: Runner) -> set[str]:
    """What a ``cassette_config`` may set: ``Cassette``'s keyword-only options (read once per
    session) and those of the installed integrations."""
    if runner.cassette_options is None:
        parameters = inspect.signature(Cassette.__init__).parameters.values()
        runner.cassette_options = frozenset(
            p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY
        )
    return set(runner.cassette_options) | integration_options.known()


@contextmanager
def cassette_for(
    runner: Runner, request: pytest.FixtureRequest, shared: object
) -> Iterator[Cassette]:
    """The test's cassette, active for the test; ``shared`` is what its ``cassette_config``
    fixture returned (defaults the marker overrides)."""
    item = request.node
    config_mode, defaults = shared_options(
        item, {} if shared is None else shared, known_options(runner)
    )
    name, marker_mode, marked = marker_arguments(item)
    options = {**defaults, **marked}
    try:
        resolved = runner.settings.resolve(marker_mode, config_mode)
    except ValueError as exc:
        raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
    path = runner.path_for(item, name, options.get("format"))
    cls = StrictCassette if runner.settings.strict else Cassette
    mode = recording_mode(resolved.mode, name, path, options)
    try:
        with nullcontext() if mode is resolved.mode else policy(override=mode):
            cassette = cls(path, mode=mode, **options)
    except TypeError as exc:
        source = "@pytest.mark.cassette" if marked else "cassette_config"
        raise pytest.UsageError(f"{item.nodeid}: bad {source} option: {exc}") from None
    if resolved.refused is not None:
        item.stash[REFUSAL] = resolved.refusal_note()
    item.stash[FIXTURE_CASSETTE] = cassette
    try:
        with use_cassette(cassette) as active:
            yield active
            if item.session.exitstatus == pytest.ExitCode.INTERRUPTED:  # Ctrl-C: torn down
                active.settle_cancellations(False)  # no cancellation of it is kept
    except CassetteError as error:  # at exit (saving, the trace): once is enough
        if not same_problem(item.stash.get(CALL_EXCEPTION, None), error):
            raise
    finally:
        after_test(runner, item, cassette, resolved)


def after_test(
    runner: Runner, item: pytest.Item, cassette: Cassette, resolved: ResolvedMode
) -> None:
    """Bookkeeping at teardown; the checks that fail a test ran at the end of its call
    (``check_call``), so a problem is one failure, never a second teardown error."""
    try:
        stats = cassette.stats
        unused = cassette.unused_interactions()
    except CassetteError as error:  # a corrupt file: the call failed on it already
        if same_problem(item.stash.get(CALL_EXCEPTION, None), error):
            return
        raise
    blocked = is_strict(cassette) and (cassette.blocked_write or cassette.dirty)
    usable = item.stash.get(CALL_PASSED, False) or item.stash.get(UNUSED_ONLY, False)
    runner.state.add(
        CassetteUse(
            nodeid=item.nodeid,
            path=runner.relative(cassette.path),
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


def is_strict(cassette: Any) -> bool:
    return isinstance(cassette, StrictCassette)
