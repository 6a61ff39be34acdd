"""The pytest plugin: one cassette per test, strict CI replay, a session summary.

``plugin.py`` (the ``pytest11`` entry point) only registers options, markers, fixtures and
hooks; ``runner`` does the work, with one module per job beside it. Every session loads the
plugin, so what it imports at start is light: ``fixture`` brings in the engine and YAML at
the first test that asks for a cassette. ``location``, ``session``, ``terminal`` and
``usage`` do not import pytest, so the CLI can read the usage record without it.
"""

from chaincassette.packages import adopt

adopt(__name__)  # its submodules come from sys.modules (chaincassette.packages)
