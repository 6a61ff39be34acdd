"""What recorded a cassette, so that staleness can be reported later."""

from __future__ import annotations

import platform
import sys
from datetime import date
from importlib import metadata

#: Distributions worth naming in a cassette, with the module whose presence means "in use".
FRAMEWORKS = {
    "langchain-core": "langchain_core",
    "langgraph": "langgraph",
    "llama-index-core": "llama_index.core",
    "openai": "openai",
    "anthropic": "anthropic",
}


def library_version() -> str:
    try:
        return metadata.version("chaincassette")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def recorded_with() -> dict[str, str]:
    """Versions of chaincassette, Python and every framework this process has imported."""
    versions = {
        "chaincassette": library_version(),
        "python": ".".join(platform.python_version_tuple()[:2]),
    }
    for dist, module in FRAMEWORKS.items():
        if module in sys.modules:
            try:
                versions[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
    return versions


def today() -> str:
    return date.today().isoformat()
