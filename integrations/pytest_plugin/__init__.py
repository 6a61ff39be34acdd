"""The pytest plugin: one cassette per test, strict CI replay, a session summary.

``plugin.py`` only registers options, markers, fixtures and hooks (it is what the
``pytest11`` entry point loads); the logic lives beside it, one job per module:
``runner`` (the session's object: settings, policy, the checks after a test),
``fixture`` (the ``cassette`` fixture's cassette), ``guard`` (the live-call guard),
``settings`` (which mode, where, how strict), ``markers`` and ``defaults`` (what a
test's marker and ``cassette_config`` ask for), ``location`` (the file of a test),
``stash`` (what a test carries between hooks), ``session`` (what happened, merged
across xdist workers), ``report`` (numbers from that data), ``terminal`` (how they are
printed), ``failure`` (a cassette error as a short report) and ``usage`` (the record
that ``chaincassette prune`` reads).

Every pytest session loads the plugin, also in projects that use no cassette, so what
it imports at start is light: ``fixture`` (and with it the engine and YAML) is imported
by the first test that asks for a cassette, the frameworks' support when the program
imports the framework, and the report, terminal, failure and usage modules when there
is something to report. ``location``, ``session``, ``report``, ``terminal`` and
``usage`` do not import pytest, so the CLI can read the usage record without it.
"""

from chaincassette.packages import adopt

adopt(__name__)  # its submodules come from sys.modules (chaincassette.packages)
