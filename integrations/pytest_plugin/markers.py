"""What a test's ``@pytest.mark.cassette`` markers ask for: a name, a mode, options."""

from __future__ import annotations

from typing import Any

import pytest

MARKER = "cassette"


def marker_arguments(item: pytest.Item) -> tuple[str | None, str | None, dict[str, Any]]:
    """(name, mode, options) from every ``cassette`` marker; the closest one wins."""
    name: str | None = None
    mode: str | None = None
    options: dict[str, Any] = {}
    for marker in reversed(list(item.iter_markers(MARKER))):  # outermost first
        if len(marker.args) > 1:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.cassette takes at most one positional argument (name)"
            )
        kwargs = dict(marker.kwargs)
        if marker.args:
            name = marker.args[0]
        if "name" in kwargs:
            name = kwargs.pop("name")
        if "mode" in kwargs:
            mode = kwargs.pop("mode")
        options.update(kwargs)
    return name, mode, options
