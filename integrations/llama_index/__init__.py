"""LlamaIndex integration: ``CassetteLLM`` records and replays any LlamaIndex LLM.

``llm = CassetteLLM(OpenAI(model="gpt-4o-mini"), cassette="tests/cassettes/agent.yaml")``;
agents, workflows, query engines and structured outputs built on it record once and
replay forever. Inside ``use_cassette(...)`` no wrapper is needed: every provider LLM the
program uses is intercepted at class level (``boundary``), however and whenever it was
built, with the same keys as ``CassetteLLM``; ``Settings.llm`` set before the block is
wrapped, and the run's trace is captured.

Layout: ``request`` builds the canonical request, ``codec`` is the codec, ``routing``
decides which cassette serves a call, ``playback`` is the one serve path both ``llm``
(``CassetteLLM``) and ``boundary`` (class-level interception) use over ``Cassette.begin``
→ ``Call``; ``tools`` replays ``FunctionTool`` calls; ``trace`` observes spans;
``activation`` is what ``use_cassette`` installs and undoes.
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
