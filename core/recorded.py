"""``@recorded``: record a plain function's JSON-able result, keyed on its arguments.

The simplest use people have: a hand-written ``call(model, prompt, temperature)``
around any SDK, recorded once and replayed in tests, without changing the function.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from os import PathLike
from typing import Any, TypeVar, cast, overload

from .canonical import json_copy
from .cassette import Cassette
from .context import current_cassette

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
    recording. Arguments named in ``ignore_args`` (clients, callbacks) and ``self``/
    ``cls`` are left out; secret-named ones (``api_key``) never reach the key. With no
    cassette active the function simply runs.
    """
    ignored = frozenset(ignore_args)

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        label = name or f"{fn.__module__}.{fn.__qualname__}"
        params = list(signature.parameters)
        skip = ignored | ({params[0]} if params and params[0] in ("self", "cls") else set())
        fixed = _resolve(cassette)

        def request_for(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = {k: v for k, v in bound.arguments.items() if k not in skip}
            return {
                "kind": "call",
                "function": label,
                "args": json_copy(
                    arguments, what=f"an argument of {label} (list it in ignore_args)"
                ),
            }

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                active = fixed or current_cassette()
                if active is None:
                    return await fn(*args, **kwargs)
                found = active.lookup(request_for(args, kwargs))
                if found.hit:
                    return found.response
                return active.record(
                    found, await fn(*args, **kwargs), meta={"framework": "function"}
                )

            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            active = fixed or current_cassette()
            if active is None:
                return fn(*args, **kwargs)
            return active.play(
                request_for(args, kwargs),
                lambda: fn(*args, **kwargs),
                meta={"framework": "function"},
            )

        return cast(F, wrapper)

    if func is not None:
        return decorate(func)
    return decorate


def _resolve(cassette: Cassette | str | PathLike[str] | None) -> Cassette | None:
    if cassette is None or isinstance(cassette, Cassette):
        return cassette
    return Cassette(cassette)
