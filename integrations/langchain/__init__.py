"""LangChain and LangGraph support: ``CassetteCache``, streaming and tool replay, run-tree traces.

``set_llm_cache(CassetteCache("tests/cassettes/agent.yaml"))`` or ``with use_cassette(...)``
records every model call once and replays it in any later process.
"""

from .._requires import require

require("langchain_core", integration="langchain", distribution="langchain-core", extra="langchain")

from .activation import activate
from .boundary import ACROSS_STREAMING
from .cache import CassetteCache
from .requests import build_request
from .tools import OPTION as REPLAY_TOOLS
from .trace import CassetteCallbackHandler, TraceDivergenceWarning

__all__ = [
    "ACROSS_STREAMING",
    "REPLAY_TOOLS",
    "CassetteCache",
    "CassetteCallbackHandler",
    "TraceDivergenceWarning",
    "activate",
    "build_request",
]
