"""What every request shares: one facade on one connection under one lock, the rules of
access (whether a token is required, which hosts a loopback server answers) and the scheduled
analysis (which runs on its own connection, never under the lock)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from starlette.requests import Request

    from lore.api import Lore
    from lore.core.tokens import TokenInfo
    from lore.schedule import Scheduler

T = TypeVar("T")

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


class ServerState:
    """The facade and the access rules of one running server."""

    def __init__(self, lore: Lore, *, require_token: bool, scheduler: Scheduler) -> None:
        self.lore = lore
        self.require_token = require_token
        self.scheduler = scheduler
        self._lock = threading.Lock()

    def call(self, fn: Callable[[Lore], T]) -> T:
        """Run ``fn`` with the facade; requests run on worker threads and never share the
        connection at the same time."""
        with self._lock:
            return fn(self.lore)

    def verify(self, token: str | None) -> TokenInfo | None:
        if not token:
            return None
        return self.call(lambda lore: lore.tokens.verify(token))


def state_of(request: Request) -> ServerState:
    """The server state of the app answering ``request``."""
    state: ServerState = request.app.state.lore
    return state
