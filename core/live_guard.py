"""The live-call guard: model and embedding calls outside every cassette fail at once.

A test suite that forgets a cassette silently calls the provider (and needs a key, and
drifts). Socket blocking misses gRPC and SDK transports; the interception points see
every model and embedding call whatever the transport, so they ask ``check_live`` when
no cassette serves a call, and the pytest plugin (``--cassette-block-live``) turns the
guard on around each test with a message naming the test and how to record it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .errors import CassetteError

_lock = threading.Lock()
#: (where, how to record it) of the innermost guard; process-wide, so that worker threads
#: without the test's context are guarded too.
_blocks: list[tuple[str, str]] = []


class LiveCallBlocked(CassetteError):
    """A model or embedding call outside every cassette while the live-call guard is on."""

    def __init__(self, what: str, where: str, hint: str) -> None:
        self.what = what
        self.where = where
        message = f"live {what} outside a cassette in {where}: the live-call guard is on"
        super().__init__(f"{message}. {hint}" if hint else message)


@contextmanager
def blocking(where: str, hint: str = "") -> Iterator[None]:
    """Make ``check_live`` raise ``LiveCallBlocked`` (naming ``where``) inside the block."""
    with _lock:
        _blocks.append((where, hint))
    try:
        yield
    finally:
        with _lock:
            if (where, hint) in _blocks:
                _blocks.remove((where, hint))


def check_live(what: str) -> None:
    """Called by an interception point about to let ``what`` reach the provider because no
    cassette serves it; raises while the guard is on."""
    if not _blocks:
        return
    with _lock:
        where, hint = _blocks[-1] if _blocks else ("", "")
    if where:
        raise LiveCallBlocked(what, where, hint)
