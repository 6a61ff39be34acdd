"""Provider SDKs called directly: ``openai`` and ``anthropic`` clients in the same cassette.

A program's own SDK calls are recorded and replayed at the HTTP transport both SDKs use
(``transport``), keyed by what the model reads (``requests``); this package imports
neither httpx nor an SDK until a block or the live-call guard installs it (``adapters``).
"""

from chaincassette.packages import adopt

adopt(__name__)  # its submodules come from sys.modules (chaincassette.packages)
