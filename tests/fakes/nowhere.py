"""Where replays point: addresses that never give an answer, so a call that escaped its
cassette fails (and, with ``DeadPort``, is counted)."""

from __future__ import annotations

import socket
import threading


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens: any request fails at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class DeadPort:
    """A listening socket that never answers and counts every connection attempt."""

    def __init__(self) -> None:
        self.accepted = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def __enter__(self) -> DeadPort:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.thread.join(2)
        self.sock.close()
