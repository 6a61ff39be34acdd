"""Framework integrations: thin adapters over the engine's call protocol.

Each framework package reads as: request builder (the canonical request from the
framework's objects), codec (its responses to JSON and back), routing (the one rule for
which cassette serves a call), patches (interception points, each a short adapter over
``Cassette.begin`` → ``Call``), trace observer, public class. ``hooks`` declares each
integration's ``Adapter`` for ``use_cassette``; the pytest plugin sits on top. The two
frameworks never import each other, and nothing here imports a framework until the
program does.
"""

from chaincassette.packages import adopt

adopt(__name__)  # its submodules come from sys.modules (chaincassette.packages)
