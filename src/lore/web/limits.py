"""Slow clients: `lore serve` closes a connection whose request does not arrive in time, and
keeps a bound on open connections.

Uvicorn times out only the idle time between two requests of a kept-alive connection
(``timeout_keep_alive``): a client that opens a connection and sends its headers a byte at a
time, or never, holds it (and a file descriptor) for good, and a few hundred such clients
take the server down without a token. So each connection here has a deadline for its
request's head (``head_seconds``, from its first byte or its opening) and then for its body
(``body_seconds``); neither is moved by data arriving. A connection past its deadline is
closed. Past ``max_connections`` open connections, a new one closes the oldest connection
still waiting for its request (or itself, when every connection is being answered), so a
normal request gets in while slow ones are held off. The listening socket's backlog is 128
(Uvicorn's default of 2048 is also how many connections asyncio accepts in one go, so a burst
of them passed the cap before any was closed). Uvicorn's own limits stay: the head of a
request may be at most 16 kB (h11's bound), and an idle kept-alive connection closes after
five seconds.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_SECONDS = 10.0       # a request's line and headers must arrive within this
BODY_SECONDS = 120.0      # and its body within this after them (a sync batch is at most 32 MB)
MAX_CONNECTIONS = 256     # open connections; past it the oldest still waiting is closed
KEEP_ALIVE_SECONDS = 5    # an idle kept-alive connection closes after this (Uvicorn's default)
MAX_HEAD_BYTES = 16 * 1024  # the line and headers of one request (h11's default bound)
BACKLOG = 128  # connections accepted in one go (Uvicorn's 2048 let a burst pass the cap)
_OPENED = itertools.count()  # the order connections were opened in


class Deadlines(H11Protocol):
    """Uvicorn's h11 protocol with a deadline for each request's head and body and a cap on
    open connections (the class attributes; :func:`server_options` sets them)."""

    head_seconds = HEAD_SECONDS
    body_seconds = BODY_SECONDS
    max_connections = MAX_CONNECTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadline: asyncio.TimerHandle | None = None
        self.phase: str | None = None  # "head", "body", or None: nothing to wait for
        self.opened = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.opened = next(_OPENED)
        self.arm("head")
        if len(self.connections) > self.max_connections:
            waiting = [c for c in self.connections
                       if isinstance(c, Deadlines) and c.phase is not None and c is not self]
            victim = min(waiting, key=lambda c: c.opened) if waiting else self
            victim.expire()

    def data_received(self, data: bytes) -> None:
        if self.phase is None:  # the next request on a kept-alive connection
            self.arm("head")
        super().data_received(data)
        self.follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm()
        super().connection_lost(exc)

    def follow(self) -> None:
        """Move the deadline on as the request arrives: the body's once the head is in,
        none once the whole request is."""
        state = self.conn.their_state
        if state is h11.IDLE:
            return
        if state is h11.SEND_BODY:
            if self.phase != "body":
                self.arm("body")
        else:
            self.disarm()

    def arm(self, phase: str) -> None:
        self.disarm()
        self.phase = phase
        seconds = self.head_seconds if phase == "head" else self.body_seconds
        self.deadline = self.loop.call_later(seconds, self.expire)

    def disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
        self.phase = None

    def expire(self) -> None:
        """Close the connection: its request is late, or room is needed for a new one."""
        self.disarm()
        if not self.transport.is_closing():
            self.transport.close()


def server_options(*, head_seconds: float = HEAD_SECONDS, body_seconds: float = BODY_SECONDS,
                   max_connections: int = MAX_CONNECTIONS) -> dict[str, Any]:
    """The options `lore serve` gives ``uvicorn.run`` (or ``uvicorn.Config``): the protocol
    above with these limits, Uvicorn's keep-alive timeout and h11's bound on a request's
    head."""
    protocol = type("LoreHTTP", (Deadlines,), {"head_seconds": head_seconds,
                                                "body_seconds": body_seconds,
                                                "max_connections": max_connections})
    return {"http": protocol, "timeout_keep_alive": KEEP_ALIVE_SECONDS,
            "h11_max_incomplete_event_size": MAX_HEAD_BYTES, "backlog": BACKLOG}
