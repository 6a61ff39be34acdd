"""The adapters of the built-in integrations, light enough to load anywhere.

Each names the module it ``requires``: a block entered before that framework is imported
activates the framework's support only once (and if) the program imports it, so a
LangChain program never pays for importing LlamaIndex, nor the other way round. Each
also names the ``Cassette`` options it reads, so a misspelled option is an error.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from chaincassette.registry import Adapter

if TYPE_CHECKING:
    from chaincassette.cassette import Cassette


def _activate_langchain(cassette: Cassette) -> AbstractContextManager[Any] | None:
    from .langchain.activation import activate

    return activate(cassette)


def _activate_llama_index(cassette: Cassette) -> AbstractContextManager[Any] | None:
    from .llama_index.activation import activate

    return activate(cassette)


def _guard_langchain() -> AbstractContextManager[Any] | None:
    from .langchain.activation import guard

    return guard()


def _guard_llama_index() -> AbstractContextManager[Any] | None:
    from .llama_index.activation import guard

    return guard()


langchain = Adapter(
    name="langchain",
    requires="langchain_core",
    options=("replay_tools", "serve_across_streaming"),
    activate=_activate_langchain,
    guard=_guard_langchain,
)
llama_index = Adapter(
    name="llama_index",
    requires="llama_index.core",
    options=("replay_tools", "raw_stream_chunks"),
    activate=_activate_llama_index,
    guard=_guard_llama_index,
)
