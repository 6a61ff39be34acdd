"""The live-call guard of a pytest run: in replay mode no test phones home unless it says so.

A model or embedding call no cassette serves fails its test (fixtures included) with
``LiveCallBlocked``, naming the command that records it: a test that forgot its cassette
would otherwise spend money with a real key, fail without one, and drift. On whenever the
run replays; ``@pytest.mark.cassette_allow_live`` exempts a test. It asks the integrations'
class-level interception points (``Adapter.guard``), not sockets, so SDK and gRPC
transports are covered, installed as a block installs them (``chaincassette.deferred``): a
session that never imports a framework never imports its support.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any

import pytest

from chaincassette.deferred import enter_hook
from chaincassette.live_guard import GuardScope, LiveCallBlocked, allowing, blocking
from chaincassette.registry import registered_hooks

from .stash import forget, raised_by

INI = "cassette_block_live"
MARKER = "cassette_allow_live"
MARKER_HELP = (
    f"{MARKER}: this test calls models live on purpose; the live-call guard (on in replay "
    "mode) lets its calls through"
)
HOOKS = pytest.StashKey["list[_GuardHook]"]()
ENABLED = pytest.StashKey[bool]()
SCOPE = pytest.StashKey[GuardScope]()
HINT = (
    "The test has no cassette: first give it one (add the `cassette` fixture to its "
    "arguments, or @pytest.mark.cassette), then record it once: pytest {nodeid} "
    "--cassette-mode=once (without a cassette that run calls the model and keeps nothing). "
    f"A test meant to call the model live says so: @pytest.mark.{MARKER} (or run pytest "
    "--cassette-allow-live)"
)


def add_options(group: Any, parser: pytest.Parser) -> None:
    group.addoption(
        "--cassette-block-live",
        dest="chaincassette_block_live",
        action="store_true",
        default=None,
        help="fail any test whose model or embedding call is served by no cassette, in every "
        "mode (in replay mode, the default, this is on already)",
    )
    group.addoption(
        "--cassette-allow-live",
        dest="chaincassette_block_live",
        action="store_false",
        help="let model calls no cassette serves go live in this run (the guard is off)",
    )
    parser.addini(
        INI,
        "true: block live model calls in every mode; false: never (default: in replay mode)",
        type="bool",
        default=None,
    )


def enabled(config: pytest.Config, replaying: bool) -> bool:
    """The run's choice: the command line, then the ini setting, then on in replay mode
    (decided once per session)."""
    decided = config.stash.get(ENABLED, None)
    if decided is None:
        given, ini = config.getoption("chaincassette_block_live"), config.getini(INI)
        if given is not None:
            decided = bool(given)
        else:
            decided = replaying if ini in (None, "", []) else bool(ini)
        config.stash[ENABLED] = decided
    return decided


class _GuardHook:
    """An adapter's ``guard`` in the shape ``deferred.enter_hook`` takes (it waits until
    the framework is imported, as blocks do)."""

    def __init__(self, adapter: Any) -> None:
        self.requires = getattr(adapter, "requires", None)
        self._guard = adapter.guard

    def __call__(self, _cassette: Any) -> AbstractContextManager[Any] | None:
        return self._guard()


def _hooks(config: pytest.Config) -> list[_GuardHook]:
    """The installed integrations' guards (the adapters are loaded by the first guarded test)."""
    hooks = config.stash.get(HOOKS, None)
    if hooks is None:
        hooks = [_GuardHook(h) for h in registered_hooks() if getattr(h, "guard", None)]
        config.stash[HOOKS] = hooks
    return hooks


@contextmanager
def guarding(item: pytest.Item, replaying: bool) -> Iterator[list[str]]:
    """The guard around one test (setup, call and teardown): blocking unless the run or the
    test allows live calls (allowing then: an outer session's guard must not decide). In a
    recording run, yields the calls it let through outside every cassette, to report."""
    where = f"test {item.nodeid}"
    marked_live = item.get_closest_marker(MARKER) is not None
    blocks = not marked_live and enabled(item.config, replaying)
    if not blocks and (marked_live or replaying):
        with allowing(where):
            yield []
        return
    with ExitStack() as stack:
        for hook in _hooks(item.config):
            enter_hook(hook, None, stack)
        if not blocks:
            yield stack.enter_context(allowing(where)).let_through
            return
        hint = HINT.format(nodeid=shlex.quote(item.nodeid))
        item.stash[SCOPE] = stack.enter_context(blocking(where, hint))
        stack.callback(forget, item, (SCOPE,))  # its refusals hold tracebacks
        yield []


def restart(item: pytest.Item) -> None:
    """A rerun of the test (its guard spans every attempt): the calls refused before are
    not this attempt's."""
    scope = item.stash.get(SCOPE, None)
    if scope is not None:
        scope.refused.clear()


def swallowed(item: pytest.Item, raised: BaseException | None) -> list[LiveCallBlocked]:
    """The calls the guard refused in this test that did not fail it (the code under test
    caught ``LiveCallBlocked``)."""
    scope = item.stash.get(SCOPE, None)
    if scope is None:
        return []
    return [e for e in list(scope.refused) if not raised_by(raised, e)]


def swallowed_message(refused: list[LiveCallBlocked]) -> str:
    more = len(refused) - 1
    others = f"\n\n({more} more live call{'s' if more != 1 else ''} refused)" if more else ""
    return (
        "LiveCallBlocked raised during the test and caught by the code under test (it did "
        f"not reach the provider):\n{refused[0]}{others}"
    )
