"""chaincassette: record every LLM call of a program once, replay it forever.

The engine here is framework-free; ``chaincassette.integrations`` connects it to
LangChain, LangGraph, LlamaIndex and pytest.
"""

from .canonical import canonical_json, key_of
from .cassette import Cassette, CassetteStats, Interaction, Lookup
from .context import current_cassette, register_hook, unregister_hook, use_cassette
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

__version__ = "0.1.0"

__all__ = [
    "MODE_ENV_VAR",
    "Cassette",
    "CassetteError",
    "CassetteFormatError",
    "CassetteMiss",
    "CassetteSecretError",
    "CassetteStats",
    "CassetteWriteError",
    "Interaction",
    "Lookup",
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
    "unregister_hook",
    "use_cassette",
]
