"""The ``use_cassette`` hooks of the built-in integrations, light enough to load anywhere.

Each hook names the module it ``requires``: a block entered before that framework is
imported activates the framework's support only once (and if) the program imports it,
so a LangChain program never pays for importing LlamaIndex, nor the other way round.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from chaincassette import Cassette


def langchain(cassette: Cassette) -> AbstractContextManager[Any] | None:
    from .langchain.activation import activate

    return activate(cassette)


def llama_index(cassette: Cassette) -> AbstractContextManager[Any] | None:
    from .llama_index.activation import activate

    return activate(cassette)


langchain.requires = "langchain_core"  # type: ignore[attr-defined]
llama_index.requires = "llama_index.core"  # type: ignore[attr-defined]
# The Cassette options each integration reads (see its activation and tools modules).
langchain.options = ("replay_tools", "serve_across_streaming")  # type: ignore[attr-defined]
llama_index.options = ("replay_tools",)  # type: ignore[attr-defined]
