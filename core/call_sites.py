"""Where a model call served below the frameworks happened: a node in their run tree.

A provider SDK call that a LangGraph tool or a LlamaIndex workflow step makes itself is
served by the SDK layer, which knows no framework. It hands the call's trace node to the
*placers* the frameworks' trace captures register here; the first that knows the run this
call happened in (the tool, the node, the step) adds it there and says so. A call that no
placer claims is traced by the SDK layer on its own, at the top level.

Only a registry of what is installed lives here (like the miss listeners), no state of a
run: each placer finds its run in its own context variables.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: ``placer(cassette, node)`` adds ``node`` where the call happened and returns ``True``,
#: or returns ``False`` when the call was not made inside one of its runs.
Placer = Callable[[Any, dict[str, Any]], bool]

_lock = threading.Lock()
#: Each installed placer with the number of blocks that installed it.
_placers: dict[Placer, int] = {}


@contextmanager
def placing(placer: Placer) -> Iterator[None]:
    """Offer ``placer`` the calls made while the block lasts (use-counted: nested and
    concurrent blocks install it once)."""
    with _lock:
        _placers[placer] = _placers.get(placer, 0) + 1
    try:
        yield
    finally:
        with _lock:
            left = _placers.get(placer, 0) - 1
            if left > 0:
                _placers[placer] = left
            else:
                _placers.pop(placer, None)


def place(cassette: Any, node: dict[str, Any]) -> bool:
    """Whether an installed placer put ``node`` (a ``chaincassette.trace`` node without
    ``id``/``parent``) into the run where ``cassette`` served the call."""
    with _lock:
        placers = list(_placers)
    return any(placer(cassette, dict(node)) for placer in placers)
