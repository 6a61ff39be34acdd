"""Record and replay LangChain ``Embeddings`` (``embed_documents``, ``embed_query``, async).

The four methods are wrapped on every ``Embeddings`` subclass that defines them (also one
defined later), like chat models in ``boundary``, and replay vectors bit-identical
(``chaincassette.vectors``). The outermost call records (an ``embed_query`` built on
``embed_documents``, a default ``aembed_*`` run in an executor, pass through), and sync and
async calls of one kind share their recordings. ``CassetteEmbeddings`` does the same for
one object without ``use_cassette``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any

from langchain_core.embeddings import Embeddings

from chaincassette import Call, Cassette, layers
from chaincassette.cassette import given_cassette
from chaincassette.live_guard import check_live
from chaincassette.patching import Patches, watch_subclasses
from chaincassette.vectors import (
    aserve,
    describe_model,
    embedding_request,
    serve,
    served_method,
)

from . import routing
from .labels import call_meta

METHODS = ("embed_documents", "embed_query", "aembed_documents", "aembed_query")


# -- installing ---------------------------------------------------------------------------------


def _apply(patches: Patches) -> None:
    watch_subclasses(patches, Embeddings, _wrap_class, hook="__init_subclass__")


PATCHES = Patches(_apply)
install = PATCHES.install


def _wrap_class(cls: type) -> None:
    if not getattr(cls, "chaincassette_wrapper", False):
        PATCHES.wrap_methods(cls, METHODS, lambda n, f: functools.wraps(f)(_wrap(n, f)))


# -- one call ------------------------------------------------------------------------------------


def input_type(method: str) -> str:
    return "query" if method.endswith("query") else "documents"


def request_for(model: Any, method: str, texts: Sequence[str]) -> dict[str, Any]:
    name, params = describe_model(model)
    return embedding_request(name, params, input_type(method), texts, source=type(model).__name__)


def _texts(method: str, arg: Any) -> list[str]:
    return [arg] if method.endswith("query") else list(arg)


def _begin(model: Any, method: str, arg: Any) -> Call | None:
    """The call for ``model.method(arg)`` in the serving cassette; ``None`` passes through."""
    if layers.answered_above():
        return None
    target = routing.route(model)
    if target is None:
        check_live(f"embedding call ({type(model).__name__}.{method})")
        return None
    request = request_for(model, method, _texts(method, arg))
    meta = {**call_meta(), "endpoint": input_type(method)}
    return target.cassette.begin(request, meta=meta, autosave=target.autosave)


def _wrap(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    return served_method(
        original,
        begin=lambda model, arg: _begin(model, name, arg),
        single=name.endswith("query"),
        is_async=name.startswith("a"),
        guard=layers.answering,
    )


# -- the explicit wrapper ------------------------------------------------------------------------


class CassetteEmbeddings(Embeddings):
    """Wrap any LangChain ``Embeddings`` so its calls record in, and replay from, a cassette.

    ``CassetteEmbeddings(OpenAIEmbeddings(...), cassette="tests/cassettes/rag.yaml")``.
    Given a path, the wrapper owns the cassette and saves it after each recording; given a
    ``Cassette``, whoever owns it saves it (``use_cassette``).
    """

    chaincassette_wrapper = True

    def __init__(
        self,
        embeddings: Embeddings,
        *,
        cassette: Cassette | str | PathLike[str],
        mode: Any = None,
        **options: Any,
    ) -> None:
        self.cassette = given_cassette(
            cassette, mode=mode, options=options, owner=type(self).__name__
        )
        self._autosave = not isinstance(cassette, Cassette)
        self.embeddings = embeddings

    def __repr__(self) -> str:
        return f"CassetteEmbeddings({self.embeddings!r}, cassette={self.cassette!r})"

    def _call(self, method: str, arg: Any) -> Call:
        request = request_for(self.embeddings, method, _texts(method, arg))
        meta = {**call_meta(), "endpoint": input_type(method)}
        return self.cassette.begin(request, meta=meta, autosave=self._autosave)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        call = self._call("embed_documents", texts)
        return serve(call, lambda: self.embeddings.embed_documents(texts), layers.answering)

    def embed_query(self, text: str) -> list[float]:
        call = self._call("embed_query", text)
        return serve(call, lambda: [self.embeddings.embed_query(text)], layers.answering)[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        call = self._call("embed_documents", texts)
        return await aserve(call, lambda: self.embeddings.aembed_documents(texts), layers.answering)

    async def aembed_query(self, text: str) -> list[float]:
        call = self._call("embed_query", text)

        async def live() -> list[list[float]]:
            return [await self.embeddings.aembed_query(text)]

        return (await aserve(call, live, layers.answering))[0]
