"""``python tests/fakes`` serves the forecast model until Ctrl-C and prints the URL to set as
``OPENAI_BASE_URL`` (and ``OPENAI_API_BASE``), the way the README's snippets are run."""

from __future__ import annotations

import contextlib
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakes.scripts import forecast
from fakes.wire import FakeServer

with FakeServer(forecast) as fake, contextlib.suppress(KeyboardInterrupt):
    print(fake.url, flush=True)
    threading.Event().wait()
