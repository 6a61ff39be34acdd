"""What a recording stores about the LlamaIndex LLM that made it, so ``llm=None`` can replay
(``CassetteLLM`` and ``boundary`` store it with their first recording in a cassette)."""

from __future__ import annotations

from typing import Any

from llama_index.core.llms.custom import CustomLLM
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import LLM

from chaincassette import Cassette

from . import codec, playback
from .playback import FRAMEWORK
from .request import sampling_params

#: Endpoints ``CustomLLM`` derives from ``complete``/``stream_complete``.
#: The cassette state (``Cassette.state``) of the LLM classes described in it: a recording
#: stores its LLM's description once per cassette and class (``llm=None`` replays from it).
DESCRIBED = "llama_index.described"
CUSTOM_DERIVED = ("chat", "stream_chat", "achat", "astream_chat", "acomplete", "astream_complete")


def recorded_llm(cassette: Cassette) -> dict[str, Any] | None:
    """The description stored with the cassette's first LlamaIndex recording, if any."""
    for interaction in cassette.interactions:
        info = interaction.meta.get("llm")
        if interaction.meta.get("framework") == FRAMEWORK and isinstance(info, dict):
            return info
    return None


def flavour_of(llm: LLM) -> str:
    """Which wrapper class fits ``llm``: ``function_calling``, ``custom`` (a ``CustomLLM``
    keeping CustomLLM's own derived endpoints, see ``CassetteCustomLLM``) or ``plain``."""
    if isinstance(llm, FunctionCallingLLM):
        return "function_calling"
    if isinstance(llm, CustomLLM) and all(
        next(c for c in type(llm).__mro__ if name in c.__dict__) is CustomLLM
        for name in CUSTOM_DERIVED
    ):
        return "custom"
    return "plain"


def describe_llm(llm: LLM) -> dict[str, Any] | None:
    """What a recording stores about the LLM that made it, so that ``llm=None`` can replay;
    ``None`` when it has no JSON form: a convenience, never worth the live answer it joins."""
    try:
        return {
            "class": codec.qualified_name(type(llm)),
            "flavour": flavour_of(llm),
            "metadata": llm.metadata.model_dump(mode="json"),
            "payload": playback.json_safe(llm.to_payload()),
            "params": sampling_params(llm),
        }
    except Exception:
        return None
