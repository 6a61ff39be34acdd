"""Suite-wide: say which random test order ran, even under ``-q`` (which hides the header).

pytest-randomly (in the ``dev`` extra) shuffles the tests on every run and reseeds
``random`` per test. Any failure that depends on the order is then reproducible with the
seed printed here: ``pytest --randomly-seed=N``; ``-p no:randomly`` turns shuffling off.
"""

from __future__ import annotations

import pytest


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    seed = getattr(config.option, "randomly_seed", None)
    if config.pluginmanager.has_plugin("randomly") and seed is not None:
        terminalreporter.write_line(f"random test order: rerun it with --randomly-seed={seed}")
