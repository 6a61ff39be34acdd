"""Recording an exception, and raising it again on replay so that it reads exactly the same.

Agents feed ``str(error)`` (sometimes ``repr``) into their next model request, so a
replayed error must read exactly like the recorded one or the next call misses:
``KeyError('2')`` reads ``'2'``, not ``"'2'"``. The stored form keeps the class name, the
names of its base classes, its args (JSON, else their repr), its ``str`` and its ``repr``.

A cassette is data: rebuilding never imports a module the file names. The recorded class
is used only when it is a builtin or already imported, and only if the rebuilt error reads
the same; otherwise a look-alike stands in: a ``RecordedError`` that also subclasses the
nearest recorded base class that is loaded (so ``except ValueError`` still catches it),
reading exactly as recorded.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import sys
from typing import Any

#: An argument that is not JSON is stored as ``{NOT_JSON: repr(arg)}``.
NOT_JSON = "__repr__"


class RecordedError(Exception):
    """A recorded exception whose class cannot be rebuilt here (or would read differently).

    ``str`` and ``repr`` are exactly those of the recorded exception; ``type_name`` names its
    class as ``module.QualName``.
    """

    def __init__(self, message: str, type_name: str = "", recorded_repr: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.type_name = type_name
        self.recorded_repr = recorded_repr

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return self.recorded_repr if self.recorded_repr is not None else super().__repr__()


def class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _encode_arg(value: Any) -> Any:
    try:
        if json.loads(json.dumps(value)) == value:
            return value
    except (TypeError, ValueError):
        pass
    return {NOT_JSON: repr(value)}


def encode_error(error: BaseException) -> dict[str, Any]:
    """What a cassette stores about ``error`` (the value of an interaction's ``error``)."""
    kind = type(error)
    return {
        "type": class_name(kind),
        "bases": [class_name(c) for c in kind.__mro__[1:] if issubclass(c, BaseException)],
        "args": [_encode_arg(arg) for arg in error.args],
        "message": str(error),
        "repr": repr(error),
    }


def loaded_class(name: str) -> type[BaseException] | None:
    """The exception class ``name`` (``module.QualName``) if it is a builtin or its module is
    already imported; never imports anything."""
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module_name, path = ".".join(parts[:split]), parts[split:]
        module = builtins if module_name == "builtins" else sys.modules.get(module_name)
        if module is None:
            continue
        found: Any = module
        for part in path:
            found = getattr(found, part, None)
        if isinstance(found, type) and issubclass(found, BaseException):
            return found
        return None
    return None


def _candidates(kind: type[BaseException], args: list[Any]) -> list[BaseException]:
    built: list[BaseException] = []
    with contextlib.suppress(Exception):
        built.append(kind(*args))
    try:  # a class whose __init__ takes other arguments than its args
        bare = kind.__new__(kind, *args)
        bare.args = tuple(args)
        built.append(bare)
    except Exception:
        pass
    return built


def _reads_as(error: BaseException, message: str, text: str | None) -> bool:
    try:
        return str(error) == message and (text is None or repr(error) == text)
    except Exception:
        return False


def rebuild_error(data: dict[str, Any]) -> BaseException:
    """The recorded exception, reading exactly as recorded (see the module docstring)."""
    name = str(data.get("type") or "")
    message = str(data.get("message") or "")
    text = data.get("repr") if isinstance(data.get("repr"), str) else None
    raw_args = data.get("args")
    args = list(raw_args) if isinstance(raw_args, list) else [message]
    as_json = not any(isinstance(a, dict) and set(a) == {NOT_JSON} for a in args)
    kind = loaded_class(name)
    if kind is not None and as_json and issubclass(kind, Exception):
        for error in _candidates(kind, args):
            if _reads_as(error, message, text):
                return error
    base: type[BaseException] | None = None
    for base_name in data.get("bases") or ():
        base = loaded_class(str(base_name))
        if base is not None:
            break
    return _look_alike(base, name, message, text)


def _look_alike(
    base: type[BaseException] | None, name: str, message: str, text: str | None
) -> RecordedError:
    """A ``RecordedError`` (also a ``base`` when one is known) named like the recorded class."""
    if (
        base is None
        or base is Exception
        or base is BaseException
        or not issubclass(base, Exception)
    ):
        return RecordedError(message, name, text)
    qualname = name.rpartition(".")[2] or "RecordedError"

    def __init__(self: RecordedError, message: str, type_name: str, recorded_repr: Any) -> None:
        RecordedError.__init__(self, message, type_name, recorded_repr)

    namespace = {
        "__init__": __init__,
        "__str__": RecordedError.__str__,
        "__repr__": RecordedError.__repr__,
        "__module__": name.rpartition(".")[0] or __name__,
        "__qualname__": qualname,
    }
    try:
        kind = type(qualname, (RecordedError, base), namespace)
        return kind(message, name, text)
    except Exception:  # a base whose layout forbids mixing in or constructing
        return RecordedError(message, name, text)
