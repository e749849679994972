"""Slow clients against a real `lore serve` on loopback (the product's own Uvicorn settings,
lore.web.limits): connections that send their request a byte at a time, or never, are closed
at their deadline, and past the connection cap the oldest of them makes room, so a normal
request is still answered. Without token, as an attacker would."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from server_util import running

pytest.importorskip("fastapi")

HEAD = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
WAIT = 30.0  # seconds a test waits for what must happen, at most (never asserted as a speed)


@contextmanager
def slow_clients(url: str, n: int, first: bytes = HEAD) -> Iterator[list[socket.socket]]:
    """``n`` connections that each sent the start of a request and nothing more."""
    port = int(url.rsplit(":", 1)[1])
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
            s.sendall(first)
            socks.append(s)
        yield socks
    finally:
        for s in socks:
            s.close()


def closed(s: socket.socket) -> bool:
    """Whether the server closed ``s`` (end of file or a reset), without waiting."""
    s.setblocking(False)
    try:
        data = s.recv(4096)
    except BlockingIOError:
        return False
    except (ConnectionResetError, BrokenPipeError):
        return True
    finally:
        s.setblocking(True)
    return data == b""


def wait_until(check, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT:.0f} s: {what}")
        time.sleep(0.05)


def health(url: str) -> int:
    with httpx.Client(base_url=url, timeout=WAIT) as c:
        return c.get("/api/v1/health").status_code


def test_slow_headers_are_closed_at_their_deadline(lore):
    """Ten connections that never finish their headers and one that trickles a header byte
    every 0.1 s (data does not move the deadline): all closed; a normal request and a
    kept-alive connection's second request are answered meanwhile and after."""
    with running(lore, head_seconds=1.0) as url, slow_clients(url, 10) as socks:
        assert health(url) == 200
        trickle = socks[0]

        def trickled_and_closed() -> bool:
            try:
                trickle.sendall(b"x")
            except OSError:
                return True
            return closed(trickle)

        wait_until(trickled_and_closed, "the trickling connection closed")
        wait_until(lambda: all(closed(s) for s in socks[1:]), "every slow connection closed")
        with httpx.Client(base_url=url, timeout=WAIT) as c:  # one connection, two requests
            assert c.get("/api/v1/health").status_code == 200
            time.sleep(1.5)  # longer than the head deadline: an answered request resets it
            assert c.get("/api/v1/health").status_code == 200


def test_a_slow_body_is_closed_at_its_deadline(lore):
    """Headers in time, then a body that never comes: closed at the body's deadline."""
    post = (b"POST /api/v1/sync/push HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
            b"application/json\r\nContent-Length: 100000\r\n\r\n{\"protocol\": 3")
    with running(lore, body_seconds=1.0) as url, slow_clients(url, 3, post) as socks:
        wait_until(lambda: all(closed(s) for s in socks), "every slow body closed")
        assert health(url) == 200


def test_past_the_connection_cap_the_oldest_waiting_connection_makes_room(lore):
    """A cap of 20 and 40 connections that never send their headers (the deadline far off):
    the oldest 20 are closed as the others open, the newest 20 stay, and a normal request
    still gets in (closing the oldest waiting one)."""
    with running(lore, head_seconds=600.0, max_connections=20) as url, \
            slow_clients(url, 40) as socks:
        wait_until(lambda: all(closed(s) for s in socks[:20]), "the oldest 20 closed")
        assert not any(closed(s) for s in socks[20:])
        assert health(url) == 200
        wait_until(lambda: closed(socks[20]), "the oldest remaining one closed for the request")
        assert not any(closed(s) for s in socks[22:])
