"""``make demo``: replay the LangGraph supervisor example offline, from its committed cassette.

No server, no network, no API key: every model call of the run (a supervisor routing
between two specialist agents that call tools, recorded once against a real local LLM)
is answered from ``examples/supervisor/cassette.yaml``. Re-record it with
``python examples/supervisor/supervisor.py --record`` (needs ``make live``'s packages).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "supervisor"))

from supervisor import report, run


def main() -> int:
    print("chaincassette demo: a LangGraph supervisor with two specialist agents, replayed\n")
    result = run()
    print(report(result))
    if result.live_calls:
        print("error: the replay made live calls", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
