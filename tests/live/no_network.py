"""Make every outgoing connection fail, and count the attempts.

A replay that "works" could still have opened a connection (to a server that
happens to be up, or one that failed and was retried quietly). The replay
processes of the live tier and the examples' tests install this guard first and
report ``attempts()``; the tests assert it is zero. Both ``socket.create_connection``
(the sync httpx/http.client path) and ``socket.socket.connect``/``connect_ex`` (what
asyncio and anyio call on their own sockets) are covered.
"""

from __future__ import annotations

import socket
from typing import Any

_attempts: list[str] = []


class NetworkForbidden(OSError):
    """Raised instead of connecting: a replay must never touch the network."""


def _refuse(address: Any) -> None:
    _attempts.append(repr(address))
    raise NetworkForbidden(f"chaincassette replay tried to connect to {address!r}")


def install() -> None:
    """Replace the connecting functions of the ``socket`` module for this process."""

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        _refuse(address)
        raise AssertionError("unreachable")

    def connect(self: socket.socket, address: Any) -> None:
        _refuse(address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        _refuse(address)
        return 1

    socket.create_connection = create_connection  # type: ignore[assignment]
    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]


def attempts() -> list[str]:
    """The addresses something tried to connect to since ``install()``."""
    return list(_attempts)
