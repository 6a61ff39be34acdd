"""chaincassette: record every LLM call of a program once, replay it forever.

The engine here is framework-free; ``chaincassette.integrations`` connects it to
LangChain, LangGraph, LlamaIndex, the provider SDKs and pytest. Imports go one way
(``make lint`` enforces it):

- L0 data and rules, no state: ``canonical``, ``normalize``, ``keyrules``, ``redact``,
  ``errors``, ``storage`` (with ``yaml_emit``), ``modes``, ``memo`` (a cassette's one bounded
  memo), ``layers`` (which layer answers a call), ``credentials`` (placeholder keys while
  replaying), ``packages`` (every package's submodules come from ``sys.modules``), and a
  cassette's files: ``store`` (open, journal, save) over ``journal`` (the write-ahead
  file), ``recovery`` (what a dead run left), ``merge`` and ``ledger`` (what a save
  writes, which runs record a cassette), ``runs`` (liveness), ``statedir`` (where);
- L1 the call protocol every interception point is a thin adapter over: ``cassette``
  (``Cassette.begin`` → ``call.Call``), ``request_keys``, ``streams``, ``vectors``,
  ``patching``, ``live_guard``, ``trace``;
- L2 ``registry`` (adapters by entry point), ``context`` (``use_cassette``), ``recorded``;
- L3 ``chaincassette.integrations.<framework>``; L4 the pytest plugin and the CLI.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .packages import adopt
from .registry import Adapter, register_hook, unregister_hook

if TYPE_CHECKING:
    from .call import Call
    from .canonical import canonical_json, key_of
    from .cassette import Cassette, CassetteStats, Interaction
    from .context import current_cassette, serving_cassette, use_cassette
    from .errors import (
        CassetteError,
        CassetteFormatError,
        CassetteMiss,
        CassetteSecretError,
        CassetteWriteError,
    )
    from .modes import MODE_ENV_VAR, RecordMode
    from .normalize import Normalizer, normalize
    from .recorded import recorded
    from .trace import first_divergence

#: Where each public name lives: imported on first use, so that ``import chaincassette``
#: (every pytest session loads the plugin) costs no YAML and no engine until a cassette
#: is used. ``registry`` is imported at once: it declares the adapters' options. A name is
#: looked up in its module each time, never kept here: a module forgotten since (see
#: ``chaincassette.packages``) would keep handing out its old copy.
_LAZY = {
    "Call": "call",
    "canonical_json": "canonical",
    "key_of": "canonical",
    "Cassette": "cassette",
    "CassetteStats": "cassette",
    "Interaction": "cassette",
    "current_cassette": "context",
    "serving_cassette": "context",
    "use_cassette": "context",
    "CassetteError": "errors",
    "CassetteFormatError": "errors",
    "CassetteMiss": "errors",
    "CassetteSecretError": "errors",
    "CassetteWriteError": "errors",
    "MODE_ENV_VAR": "modes",
    "RecordMode": "modes",
    "Normalizer": "normalize",
    "normalize": "normalize",
    "recorded": "recorded",
    "first_divergence": "trace",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'chaincassette' has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


adopt(__name__)  # its submodules come from sys.modules, never from here

__version__ = "0.1.0"

__all__ = [
    "MODE_ENV_VAR",
    "Adapter",
    "Call",
    "Cassette",
    "CassetteError",
    "CassetteFormatError",
    "CassetteMiss",
    "CassetteSecretError",
    "CassetteStats",
    "CassetteWriteError",
    "Interaction",
    "Normalizer",
    "RecordMode",
    "__version__",
    "canonical_json",
    "current_cassette",
    "first_divergence",
    "key_of",
    "normalize",
    "recorded",
    "register_hook",
    "serving_cassette",
    "unregister_hook",
    "use_cassette",
]
