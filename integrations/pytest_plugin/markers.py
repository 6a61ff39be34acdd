"""What a test asks for: its ``@pytest.mark.cassette`` markers (a name, a mode, options) over
the ``cassette_config`` fixture's defaults (pytest-recording's ``vcr_config`` habit).

The file name is not a shared default: one name for every test of a module would make them
overwrite each other's recordings.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

import pytest

from chaincassette.modes import RecordMode

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


FIXTURE = "cassette_config"


def shared_options(
    item: pytest.Item, value: object, known: Set[str]
) -> tuple[str | None, dict[str, Any]]:
    """(mode, other options) from what ``cassette_config`` returned for ``item``; a value
    that is not a mapping of ``known`` options is a usage error naming the fixture."""
    if not isinstance(value, Mapping):
        raise pytest.UsageError(
            f"{item.nodeid}: the {FIXTURE} fixture must return a dict of cassette options "
            f"(like {{'replay_tools': True}}), not {type(value).__name__}"
        )
    options = {str(k): v for k, v in value.items()}
    if "name" in options:
        raise pytest.UsageError(
            f"{item.nodeid}: {FIXTURE} cannot set 'name': a cassette name is per test: give it "
            "with @pytest.mark.cassette('name')"
        )
    unknown = sorted(set(options) - set(known) - {"mode"})
    if unknown:
        expected = ", ".join(sorted(set(known) | {"mode"}))
        raise pytest.UsageError(
            f"{item.nodeid}: the {FIXTURE} fixture returned unknown option"
            f"{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"expected some of: {expected}"
        )
    mode = options.pop("mode", None)
    if mode is None:
        return None, options
    try:
        return RecordMode.parse(mode).value, options
    except ValueError as exc:
        raise pytest.UsageError(f"{item.nodeid}: the {FIXTURE} fixture's 'mode': {exc}") from None
