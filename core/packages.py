"""chaincassette's packages hand out only the modules ``sys.modules`` holds.

Python records every imported submodule as an attribute of its package, and
``from package import name`` (``from . import routing``) reads that attribute first. A run
that forgets the modules it imported (pytest's ``pytester`` puts ``sys.modules`` back
after an in-process inner session) leaves those attributes on the copies it dropped, and
the next import of such a module by its full name runs it again: code bound through the
package and code bound by the full name then hold two copies of one module, each with
its own state (two ``layers`` switches, so a streamed call was recorded by the framework
layer and again by the SDK layer underneath). A ``Package`` keeps no submodule: it
answers each from ``sys.modules``, so everything imported later shares one copy.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any


class Package(ModuleType):
    """A package whose submodules are looked up in ``sys.modules``, never kept."""

    def __getattr__(self, name: str) -> Any:
        module = sys.modules.get(f"{self.__name__}.{name}")
        if module is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        return module

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            return  # the import system noting a submodule: sys.modules holds it
        super().__setattr__(name, value)


def forgotten(function: Any) -> bool:
    """Whether ``function`` belongs to a copy of its module that ``sys.modules`` no longer
    holds (a run forgot it, or imported it again since): a registry drops what it gave."""
    home = getattr(function, "__globals__", None)
    if home is None:
        return False
    module = sys.modules.get(str(getattr(function, "__module__", "")))
    return module is None or vars(module) is not home


def adopt(name: str) -> None:
    """Make the package ``name`` a ``Package`` (from its ``__init__``, anywhere: a module the
    ``__init__`` imports itself is kept, or forgotten, with the package)."""
    sys.modules[name].__class__ = Package
