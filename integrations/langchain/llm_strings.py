"""``BaseChatModel._get_llm_string`` for a model called again with the same arguments.

The boundary reads the model, its parameters and its tools from this string (LangChain
computes it only to key its own cache, which a served call skips). For a serializable
model it is ``json.dumps`` of the model as LangChain first serialized it (kept per model
object: ``_serialized`` is a cached property), ``"---"``, and ``str`` of the sorted call
arguments: the ``repr`` of every tool schema, at every call of an agent. Here the string
is kept per serialized form and set of argument objects, and reused while ``pickle``
writes what it was computed from the same (exact types, floats bit for bit), which costs
a fraction of the ``repr``. Arguments that are not plain data, models whose class (or
instance) changes ``_get_llm_string``, and the first call of each model take LangChain's
own.
"""

from __future__ import annotations

import pickle
import threading
from operator import is_
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from .messages import is_plain

#: Kept strings (one per model and set of call arguments, in practice).
MAX_KEPT = 64


class _Kept:
    __slots__ = ("serialized", "state", "text", "values")

    def __init__(self, serialized: Any, values: tuple[Any, ...], state: bytes, text: str):
        #: held, so that their ``id`` names them while this lives
        self.serialized = serialized
        self.values = values
        self.state = state
        self.text = text


_kept: dict[tuple[Any, ...], _Kept] = {}
_lock = threading.Lock()


def llm_string(model: BaseChatModel, stop: Any, kwargs: dict[str, Any]) -> str:
    """``model._get_llm_string(stop=stop, **kwargs)``."""
    serialized = model.__dict__.get("_serialized")  # set by LangChain's first call
    if (
        serialized is None
        or type(model)._get_llm_string is not BaseChatModel._get_llm_string
        or "_get_llm_string" in model.__dict__  # set on the instance (a test's patch)
        or not model.is_lc_serializable()
    ):
        return model._get_llm_string(stop=stop, **kwargs)
    values = tuple(kwargs.values())
    name = (id(serialized), *kwargs)
    kept = _kept.get(name)
    if (
        kept is not None
        and kept.serialized is serialized
        and all(map(is_, kept.values, values))
        and _state(serialized, stop, values) == kept.state
    ):
        return kept.text
    # read before LangChain does: were the arguments changed while it writes the string
    # (another thread), the kept state is not theirs and the next call computes it again
    plain = is_plain(values) and is_plain(stop) and is_plain(serialized)
    state = _state(serialized, stop, values) if plain else None
    text = model._get_llm_string(stop=stop, **kwargs)  # cleans ``serialized`` up in place
    if state is not None:
        with _lock:
            if len(_kept) >= MAX_KEPT:
                _kept.clear()
            _kept[name] = _Kept(serialized, values, state, text)
    return text


def _state(serialized: Any, stop: Any, values: tuple[Any, ...]) -> bytes | None:
    """``None`` where ``pickle`` refuses a value (a kept list now holding a function, say):
    such a call takes LangChain's own string, which writes its repr."""
    try:
        return pickle.dumps((serialized, stop, values), pickle.HIGHEST_PROTOCOL)
    except Exception:
        return None
