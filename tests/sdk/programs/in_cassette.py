"""Run a program inside ``use_cassette(CASSETTE)`` with every socket blocked when ``OFFLINE``
is set; print the attempted connections last (``connections: N``)."""

import os
import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "live"))
import no_network

from chaincassette import use_cassette

if os.environ.get("OFFLINE"):
    no_network.install()
program, *args = sys.argv[1:]
sys.argv = [program, *args]
with use_cassette(os.environ["CASSETTE"]):
    runpy.run_path(program, run_name="__main__")
print(f"connections: {len(no_network.attempts())}")
