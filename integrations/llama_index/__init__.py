"""LlamaIndex integration: ``CassetteLLM`` records and replays any LlamaIndex LLM.

Inside ``use_cassette(...)`` no wrapper is needed: every provider LLM is intercepted at
class level (``boundary``) with the same keys as ``CassetteLLM``. ``request`` builds the
canonical request, ``codec`` stores answers, ``routing`` picks the cassette, ``playback`` is
the serve path of ``llm`` and ``boundary``, ``tools`` replays ``FunctionTool`` calls.
"""

from .._requires import require

require(
    "llama_index.core",
    integration="llama_index",
    distribution="llama-index-core",
    extra="llama-index",
)

from chaincassette.packages import adopt
from chaincassette.trace import TraceDivergenceWarning

from .activation import SETTINGS, activate
from .description import recorded_llm
from .embeddings import CassetteEmbedding
from .llm import (
    CassetteCustomLLM,
    CassetteFunctionCallingLLM,
    CassetteLLM,
    tool_calls_from_blocks,
)
from .tools import RecordedToolError, enable_tool_replay
from .trace import capture_trace, trace_divergence

adopt(__name__)  # its submodules come from sys.modules (chaincassette.packages)

__all__ = [
    "CassetteCustomLLM",
    "CassetteEmbedding",
    "CassetteFunctionCallingLLM",
    "CassetteLLM",
    "RecordedToolError",
    "TraceDivergenceWarning",
    "activate",
    "capture_trace",
    "enable_tool_replay",
    "recorded_llm",
    "tool_calls_from_blocks",
    "trace_divergence",
    "wrapped_settings_llm",
]

#: ``with wrapped_settings_llm(cassette) as llm:``: ``Settings.llm`` served by ``cassette``.
wrapped_settings_llm = SETTINGS.wrapped
