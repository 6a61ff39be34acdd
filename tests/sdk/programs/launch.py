"""Run a program as ``python`` would, with every socket blocked when ``OFFLINE`` is set, and
inside ``use_cassette(CASSETTE)`` when ``CASSETTE`` is set; print the connections the
program attempted last (``connections: N``)."""

import os
import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "live"))
from contextlib import nullcontext

import no_network

from chaincassette import use_cassette

if os.environ.get("OFFLINE"):
    no_network.install()
program, *args = sys.argv[1:]
sys.argv = [program, *args]
cassette = os.environ.get("CASSETTE")
with use_cassette(cassette) if cassette else nullcontext():
    runpy.run_path(program, run_name="__main__")
print(f"connections: {len(no_network.attempts())}")
