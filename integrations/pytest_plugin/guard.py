"""The live-call guard of a pytest run: in replay mode no test phones home unless it says so.

A model, completion or embedding call that no cassette serves fails its test at once with
``LiveCallBlocked``, naming the test and the command that records it; also in tests that
never asked for a cassette, and in their fixtures (the guard is around the whole test,
setup and teardown included). On by default whenever the run's mode is ``replay`` (the
default, and what CI runs): a test that forgot its cassette would otherwise go to the
provider silently, spend money with a real key, fail without one, and drift. Recording
runs (``--cassette-mode=once`` and the like) call live as they always did.

A deliberate live test says so with ``@pytest.mark.cassette_allow_live`` (on the test, its
class or module); ``--cassette-allow-live`` or ``cassette_block_live = false`` turn the
guard off for a run, ``--cassette-block-live`` or ``cassette_block_live = true`` turn it on
in every mode. A refused call the code under test caught still fails the test.

It works at the framework level, not on sockets: the class-level interception points of
every installed integration (``Adapter.guard``) stay installed for the session and ask
``chaincassette.live_guard`` whenever no cassette serves a call, so SDK and gRPC
transports are covered too, and calls served by any cassette (the fixture, a
``use_cassette`` block, a ``CassetteCache``, a wrapper) are untouched.
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

INI = "cassette_block_live"
MARKER = "cassette_allow_live"
MARKER_HELP = (
    f"{MARKER}: this test calls models live on purpose; the live-call guard (on in replay "
    "mode) lets its calls through"
)
STATE = pytest.StashKey[ExitStack]()
SCOPE = pytest.StashKey[GuardScope]()
HINT = (
    "Give the test a cassette (the `cassette` fixture or @pytest.mark.cassette) and record "
    "it once: pytest {nodeid} --cassette-mode=once. A test meant to call the model live "
    f"says so: @pytest.mark.{MARKER} (or run pytest --cassette-allow-live)"
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


def configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)


def enabled(config: pytest.Config, replaying: bool) -> bool:
    """The run's choice: the command line, then the ini setting, then on in replay mode."""
    given = config.getoption("chaincassette_block_live")
    if given is not None:
        return bool(given)
    ini = config.getini(INI)
    if ini in (None, "", []):
        return replaying
    return bool(ini)


class _GuardHook:
    """An adapter's ``guard`` in the shape ``deferred.enter_hook`` takes (it waits until
    the framework is imported, as blocks do)."""

    def __init__(self, adapter: Any) -> None:
        self.requires = getattr(adapter, "requires", None)
        self._guard = adapter.guard

    def __call__(self, _cassette: Any) -> AbstractContextManager[Any] | None:
        return self._guard()


def _installed(config: pytest.Config) -> None:
    if STATE in config.stash:
        return
    stack = ExitStack()
    for hook in registered_hooks():
        if getattr(hook, "guard", None) is not None:
            enter_hook(_GuardHook(hook), None, stack)
    config.stash[STATE] = stack


def uninstall(config: pytest.Config) -> None:
    stack = config.stash.get(STATE, None)
    if stack is not None:
        del config.stash[STATE]
        stack.close()


@contextmanager
def guarding(item: pytest.Item, replaying: bool) -> Iterator[None]:
    """The guard around one test (setup, call and teardown): blocking when the run asks
    for it and the test is not marked live, else allowing (an outer guard, of a test that
    runs this session in-process, must not decide for it)."""
    if item.get_closest_marker(MARKER) is not None or not enabled(item.config, replaying):
        with allowing(f"test {item.nodeid}"):
            yield
        return
    _installed(item.config)
    hint = HINT.format(nodeid=shlex.quote(item.nodeid))
    with blocking(f"test {item.nodeid}", hint) as scope:
        item.stash[SCOPE] = scope
        yield


def swallowed(item: pytest.Item, raised: BaseException | None) -> list[LiveCallBlocked]:
    """The calls the guard refused in this test that did not fail it (the code under test
    caught ``LiveCallBlocked``)."""
    scope = item.stash.get(SCOPE, None)
    if scope is None:
        return []
    return [e for e in list(scope.refused) if not _in_chain(raised, e)]


def swallowed_message(refused: list[LiveCallBlocked]) -> str:
    more = len(refused) - 1
    others = f"\n\n({more} more live call{'s' if more != 1 else ''} refused)" if more else ""
    return (
        "LiveCallBlocked raised during the test and caught by the code under test (it did "
        f"not reach the provider):\n{refused[0]}{others}"
    )


def _in_chain(error: BaseException | None, target: BaseException) -> bool:
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if error is target:
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False
