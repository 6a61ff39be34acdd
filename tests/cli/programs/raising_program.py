"""A program that makes one recorded call, reports whether it has a provider key, then crashes."""

import json
import os
import sys

from chaincassette import recorded


@recorded(name="provider.ask")
def ask(question: str) -> dict:
    return {"answer": question.upper(), "usage": {"total_tokens": 5}}


reply = ask(sys.argv[1])["answer"]
key = os.environ.get("OPENAI_API_KEY")
print(json.dumps({"reply": reply, "key": "empty" if not key else "set"}))
raise RuntimeError("the program crashed after its model call")
