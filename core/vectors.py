"""Embedding vectors stored compactly and replayed bit-identical.

A 1,536-dimension vector as YAML floats costs ~30 KB; stored here it is the base64 of its
little-endian float32 bytes when every value is exactly a float32 (most providers), else
float64, so any list of Python floats comes back bit for bit::

    {"vectors": {"dtype": "float32", "dim": 1536, "data": ["<base64>", ...]}}

``serve``/``aserve`` are the one record/replay path of an embedding call, for both frameworks.
"""

from __future__ import annotations

import base64
import sys
from array import array
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from .call import Call
from .decoding import decoded

#: The key of an embedding response; ``dtype`` is ``float32`` or ``float64``.
VECTORS = "vectors"
_CODES = {"float32": "f", "float64": "d"}


def _pack(values: Sequence[float], code: str) -> str:
    packed = array(code, values)
    if sys.byteorder == "big":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")


def _unpack(text: str, code: str) -> list[float]:
    packed: array[float] = array(code)
    packed.frombytes(base64.b64decode(text.encode("ascii"), validate=True))
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tolist()


def _exact_float32(vectors: list[list[float]]) -> bool:
    return all(array("f", vector).tolist() == vector for vector in vectors)


def encode_vectors(vectors: Sequence[Sequence[float]]) -> dict[str, Any]:
    """The stored form of ``vectors`` (a list of equal- or unequal-length float lists)."""
    plain = [[float(v) for v in vector] for vector in vectors]
    dtype = "float32" if _exact_float32(plain) else "float64"
    dims = {len(v) for v in plain}
    stored: dict[str, Any] = {"dtype": dtype}
    if len(dims) == 1:
        stored["dim"] = dims.pop()
    stored["data"] = [_pack(v, _CODES[dtype]) for v in plain]
    return {VECTORS: stored}


def decode_vectors(stored: Any, *, where: str = "the cassette") -> list[list[float]]:
    """The vectors of a stored embedding response, exactly as they were recorded."""
    body = stored.get(VECTORS) if isinstance(stored, dict) else None
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise ValueError(f"{where}: an embedding response needs {{'vectors': {{'data': [...]}}}}")
    code = _CODES.get(str(body.get("dtype") or "float32"))
    if code is None:
        raise ValueError(f"{where}: unknown vector dtype {body.get('dtype')!r}")
    try:
        return [_unpack(str(text), code) for text in body["data"]]
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: a stored vector is not valid base64: {exc}") from None


# -- one embedding call through a cassette ------------------------------------------------------


def _recorded(
    call: Call, vectors: Sequence[Sequence[float]], meta: dict[str, Any] | None
) -> list[list[float]]:
    """Record ``vectors`` and return the copy a replay returns."""
    where = f"{call.cassette.path} (interaction {call.key[:12]})"
    return decode_vectors(call.record(encode_vectors(vectors), meta=meta), where=where)


def serve(
    call: Call,
    live: Callable[[], Sequence[Sequence[float]]],
    guard: Callable[[], AbstractContextManager[Any]],
    *,
    meta: dict[str, Any] | None = None,
) -> list[list[float]]:
    """The vectors of ``call``: replayed (or its error raised again), or computed by ``live()``
    inside ``guard()`` (the provider's own nested calls pass through) and recorded."""
    if call.hit:
        with call.turn():
            return decoded(call, decode_vectors, call.raise_if_error())
    try:
        with guard():
            vectors = live()
    except BaseException as error:
        call.fail(error, meta=meta)
        raise
    return _recorded(call, vectors, meta)


async def aserve(
    call: Call,
    live: Callable[[], Awaitable[Sequence[Sequence[float]]]],
    guard: Callable[[], AbstractContextManager[Any]],
    *,
    meta: dict[str, Any] | None = None,
) -> list[list[float]]:
    if call.hit:
        async with call.turn():
            return decoded(call, decode_vectors, call.raise_if_error())
    try:
        with guard():
            vectors = await live()
    except BaseException as error:
        call.fail(error, meta=meta)
        raise
    return _recorded(call, vectors, meta)


def as_batch(value: Any, single: bool) -> Sequence[Sequence[float]]:
    """A model's answer as a list of vectors (``single``: a query's one vector)."""
    return [value] if single else value


def from_batch(vectors: list[list[float]], single: bool) -> Any:
    """The list of vectors in the shape the model's method returns."""
    return vectors[0] if single else vectors


def served_method(
    original: Callable[..., Any],
    *,
    begin: Callable[[Any, Any], Call | None],
    single: bool,
    is_async: bool,
    guard: Callable[[], AbstractContextManager[Any]],
    meta: dict[str, Any] | None = None,
) -> Callable[..., Any]:
    """An embedding model's method ``original(self, texts_or_text, ...)`` served by the call
    ``begin(self, arg)`` returns (``None``: it runs untouched); ``single``: one text, one
    vector."""
    if is_async:

        async def amethod(self: Any, arg: Any, *args: Any, **kwargs: Any) -> Any:
            call = begin(self, arg)
            if call is None:
                return await original(self, arg, *args, **kwargs)

            async def live() -> Sequence[Sequence[float]]:
                return as_batch(await original(self, arg, *args, **kwargs), single)

            return from_batch(await aserve(call, live, guard, meta=meta), single)

        return amethod

    def method(self: Any, arg: Any, *args: Any, **kwargs: Any) -> Any:
        call = begin(self, arg)
        if call is None:
            return original(self, arg, *args, **kwargs)
        live = lambda: as_batch(original(self, arg, *args, **kwargs), single)  # noqa: E731
        return from_batch(serve(call, live, guard, meta=meta), single)

    return method


def embedding_request(
    model: str | None, params: dict[str, Any], input_type: str, texts: Sequence[str], *, source: str
) -> dict[str, Any]:
    """The canonical request of an embedding call: what its key is computed from."""
    return {
        "kind": "embedding",
        "model": model,
        "params": params,
        "input_type": input_type,
        "texts": [str(t) for t in texts],
        "model_class": source,
    }


#: Fields of an embedding model that change its vectors (besides the model name).
PARAM_FIELDS = (
    "dimensions",
    "input_type",
    "task_type",
    "encoding_format",
    "embedding_type",
    "truncate",
    "normalize",
    "output_dimensionality",
    "mode",
    "query_instruction",
    "text_instruction",
)
MODEL_FIELDS = ("model", "model_name", "model_id", "deployment", "deployment_name")


def describe_model(model: Any) -> tuple[str | None, dict[str, Any]]:
    """(model name, the parameters that change vectors) of an embedding model object."""
    name = None
    for field in MODEL_FIELDS:
        value = getattr(model, field, None)
        if isinstance(value, str) and value:
            name = value
            break
    params: dict[str, Any] = {}
    for field in PARAM_FIELDS:
        value = getattr(model, field, None)
        if value is None or callable(value):
            continue
        value = getattr(value, "value", value)  # enums
        if isinstance(value, str | int | float | bool):
            params[field] = value
    return name, params
