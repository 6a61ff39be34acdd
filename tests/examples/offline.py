"""Run an example script with every outgoing connection refused, then report the attempts.

``python offline.py EXAMPLE [ARGS...]`` installs the live tier's socket guard, runs the
example as ``__main__``, and prints ``connection attempts: N`` to stderr at the end, so
a test can tell "replayed offline" from "quietly retried a connection and fell back".
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))

import no_network


def main() -> int:
    no_network.install()
    script, *args = sys.argv[1:]
    sys.argv = [script, *args]
    code: int | str | None = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
    finally:
        print(f"connection attempts: {len(no_network.attempts())}", file=sys.stderr)
    return code if isinstance(code, int) else 1


if __name__ == "__main__":
    sys.exit(main())
