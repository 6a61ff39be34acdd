"""``@recorded``: record a plain function's JSON-able result, keyed on its arguments.

The simplest use people have: a hand-written ``call(model, prompt, temperature)``
around any SDK, recorded once and replayed in tests, without changing the function.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
import sys
import threading
import typing
from collections.abc import Callable, Iterable
from os import PathLike
from pathlib import Path
from typing import Any, TypeVar, cast, overload

from .canonical import json_copy
from .cassette import Cassette
from .context import serving_cassette
from .layers import answering

F = TypeVar("F", bound=Callable[..., Any])


@overload
def recorded(func: F) -> F: ...


@overload
def recorded(
    *,
    name: str | None = None,
    cassette: Cassette | str | PathLike[str] | None = None,
    ignore_args: Iterable[str] = (),
) -> Callable[[F], F]: ...


def recorded(
    func: F | None = None,
    *,
    name: str | None = None,
    cassette: Cassette | str | PathLike[str] | None = None,
    ignore_args: Iterable[str] = (),
) -> F | Callable[[F], F]:
    """Record ``func``'s return value in the active cassette (or ``cassette``).

    The request is ``{"kind": "call", "function": name, "args": {...}}`` with every
    argument bound by name and defaults applied, so ``f(1)`` and ``f(x=1)`` share a
    recording, and a whole number given to a float parameter (annotated ``float``, or
    defaulting to a float) keyed as that float, so ``f(t=0)``, ``f(t=0.0)`` and a default
    ``t=0.0`` do too. Arguments named in ``ignore_args`` (clients, callbacks) and ``self``/
    ``cls`` are left out; secret-named ones (``api_key``) never reach the key. With no
    cassette active the function simply runs.
    """
    ignored = frozenset(ignore_args)

    def decorate(fn: F) -> F:
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise TypeError(
                f"@recorded cannot record the generator {fn.__qualname__}: return a list instead"
            )
        signature = inspect.signature(fn)
        label = name or f"{_module_name(fn)}.{fn.__qualname__}"
        params = list(signature.parameters)
        is_method = "." in fn.__qualname__ and fn.__qualname__.split(".")[-2] != "<locals>"
        skip = ignored | (
            {params[0]} if is_method and params and params[0] in ("self", "cls") else set()
        )
        fixed = _Lazy(cassette)
        floats = frozenset(n for n, p in signature.parameters.items() if _takes_floats(p))

        def request_for(args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Asked:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = {k: v for k, v in bound.arguments.items() if k not in skip}
            what = f"an argument of {label} (list it in ignore_args)"
            request = {"kind": "call", "function": label, "args": json_copy(arguments, what=what)}
            as_floats = _as_floats(request["args"], floats)
            if as_floats is request["args"]:
                return _Asked(request)
            return _Asked({**request, "args": as_floats}, request)

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                active = fixed.get() or serving_cassette()
                if active is None:
                    return await fn(*args, **kwargs)
                asked = request_for(args, kwargs)
                call = active.begin(asked.request, meta=_META, earlier=asked.earlier)
                if call.hit:
                    async with call.turn():  # behind the calls that completed before it
                        return call.response
                try:
                    with answering():  # the function's own model calls replay with it
                        result = await fn(*args, **kwargs)
                except asyncio.CancelledError as error:  # the program's timeout: kept as such
                    call.fail(error)
                    raise
                except BaseException:
                    call.abandon()
                    raise
                return call.record(result)

            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            active = fixed.get() or serving_cassette()
            if active is None:
                return fn(*args, **kwargs)
            asked = request_for(args, kwargs)
            call = active.begin(asked.request, meta=_META, earlier=asked.earlier)
            return call.answer(lambda: _answering(fn, args, kwargs))

        return cast(F, wrapper)

    if func is not None:
        return decorate(func)
    return decorate


_META = {"framework": "function"}
_FLOAT = re.compile(r"\bfloat\b")


def _takes_floats(parameter: inspect.Parameter) -> bool:
    """Whether a parameter takes a real number: annotated ``float`` (alone or in a union), or
    defaulting to a float. An int given to it is the same number to the function."""
    annotation = parameter.annotation
    if isinstance(annotation, str):  # ``from __future__ import annotations``
        return bool(_FLOAT.search(annotation))
    if annotation is float or float in typing.get_args(annotation):
        return True
    return type(parameter.default) is float


def _as_floats(arguments: dict[str, Any], floats: frozenset[str]) -> dict[str, Any]:
    """``arguments`` with each whole number given to a float parameter as that float, so
    ``temperature=0``, ``temperature=0.0`` and a default of ``0.0`` share a recording (key
    rules 2); ``arguments`` itself when none is."""
    changed = {k: float(v) for k, v in arguments.items() if k in floats and type(v) is int}
    return {**arguments, **changed} if changed else arguments


class _Asked:
    """A call's request, and the one key rules 1 built for it when that was another."""

    __slots__ = ("before", "request")

    def __init__(self, request: dict[str, Any], before: dict[str, Any] | None = None) -> None:
        self.request = request
        self.before = before

    @property
    def earlier(self) -> Callable[[int], dict[str, Any] | None] | None:
        before = self.before
        if before is None:
            return None
        return lambda rules: before if rules < 2 else None


def _answering(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn`` run live: its own model calls replay with it, so no layer records them again."""
    with answering():
        return fn(*args, **kwargs)


class _Lazy:
    """A cassette given by path is opened on first call, so ``CHAINCASSETTE_MODE`` set after
    import (by a test, a runner) still decides its mode."""

    def __init__(self, cassette: Cassette | str | PathLike[str] | None) -> None:
        self._spec = cassette
        self._cassette = cassette if isinstance(cassette, Cassette) else None
        self._lock = threading.Lock()

    def get(self) -> Cassette | None:
        if self._cassette is None and self._spec is not None:
            with self._lock:
                if self._cassette is None:
                    self._cassette = Cassette(self._spec)  # type: ignore[arg-type]
        return self._cassette


def _module_name(fn: Callable[..., Any]) -> str:
    """The importable module name, also for a script (``__main__``): ``python app.py`` and
    ``import app`` must give a function the same recording."""
    module = fn.__module__
    if module != "__main__":
        return module
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name:
        return str(spec.name).removesuffix(".__main__")
    filename = getattr(main, "__file__", None)
    return Path(filename).stem if filename else module
