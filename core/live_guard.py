"""The live-call guard: model and embedding calls outside every cassette fail at once.

A test suite that forgets a cassette silently calls the provider (and needs a key, and
drifts). Socket blocking misses gRPC and SDK transports; the interception points see
every model and embedding call whatever the transport, so they ask ``check_live`` when
no cassette serves a call. The pytest plugin turns the guard on around each test in
replay mode (``blocking``, with a message naming the test and how to record it), and
off for a test that says it calls live (``allowing``): the innermost scope decides, so
an inner pytest run (``pytester``) inside a guarded test makes its own decision.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

from .errors import CassetteError

_lock = threading.Lock()
#: The open scopes, innermost last; process-wide, so that worker threads without the
#: test's context are guarded too.
_scopes: list[GuardScope] = []


class LiveCallBlocked(CassetteError):
    """A model or embedding call outside every cassette while the live-call guard is on."""

    def __init__(self, what: str, where: str, hint: str) -> None:
        self.what = what
        self.where = where
        self.headline = f"live {what} outside a cassette in {where}: the live-call guard is on"
        """The refusal without the hint: what a one-line summary of the failure shows."""
        super().__init__(f"{self.headline}. {hint}" if hint else self.headline)


@dataclass(eq=False)
class GuardScope:
    """One ``blocking`` or ``allowing`` block, and the calls it refused."""

    where: str
    hint: str = ""
    blocks: bool = True
    refused: list[LiveCallBlocked] = field(default_factory=list)
    """Every ``LiveCallBlocked`` raised in this scope, also those the program caught."""
    let_through: list[str] = field(default_factory=list)
    """The calls an ``allowing`` scope let reach the provider (a recording run says that
    they were not recorded)."""


@contextmanager
def _scope(scope: GuardScope) -> Iterator[GuardScope]:
    with _lock:
        _scopes.append(scope)
    try:
        yield scope
    finally:
        with _lock:
            if scope in _scopes:
                _scopes.remove(scope)


def blocking(where: str, hint: str = "") -> AbstractContextManager[GuardScope]:
    """Make ``check_live`` raise ``LiveCallBlocked`` (naming ``where``) inside the block."""
    return _scope(GuardScope(where, hint, blocks=True))


def allowing(where: str) -> AbstractContextManager[GuardScope]:
    """Let live calls through inside the block, whatever an outer ``blocking`` says."""
    return _scope(GuardScope(where, blocks=False))


def check_live(what: str) -> None:
    """Called by an interception point about to let ``what`` reach the provider because no
    cassette serves it; raises while the innermost scope blocks."""
    if not _scopes:
        return
    with _lock:
        scope = _scopes[-1] if _scopes else None
    if scope is None:
        return
    if not scope.blocks:
        with _lock:
            scope.let_through.append(what)
        return
    error = LiveCallBlocked(what, scope.where, scope.hint)
    with _lock:
        scope.refused.append(error)
    raise error
