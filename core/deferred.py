"""Activation hooks that wait until the program imports their framework.

A hook may name the module it ``requires`` (``hook.requires = "llama_index.core"``). When a
``use_cassette`` block starts before that module is imported, the hook is entered the
moment the program imports it, inside the same block, and exited with the block. A
LangChain program so never pays for importing LlamaIndex, and ``chaincassette run``,
which starts the cassette before the program's first import, still covers everything.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

Hook = Callable[[Any], "AbstractContextManager[Any] | None"]

_lock = threading.RLock()
_pending: list[_Pending] = []


@dataclass(eq=False)
class _Pending:
    hook: Hook
    cassette: Any
    stack: ExitStack
    requires: str


def enter_hook(hook: Hook, cassette: Any, stack: ExitStack) -> None:
    """Enter ``hook`` for ``cassette`` on ``stack`` now, or once its framework is imported."""
    requires = getattr(hook, "requires", None)
    if not requires or requires in sys.modules:
        _enter(hook, cassette, stack)
        return
    pending = _Pending(hook, cassette, stack, requires)
    with _lock:
        _pending.append(pending)
        _WATCHER.install()
        imported_meanwhile = requires in sys.modules
        if imported_meanwhile:
            _pending.remove(pending)
    if imported_meanwhile:
        _enter(hook, cassette, stack)
    else:
        stack.callback(_forget, pending)


def _enter(hook: Hook, cassette: Any, stack: ExitStack) -> None:
    manager = hook(cassette)
    if manager is not None:
        stack.enter_context(manager)


def _forget(pending: _Pending) -> None:
    with _lock:
        if pending in _pending:
            _pending.remove(pending)
        if not _pending:
            _WATCHER.uninstall()


def _imported(name: str) -> None:
    with _lock:
        ready = [p for p in _pending if p.requires == name]
        for pending in ready:
            _pending.remove(pending)
        if not _pending:
            _WATCHER.uninstall()
    for pending in ready:
        _enter(pending.hook, pending.cassette, pending.stack)


class _Watcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the real loader of a watched module to hear it finish."""

    def install(self) -> None:
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def uninstall(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        with _lock:
            if not any(p.requires == fullname for p in _pending):
                return None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _NotifyingLoader(spec.loader, fullname)
                return spec
        return None


class _NotifyingLoader(importlib.abc.Loader):
    """Delegates everything to the real loader, then reports the module as imported."""

    def __init__(self, loader: Any, name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        try:
            self._loader.exec_module(module)
        finally:  # the module keeps its real loader: ``isinstance`` checks on it still hold
            module.__loader__ = self._loader
            if module.__spec__ is not None:
                module.__spec__.loader = self._loader
        _imported(self._name)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, resource readers…
        return getattr(self._loader, name)


_WATCHER = _Watcher()
