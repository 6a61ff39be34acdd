"""Provider SDKs called directly: ``openai`` and ``anthropic`` clients in the same cassette.

A program's own SDK calls (a tool that summarises with ``openai.OpenAI()``, a grader on
``anthropic.Anthropic()``) are recorded and replayed at the HTTP transport both SDKs use
(``transport``), keyed by what the model reads (``requests``), as LangChain's and
LlamaIndex's calls are. Installed by ``use_cassette``, ``chaincassette run``, the pytest
fixture and the live-call guard (``adapters``, entry points ``chaincassette.hooks``); this
package imports neither httpx nor an SDK until then.
"""

from chaincassette.packages import adopt

adopt(__name__)  # its submodules come from sys.modules (chaincassette.packages)
