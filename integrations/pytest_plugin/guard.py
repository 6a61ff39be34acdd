"""``--cassette-block-live``: a test that calls a model or an embedding model outside every
cassette fails at once, with a message naming the test and how to record it.

Off by default, on CI too: a suite may hold deliberate live tests, and a default that
only changes on CI turns a green local run red there. Turn it on with the option or
``cassette_block_live = true`` in the ini file (``false`` there, or
``--cassette-allow-live``, turns it off again).

It works at the framework level, not on sockets: the class-level interception points of
every installed integration (``Adapter.guard``) stay installed for the session and ask
``chaincassette.live_guard`` whenever no cassette serves a call, so SDK and gRPC
transports are covered too, and calls served by any cassette (the fixture, a
``use_cassette`` block, a ``CassetteCache``, a wrapper) are untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any

import pytest

from chaincassette.deferred import enter_hook
from chaincassette.live_guard import blocking
from chaincassette.registry import registered_hooks

INI = "cassette_block_live"
STATE = pytest.StashKey[ExitStack]()
HINT = (
    "Give the test a cassette (the `cassette` fixture or @pytest.mark.cassette) and record "
    "it once: pytest --cassette-mode=once {nodeid}; or run pytest --cassette-allow-live"
)


def add_options(group: Any, parser: pytest.Parser) -> None:
    group.addoption(
        "--cassette-block-live",
        dest="chaincassette_block_live",
        action="store_true",
        default=None,
        help="fail any test whose model or embedding call is served by no cassette",
    )
    group.addoption(
        "--cassette-allow-live",
        dest="chaincassette_block_live",
        action="store_false",
        help="turn --cassette-block-live / the cassette_block_live ini setting off",
    )
    parser.addini(INI, "fail tests making live model calls (--cassette-block-live)", type="bool")


def enabled(config: pytest.Config) -> bool:
    given = config.getoption("chaincassette_block_live")
    if given is not None:
        return bool(given)
    return bool(config.getini(INI))


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
def guarding(item: pytest.Item) -> Iterator[None]:
    """The guard around one test, when the run asked for it."""
    if not enabled(item.config):
        yield
        return
    _installed(item.config)
    with blocking(f"test {item.nodeid}", HINT.format(nodeid=item.nodeid)):
        yield
