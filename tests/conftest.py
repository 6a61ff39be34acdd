"""The suite's journals and run state live in a scratch folder, never in the user's home
(``chaincassette.journal``); subprocesses the tests start inherit it."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("CHAINCASSETTE_STATE_DIR", tempfile.mkdtemp(prefix="chaincassette-state-"))
