"""Replay needs no provider key: unset key variables read as a placeholder while a cassette replays.

Provider clients refuse to start without a key (``ChatOpenAI()`` raises when it is built,
often at import time), although a replay never calls the provider. So while something
replays, each provider key variable that is unset or empty holds ``PLACEHOLDER``, and is
unset again when the last replay ends; a key that is set is never touched.

The placeholder has a secret's format, so redaction removes it from what is stored. A
cassette that *records* while it is set sends it with a client built under it, and the
provider's authentication error is then not recorded (``explained``). The environment
belongs to the process, so one use-counted ``PLACEHOLDERS`` holds it.
``CHAINCASSETTE_PLACEHOLDER_KEYS=0`` turns all of this off.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from .modes import RecordMode

PLACEHOLDER = "sk-chaincassette-replay-placeholder-v1"
"""What an unset provider key reads while a cassette replays (never a real key)."""
SWITCH_ENV_VAR = "CHAINCASSETTE_PLACEHOLDER_KEYS"
"""``0``/``false``/``off``/``no``: never set placeholder keys."""
PROVIDER_KEY_VARS = (
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "COHERE_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "VOYAGE_API_KEY",
)
_OFF = ("0", "false", "off", "no")
#: Status codes and class names of a provider's "your key is wrong" answer.
_AUTH_STATUSES = (401, 403)
_AUTH_NAMES = ("AuthenticationError", "PermissionDeniedError", "Unauthorized")


def enabled(environ: MutableMapping[str, str] | None = None) -> bool:
    """False when ``CHAINCASSETTE_PLACEHOLDER_KEYS`` turns placeholders off."""
    env = os.environ if environ is None else environ
    return env.get(SWITCH_ENV_VAR, "").strip().lower() not in _OFF


def _unset(environ: MutableMapping[str, str], name: str) -> bool:
    """``OPENAI_API_KEY=`` counts as unset: clients reject an empty key like a missing one."""
    return not environ.get(name, "").strip()


def placeholder_environment(environ: dict[str, str]) -> dict[str, str]:
    """``environ`` with the placeholder in each unset provider key (for a child process
    that replays, ``chaincassette run --replay``); unchanged when switched off."""
    if not enabled(environ):
        return dict(environ)
    placed = {name: PLACEHOLDER for name in PROVIDER_KEY_VARS if _unset(environ, name)}
    return {**environ, **placed}


class PlaceholderKeys:
    """The placeholder keys of one environment, held by any number of replays at once."""

    def __init__(
        self,
        environ: MutableMapping[str, str] | None = None,
        names: tuple[str, ...] = PROVIDER_KEY_VARS,
    ) -> None:
        self._environ = os.environ if environ is None else environ
        self._names = names
        self._lock = threading.Lock()
        self._holders = 0
        self._placed: dict[str, str | None] = {}
        """Each variable set here → what it was before (``None``: unset, ``""``: empty)."""

    def hold(self) -> Callable[[], None]:
        """Set the placeholders (the first holder does); returns this hold's idempotent release."""
        if not enabled(self._environ):
            return _nothing
        with self._lock:
            self._holders += 1
            if self._holders == 1:
                for name in self._names:
                    if _unset(self._environ, name):
                        self._placed[name] = self._environ.get(name)
                        self._environ[name] = PLACEHOLDER
        released = threading.Event()

        def release() -> None:
            if released.is_set():
                return
            released.set()
            self._release()

        return release

    def _release(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders:
                return
            placed, self._placed = self._placed, {}
            for name, before in placed.items():
                if self._environ.get(name) != PLACEHOLDER:
                    continue  # the program set its own value meanwhile: leave it
                if before is None:
                    del self._environ[name]
                else:
                    self._environ[name] = before

    @contextmanager
    def held(self) -> Iterator[None]:
        release = self.hold()
        try:
            yield
        finally:
            release()

    def placed(self) -> tuple[str, ...]:
        """The variables that hold the placeholder now."""
        with self._lock:
            return tuple(n for n in self._placed if self._environ.get(n) == PLACEHOLDER)


PLACEHOLDERS = PlaceholderKeys()
"""The process's placeholder keys (its environment is one, whoever replays)."""


def _nothing() -> None:
    return None


def replays(cassette: Any) -> bool:
    """Whether ``cassette`` never calls the live model, judged without reading the file."""
    mode = cassette.mode
    return mode is RecordMode.REPLAY or (mode is RecordMode.ONCE and cassette.path.exists())


def hold_while_replaying(cassette: Any) -> Callable[[], None]:
    """Hold the placeholders when ``cassette`` replays; returns the release (a no-op otherwise)."""
    return PLACEHOLDERS.hold() if replays(cassette) else _nothing


def while_replaying(cassette: Any) -> AbstractContextManager[None]:
    """The placeholders for a block in which ``cassette`` is active (``use_cassette``)."""
    return PLACEHOLDERS.held() if replays(cassette) else nullcontext()


def explained(error: BaseException) -> bool:
    """True for a provider's authentication error while placeholders are set (a client built
    under one sent it): it gets a note saying so, and is not recorded."""
    placed = PLACEHOLDERS.placed()
    if not placed or not _is_auth_error(error):
        return False
    note = (
        f"chaincassette: {', '.join(placed)} held chaincassette's replay placeholder (it was "
        "unset while a cassette replayed), so a client built then sent it to the provider. "
        "This error is not recorded; set your real key to record, or run the recording "
        "with --cassette-mode / CHAINCASSETTE_MODE (a recording run sets no placeholder)."
    )
    if hasattr(error, "add_note"):
        error.add_note(note)
    return True


def _is_auth_error(error: BaseException) -> bool:
    status = getattr(error, "status_code", None) or getattr(error, "status", None)
    if status in _AUTH_STATUSES:
        return True
    return any(cls.__name__ in _AUTH_NAMES for cls in type(error).__mro__)
