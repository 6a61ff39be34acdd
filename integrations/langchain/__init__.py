"""LangChain and LangGraph support: ``CassetteCache``, streaming and tool replay, run-tree traces.

``set_llm_cache(CassetteCache("tests/cassettes/agent.yaml"))`` or ``with use_cassette(...)``
records every model call once and replays it in any later process.

Layout: ``requests`` builds the canonical request, ``serde`` is the codec, ``routing``
decides which cassette serves a call, ``boundary`` (chat models), ``cache``
(``CassetteCache``), ``completions``, ``completion_streams``, ``embeddings``
(``CassetteEmbeddings``) and ``tools`` are the interception points, each a
short adapter over ``Cassette.begin`` → ``Call``; ``trace`` observes the run tree;
``activation`` is what ``use_cassette`` installs and undoes.
"""

from .._requires import require

require("langchain_core", integration="langchain", distribution="langchain-core", extra="langchain")

from chaincassette.packages import adopt
from chaincassette.trace import TraceDivergenceWarning

from .activation import activate
from .boundary import ACROSS_STREAMING
from .cache import CassetteCache
from .embeddings import CassetteEmbeddings
from .requests import build_request
from .tools import OPTION as REPLAY_TOOLS
from .trace import CassetteCallbackHandler

adopt(__name__)  # its submodules come from sys.modules (chaincassette.packages)

__all__ = [
    "ACROSS_STREAMING",
    "REPLAY_TOOLS",
    "CassetteCache",
    "CassetteCallbackHandler",
    "CassetteEmbeddings",
    "TraceDivergenceWarning",
    "activate",
    "build_request",
]
