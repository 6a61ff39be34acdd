"""A plain program whose one "model call" goes through ``@recorded`` (for the mechanics of run)."""

import json
import os
import sys
import uuid
from pathlib import Path

from chaincassette import recorded


@recorded(name="provider.ask")
def ask(question: str) -> dict:
    with Path(os.environ["CALLS_LOG"]).open("a") as log:
        log.write(question + "\n")
    return {
        "id": f"resp_{uuid.uuid4().hex}",
        "answer": question[::-1],
        "usage": {"total_tokens": 9},
    }


try:
    reply = ask(sys.argv[1])["answer"]
except Exception:  # like an SDK retry wrapper or an agent framework: a fallback answer
    reply = "fallback"
print(json.dumps({"argv": sys.argv[1:], "reply": reply, "main": __name__}))
sys.exit(3)
