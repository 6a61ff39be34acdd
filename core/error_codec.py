"""Recording an exception, and raising it again on replay so that it reads exactly the same.

Agents feed ``str(error)`` into their next model request, so a replayed error must read
exactly like the recorded one or the next call misses. The stored form keeps the class
name, its bases' names, its args, ``str`` and ``repr``, and for provider errors the HTTP
``status``, the headers retry code reads and the error's plain attributes.

A cassette is data: rebuilding never imports a module the file names. The recorded class
is used only when it is loaded and the rebuilt error reads the same; else a look-alike
``RecordedError`` that also subclasses the nearest loaded base (``except ValueError``
still catches it). An exception that steers the program (``CONTROL_FLOW_TYPES``: a skip,
an interrupt, chaincassette's own errors) is never recorded, and a file naming one is
refused (``StoredErrorRefused``) before any of it is built.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import sys
from typing import Any

#: An argument that is not JSON is stored as ``{NOT_JSON: repr(arg)}``.
NOT_JSON = "__repr__"


#: Response headers kept with a recorded error (lower case; ``x-ratelimit-*`` by prefix).
KEPT_HEADERS = ("retry-after", "retry-after-ms", "content-type", "x-request-id", "request-id")
KEPT_HEADER_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
#: Builtin exceptions that mean a bug in the calling program, not a provider's answer:
#: never recorded, so fixing the bug and running again calls the provider again.
PROGRAMMING_ERRORS: tuple[type[BaseException], ...] = (
    TypeError,
    AttributeError,
    NameError,
    ImportError,
    AssertionError,
    NotImplementedError,
    RecursionError,
    MemoryError,
    SyntaxError,
)


#: Exceptions that steer a program instead of reporting a failed call (qualified names).
CONTROL_FLOW_TYPES = frozenset(
    {
        "builtins.KeyboardInterrupt",
        "builtins.SystemExit",
        "builtins.GeneratorExit",
        "builtins.StopIteration",
        "builtins.StopAsyncIteration",
        "asyncio.CancelledError",
        "asyncio.exceptions.CancelledError",
        "concurrent.futures.CancelledError",
        "concurrent.futures._base.CancelledError",
        "trio.Cancelled",
        "bdb.BdbQuit",
        "unittest.SkipTest",
        "unittest.case.SkipTest",
        "langgraph.errors.GraphBubbleUp",
        "langgraph.errors.GraphInterrupt",
        "langgraph.errors.NodeInterrupt",
        "langgraph.errors.ParentCommand",
    }
)
#: Modules whose every exception is control flow (pytest's outcomes, unittest's signals,
#: chaincassette's own errors: a replayed ``CassetteMiss`` would lie about the run).
CONTROL_FLOW_MODULES = ("_pytest", "pytest", "unittest", "doctest", "chaincassette.errors")
#: Class names refused whatever module they claim (a look-alike must not pose as one).
CONTROL_FLOW_NAMES = frozenset(name.rpartition(".")[2] for name in CONTROL_FLOW_TYPES) | {
    "Skipped",
    "Failed",
    "XFailed",
    "Exit",
    "OutcomeException",
    "CassetteMiss",
}
#: Bases every error has: never a reason to refuse one.
_PLAIN_BASES: tuple[type, ...] = (Exception, BaseException, object)
_ROOT_NAMES = frozenset(f"builtins.{base.__name__}" for base in _PLAIN_BASES)


class StoredErrorRefused(ValueError):
    """A stored error names a type a cassette may not raise (see ``refusal``)."""


def refusal(name: str) -> str | None:
    """Why a stored error whose class or base is ``name`` may not be raised (``None``: it
    may), by the name and by the class if it is loaded; never imports anything."""
    module, _, tail = name.rpartition(".")
    if name in CONTROL_FLOW_TYPES or tail in CONTROL_FLOW_NAMES:
        return (
            f"{name} steers the program (a skip, an interrupt, an exit), it is no error of a call"
        )
    if any(module == m or module.startswith(m + ".") for m in CONTROL_FLOW_MODULES):
        return f"{name} belongs to {module}, whose exceptions are no errors of a call"
    loaded = loaded_class(name)
    if loaded is not None:
        if not issubclass(loaded, Exception):
            return f"{name} is not an Exception (a failed call raises an Exception)"
        for other in CONTROL_FLOW_TYPES:
            steering = loaded_class(other)
            if steering is not None and issubclass(loaded, steering):
                return f"{name} is a {other}, which steers the program"
    return None


def stored_refusal(data: dict[str, Any]) -> str | None:
    """``refusal`` for a stored error: its type and every base it names."""
    bases = data.get("bases")
    if bases is None:
        bases = []
    if not isinstance(bases, list):
        return f"the error's 'bases' must be a list of class names, found {bases!r}"
    kind = data.get("type")
    for name in [kind, *(b for b in bases if b not in _ROOT_NAMES)]:
        if name is None:
            continue
        if not isinstance(name, str):
            return f"the error's type and bases must be class names, found {name!r}"
        why = refusal(name)
        if why is not None:
            return why
    return None


def recordable(error: BaseException) -> bool:
    """Whether a cassette keeps ``error`` as the outcome of a live call: an ``Exception``
    that is not control flow (chaincassette's own errors are) or a bug (``PROGRAMMING_ERRORS``)."""
    return not isinstance(error, PROGRAMMING_ERRORS) and not steers(error)


def steers(error: BaseException) -> bool:
    """Whether ``error`` is control flow (``CONTROL_FLOW_TYPES``), not an error of a call."""
    if not isinstance(error, Exception):
        return True
    return any(
        refusal(class_name(c)) is not None
        for c in type(error).__mro__
        if c not in _PLAIN_BASES and not issubclass(RecordedError, c)
    )


class RecordedResponse:
    """The part of an HTTP response a rebuilt provider error carries (``error.response``)."""

    def __init__(self, status_code: int | None, headers: dict[str, str]) -> None:
        self.status_code = status_code
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.request = None

    def __repr__(self) -> str:
        return f"<RecordedResponse [{self.status_code}]>"


class RecordedError(Exception):
    """A recorded exception whose class cannot be rebuilt here, reading exactly as it did;
    ``type_name`` names its class (``module.QualName``)."""

    def __init__(self, message: str, type_name: str = "", recorded_repr: str | None = None) -> None:
        # not super(): in a look-alike the next base may want other arguments
        Exception.__init__(self, message)
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
    with contextlib.suppress(TypeError, ValueError):
        if json.loads(json.dumps(value)) == value:
            return value
    return {NOT_JSON: repr(value)}


def _kept_headers(headers: Any) -> dict[str, str]:
    kept: dict[str, str] = {}
    try:
        items = list(headers.items())
    except Exception:
        return kept
    for name, value in items:
        lower = str(name).lower()
        if lower in KEPT_HEADERS or lower.startswith(KEPT_HEADER_PREFIXES):
            kept[lower] = str(value)
    return kept


def _status_and_headers(error: BaseException) -> tuple[int | None, dict[str, str]]:
    response = getattr(error, "response", None)
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(error, "status", None) or getattr(response, "status_code", None)
    headers = _kept_headers(getattr(response, "headers", None) or {})
    return (status if isinstance(status, int) else None), headers


def _plain_attributes(error: BaseException) -> dict[str, Any]:
    """The error's own JSON attributes (``code``, ``type``, ``body``...), small ones only."""
    kept: dict[str, Any] = {}
    for name, value in getattr(error, "__dict__", {}).items():
        if name.startswith("_") or name in ("args", "response", "request"):
            continue
        if isinstance(value, str | int | float | bool) or value is None:
            kept[name] = value
        elif isinstance(value, dict | list):
            try:
                text = json.dumps(value)
            except (TypeError, ValueError):
                continue
            if len(text) <= 4000 and json.loads(text) == value:
                kept[name] = value
    return kept


def encode_error(error: BaseException) -> dict[str, Any]:
    """What a cassette stores about ``error`` (the value of an interaction's ``error``)."""
    kind = type(error)
    replayed = isinstance(error, RecordedError)
    name = error.type_name if isinstance(error, RecordedError) else ""  # replayed, re-recorded
    encoded: dict[str, Any] = {
        "type": name or class_name(kind),
        "bases": [class_name(c) for c in kind.__mro__[1:] if c is not object],
        "args": [_encode_arg(arg) for arg in error.args],
        "message": str(error),
        "repr": repr(error),
    }
    status, headers = _status_and_headers(error)
    if status is not None:
        encoded["status"] = status
    if headers:
        encoded["headers"] = headers
    attributes = _plain_attributes(error)
    for own in ("message", "type_name", "recorded_repr") if replayed else ():
        attributes.pop(own, None)
    if attributes:
        encoded["attributes"] = attributes
    return encoded


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
    with contextlib.suppress(Exception):  # a class whose __init__ takes other arguments
        bare = kind.__new__(kind, *args)
        bare.args = tuple(args)
        built.append(bare)
    return built


def _reads_as(error: BaseException, message: str, text: str | None) -> bool:
    try:
        return str(error) == message and (text is None or repr(error) == text)
    except Exception:
        return False


def rebuild_error(data: dict[str, Any]) -> BaseException:
    """The recorded exception, reading exactly as recorded (``StoredErrorRefused``: it names
    a type a cassette may not raise)."""
    why = stored_refusal(data)
    if why is not None:
        raise StoredErrorRefused(f"a stored error may only be an error of a call: {why}")
    name = str(data.get("type") or "")
    message = str(data.get("message") or "")
    text = data.get("repr") if isinstance(data.get("repr"), str) else None
    raw_args = data.get("args")
    args = list(raw_args) if isinstance(raw_args, list) else [message]
    as_json = not any(isinstance(a, dict) and set(a) == {NOT_JSON} for a in args)
    kind = loaded_class(name)
    if kind is not None and as_json and issubclass(kind, Exception):
        candidates = _candidates(kind, args)
        for error in candidates:
            if _reads_as(error, message, text):
                return _restore_details(error, data)
        if any(_reads_as(error, message, None) for error in candidates):
            # its str reads as stored, its repr not (redaction masked a quote, and repr
            # picks other quotes): its own look-alike, caught where the class is
            alike = _look_alike(kind, name, message, text)
            if isinstance(alike, kind):
                return _restore_details(alike, data)
    base: type[BaseException] | None = None
    for base_name in data.get("bases") or ():
        base = loaded_class(str(base_name))
        if base is not None:
            break
    return _restore_details(_look_alike(base, name, message, text), data)


def as_raised(error: BaseException, stored: dict[str, Any]) -> BaseException:
    """What a live call raises once ``stored`` (``error`` encoded and redacted) is kept:
    ``error``, or the error a replay raises when redaction changed it, so both agree."""
    if stored == encode_error(error):
        return error
    try:
        return rebuild_error(stored)
    except StoredErrorRefused:
        return error


def _restore_details(error: BaseException, data: dict[str, Any]) -> BaseException:
    """Set the recorded attributes, status and headers on a rebuilt error (best effort)."""
    attributes = data.get("attributes")
    for name, value in attributes.items() if isinstance(attributes, dict) else ():
        if name in ("args", "response", "request") or name.startswith("_"):
            continue
        with contextlib.suppress(Exception):
            setattr(error, str(name), value)
    status = data.get("status")
    headers = data.get("headers")
    if isinstance(status, int) or isinstance(headers, dict):
        with contextlib.suppress(Exception):
            if isinstance(status, int) and getattr(error, "status_code", None) is None:
                error.status_code = status  # type: ignore[attr-defined]
            if getattr(error, "response", None) is None:
                error.response = RecordedResponse(  # type: ignore[attr-defined]
                    status if isinstance(status, int) else None,
                    {str(k): str(v) for k, v in (headers or {}).items()},
                )
    return error


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
    namespace = {"__module__": name.rpartition(".")[0] or __name__, "__qualname__": qualname}
    try:
        kind: type[RecordedError] = type(qualname, (RecordedError, base), namespace)
        # built without the base's __init__ (openai's APIStatusError wants a response)
        error = kind.__new__(kind, message)
        RecordedError.__init__(error, message, name, text)
        return error
    except Exception:  # a base whose layout forbids mixing in or constructing
        return RecordedError(message, name, text)
