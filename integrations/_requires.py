"""A clear ``ImportError`` when an integration's framework is not installed.

chaincassette's core install is light (PyYAML only); each framework comes with an
extra. Importing ``chaincassette.integrations.langchain`` without LangChain should say
which extra to install, not fail deep inside a submodule with "No module named ...".
"""

from __future__ import annotations

import importlib


def require(module: str, *, integration: str, distribution: str, extra: str) -> None:
    """Import ``module`` or raise an ``ImportError`` that names the extra to install."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"chaincassette.integrations.{integration} needs {distribution}, which cannot be "
            f"imported ({exc}). Install it with: pip install 'chaincassette[{extra}]'",
            name=module,
        ) from exc
