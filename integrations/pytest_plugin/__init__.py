"""The pytest plugin: one cassette per test, strict CI replay, a session summary.

``plugin.py`` only registers options, markers, fixtures and hooks (it is what the
``pytest11`` entry point loads); the logic lives beside it, one job per module:
``settings`` (which mode, where, how strict), ``location`` (the file of a test),
``session`` (what happened, merged across xdist workers), ``report`` (numbers from
that data), ``terminal`` (how they are printed) and ``usage`` (the record that
``chaincassette prune`` reads). Nothing here but ``plugin`` and ``runner`` imports
pytest, so the CLI can read the usage record without it.
"""
