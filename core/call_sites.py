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

from collections.abc import Callable
from typing import Any

from .packages import forgotten

#: ``placer(cassette, node)`` adds ``node`` where the call happened and returns ``True``,
#: or returns ``False`` when the call was not made inside one of its runs.
Placer = Callable[[Any, dict[str, Any]], bool]

#: The placers the frameworks' integrations registered (a registry, like the miss listeners).
_placers: list[Placer] = []


def register(placer: Placer) -> None:
    """Offer ``placer`` every call served below the frameworks (once per placer; those of a
    module copy an in-process pytest run forgot go, as ``patching`` drops its patches)."""
    _placers[:] = [p for p in _placers if not forgotten(p)]
    if placer not in _placers:
        _placers.append(placer)


def place(cassette: Any, node: dict[str, Any]) -> bool:
    """Whether a registered placer put ``node`` (a ``chaincassette.trace`` node without
    ``id``/``parent``) into the run where ``cassette`` served the call."""
    return any(placer(cassette, dict(node)) for placer in list(_placers))
