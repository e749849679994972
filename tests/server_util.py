"""A real Uvicorn server on a free loopback port, in a thread, for the web tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running(lore: Any, *, require_token: bool = False, **limits: Any) -> Iterator[str]:
    """Serve ``lore`` as `lore serve` does (its protocol and limits; ``limits`` overrides
    them, see lore.web.limits.server_options) until the block ends; yields the base URL."""
    import uvicorn

    from lore.web import create_app
    from lore.web.limits import server_options

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(lore, require_token=require_token),
                                           host="127.0.0.1", port=port, log_level="warning",
                                           **server_options(**limits)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
