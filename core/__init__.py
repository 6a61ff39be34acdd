"""chaincassette: record every LLM call of a program once, replay it forever.

The engine here is framework-free; ``chaincassette.integrations`` connects it to
LangChain, LangGraph, LlamaIndex, the provider SDKs and pytest. Imports go one way
(``make lint`` enforces it):

- L0 data and rules, no state: ``canonical``, ``normalize``, ``keyrules``, ``redact``,
  ``errors``, ``storage`` (with ``yaml_emit``), ``modes``, ``memo`` (a cassette's one bounded
  memo), ``layers`` (which layer answers a call), ``credentials`` (placeholder keys while
  replaying), and a cassette's files: ``store`` (open, journal, save) over ``journal`` (the
  write-ahead file), ``recovery`` (what a dead run left), ``merge`` and ``ledger`` (what a
  save writes, which runs record a cassette), ``runs`` (liveness), ``statedir`` (where);
- L1 the call protocol every interception point is a thin adapter over: ``cassette``
  (``Cassette.begin`` → ``call.Call``), ``request_keys``, ``streams``, ``vectors``,
  ``patching``, ``live_guard``, ``trace``;
- L2 ``registry`` (adapters by entry point), ``context`` (``use_cassette``), ``recorded``;
- L3 ``chaincassette.integrations.<framework>``; L4 the pytest plugin and the CLI.
"""

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
from .registry import Adapter, register_hook, unregister_hook
from .trace import first_divergence

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
