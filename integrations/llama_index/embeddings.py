"""Record and replay LlamaIndex ``BaseEmbedding`` models (text, query, batch, async).

All of ``BaseEmbedding`` is built on six transport methods (``_get_query_embedding``,
``_get_text_embedding``, ``_get_text_embeddings``, their ``_aget_*`` forms). While a cassette
is active those a provider class defines itself are wrapped, as ``boundary`` wraps LLM
endpoints: the outermost call replays its vectors bit-identical (``chaincassette.vectors``)
or records them, inside LlamaIndex's own events and spans. ``CassetteEmbedding`` does the
same for one model without ``use_cassette``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from os import PathLike
from typing import Any, ClassVar

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field, PrivateAttr, SerializeAsAny

from chaincassette import Call, Cassette, layers
from chaincassette.cassette import given_cassette
from chaincassette.patching import Patches, watch_subclasses
from chaincassette.vectors import (
    describe_model,
    embedding_request,
    served_method,
)

from .boundary import INIT_SUBCLASS, eligible
from .playback import FRAMEWORK
from .routing import intercepted_cassette

METHODS = (
    "_get_query_embedding",
    "_aget_query_embedding",
    "_get_text_embedding",
    "_aget_text_embedding",
    "_get_text_embeddings",
    "_aget_text_embeddings",
)


# -- installing ---------------------------------------------------------------------------------


PATCHES = Patches(lambda p: watch_subclasses(p, BaseEmbedding, _wrap_class, hook=INIT_SUBCLASS))
install = PATCHES.install


def _wrap_class(cls: type) -> None:
    if eligible(cls):
        PATCHES.wrap_methods(
            cls, METHODS, lambda n, f: functools.wraps(f)(_served(n, f, _beginning(n)))
        )


# -- one call ------------------------------------------------------------------------------------


def input_type(method: str) -> str:
    return "query" if "query" in method else "text"


def _batch(method: str) -> bool:
    return method.endswith("embeddings")


def request_for(model: Any, method: str, arg: Any) -> dict[str, Any]:
    name, params = describe_model(model)
    texts = list(arg) if _batch(method) else [arg]
    return embedding_request(name, params, input_type(method), texts, source=type(model).__name__)


def call_meta(method: str) -> dict[str, Any]:
    return {"framework": FRAMEWORK, "endpoint": f"embedding_{input_type(method)}"}


def _begin(model: Any, method: str, arg: Any) -> Call | None:
    cassette = intercepted_cassette(lambda: f"embedding call ({type(model).__name__}.{method})")
    if cassette is None:
        return None
    return cassette.begin(request_for(model, method, arg), meta=call_meta(method))


def _beginning(method: str) -> Callable[[Any, Any], Call | None]:
    return lambda model, arg: _begin(model, method, arg)


def _served(
    name: str, original: Callable[..., Any], begin: Callable[[Any, Any], Call | None]
) -> Callable[..., Any]:
    return served_method(
        original,
        begin=begin,
        single=not _batch(name),
        is_async=name.startswith("_a"),
        guard=layers.answering,
        meta=call_meta(name),
    )


# -- the explicit wrapper ------------------------------------------------------------------------


def _explicit(name: str) -> Callable[..., Any]:
    """``CassetteEmbedding``'s method ``name``: the wrapped model's, served by its cassette."""
    return _served(
        name,
        lambda self, arg: getattr(self.embed_model, name)(arg),
        lambda self, arg: self._call(name, arg),
    )


class CassetteEmbedding(BaseEmbedding):
    """Wrap any LlamaIndex embedding model so its calls record in, and replay from, a cassette.

    ``Settings.embed_model = CassetteEmbedding(OpenAIEmbedding(), cassette="rag.yaml")``.
    Given a path, the wrapper owns the cassette and saves it after each recording; given a
    ``Cassette``, whoever owns it saves it (``use_cassette``).
    """

    chaincassette_wrapper: ClassVar[bool] = True

    embed_model: SerializeAsAny[BaseEmbedding] = Field(description="The wrapped model.")
    cassette: Any = Field(default=None, exclude=True, description="The chaincassette Cassette.")
    _autosave: bool = PrivateAttr(default=False)

    def __init__(
        self,
        embed_model: BaseEmbedding,
        *,
        cassette: Cassette | str | PathLike[str],
        mode: Any = None,
        **options: Any,
    ) -> None:
        resolved = given_cassette(cassette, mode=mode, options=options, owner=type(self).__name__)
        super().__init__(  # type: ignore[call-arg]
            embed_model=embed_model,
            cassette=resolved,
            model_name=embed_model.model_name,
            embed_batch_size=embed_model.embed_batch_size,
            callback_manager=embed_model.callback_manager,
        )
        self._autosave = not isinstance(cassette, Cassette)

    @classmethod
    def class_name(cls) -> str:
        return "CassetteEmbedding"

    def _call(self, method: str, arg: Any) -> Call:
        request = request_for(self.embed_model, method, arg)
        return self.cassette.begin(request, meta=call_meta(method), autosave=self._autosave)

    _get_query_embedding = _explicit("_get_query_embedding")
    _aget_query_embedding = _explicit("_aget_query_embedding")
    _get_text_embedding = _explicit("_get_text_embedding")
    _aget_text_embedding = _explicit("_aget_text_embedding")
    _get_text_embeddings = _explicit("_get_text_embeddings")
    _aget_text_embeddings = _explicit("_aget_text_embeddings")
