"""One span handler on LlamaIndex's root dispatcher, for what follows the run's spans: the
trace (``trace.TraceCollector``) and the tool-replay scope (``tool_scope``) each want a span's
enter, exit and drop (``listener.enter(id, bound_args, instance, parent)``, ``.exit(id,
result)``, ``.drop(id, err)``), nothing else of LlamaIndex's handler protocol."""

from __future__ import annotations

from typing import Any

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.span import SimpleSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from pydantic import PrivateAttr


class SpanHandler(BaseSpanHandler[SimpleSpan]):
    """Hands a span's enter, exit and drop to its ``listener``; keeps no spans of its own."""

    _listener: Any = PrivateAttr()

    def __init__(self, listener: Any) -> None:
        super().__init__()
        self._listener = listener

    @classmethod
    def class_name(cls) -> str:
        return "ChaincassetteSpanHandler"

    @property
    def listener(self) -> Any:
        return self._listener

    def new_span(
        self,
        id_: str,
        bound_args: Any,
        instance: Any = None,
        parent_span_id: str | None = None,
        tags: Any = None,
        **_: Any,
    ) -> SimpleSpan | None:
        self._listener.enter(id_, bound_args, instance, parent_span_id)
        return None

    def prepare_to_exit_span(
        self, id_: str, bound_args: Any, instance: Any = None, result: Any = None, **_: Any
    ) -> SimpleSpan | None:
        self._listener.exit(id_, result)
        return None

    def prepare_to_drop_span(
        self, id_: str, bound_args: Any, instance: Any = None, err: Any = None, **_: Any
    ) -> SimpleSpan | None:
        self._listener.drop(id_, err)
        return None


def listen(listener: Any) -> SpanHandler:
    """Give ``listener`` every span of the process, until ``unlisten``."""
    handler = SpanHandler(listener)
    get_dispatcher().add_span_handler(handler)
    return handler


def unlisten(handler: SpanHandler) -> None:
    root = get_dispatcher()
    if handler in root.span_handlers:
        root.span_handlers.remove(handler)


def listener_of(kind: type) -> Any:
    """The listener of class ``kind`` that hears the spans now, if any."""
    for handler in get_dispatcher().span_handlers:
        if isinstance(handler, SpanHandler) and isinstance(handler.listener, kind):
            return handler.listener
    return None
