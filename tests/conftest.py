"""Suite-wide settings.

- Journals and run state (``chaincassette.journal``) live in a scratch folder, never in the
  user's home; subprocesses the tests start inherit it.
- Say which random test order ran, even under ``-q`` (which hides the header).
  pytest-randomly (in the ``dev`` extra) shuffles the tests on every run and reseeds
  ``random`` per test. Any failure that depends on the order is then reproducible with the
  seed printed here: ``pytest --randomly-seed=N``; ``-p no:randomly`` turns shuffling off.
"""

from __future__ import annotations

import os
import tempfile

import pytest

os.environ.setdefault("CHAINCASSETTE_STATE_DIR", tempfile.mkdtemp(prefix="chaincassette-state-"))


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    seed = getattr(config.option, "randomly_seed", None)
    if config.pluginmanager.has_plugin("randomly") and seed is not None:
        terminalreporter.write_line(f"random test order: rerun it with --randomly-seed={seed}")
