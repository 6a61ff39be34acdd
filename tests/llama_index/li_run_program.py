"""Runs ``li_unmodified_program.py`` inside ``use_cassette`` in this (fresh) process.

``python li_run_program.py CASSETTE MODE`` prints one JSON document: the program's
output, the provider calls it made, the cassette's stats, the LLM instrumentation
events and the LLM spans (by name) it produced, and the trace divergence. The program
and its provider class are first imported inside the block, as under ``chaincassette run``.
"""

from __future__ import annotations

import asyncio
import json
import os
import runpy
import sys
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("IS_TESTING", "1")  # never build the default OpenAI LLM

from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span import SimpleSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler

from chaincassette import use_cassette
from chaincassette.integrations.llama_index import boundary, trace_divergence

PROGRAM = Path(__file__).with_name("li_unmodified_program.py")
EVENTS: Counter[str] = Counter()
SPANS: list[str] = []


class Events(BaseEventHandler):
    @classmethod
    def class_name(cls) -> str:
        return "Events"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if event.class_name().startswith("LLM"):
            EVENTS[event.class_name()] += 1


class Spans(BaseSpanHandler[SimpleSpan]):
    """The name (``Class.method``) of every span opened on an LLM."""

    def new_span(
        self, id_: str, bound_args: Any, instance: Any = None, parent_span_id: Any = None, **kw: Any
    ) -> None:
        if isinstance(instance, BaseLLM):
            SPANS.append(id_.rsplit("-", 5)[0])

    def prepare_to_exit_span(self, *args: Any, **kwargs: Any) -> None:
        return None

    def prepare_to_drop_span(self, *args: Any, **kwargs: Any) -> None:
        return None


def _restored(provider: Any) -> bool:
    """Whether ``undo_all`` gives the provider class its own methods back."""
    from chaincassette.patching import undo_all

    wrapped = boundary.is_wrapped(provider)
    undo_all()
    return wrapped and "chat" in vars(provider) and not boundary.is_wrapped(provider)


def main(cassette_path: str, mode: str) -> dict[str, Any]:
    root = get_dispatcher()
    root.add_event_handler(Events())
    root.add_span_handler(Spans())
    with use_cassette(cassette_path, mode=mode) as cassette:
        program = runpy.run_path(str(PROGRAM), run_name="user_program")
        output = asyncio.run(program["main"]())
    provider = sys.modules["li_fake_provider"].FakeProvider
    return {
        "output": output,
        "provider_calls": len(provider.calls),
        "stats": {"recorded": cassette.stats.recorded, "replayed": cassette.stats.replayed},
        "llm_events": dict(sorted(EVENTS.items())),
        "llm_spans": SPANS,
        "trace_divergence": trace_divergence(cassette),
        "restored": _restored(provider),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
