"""What every MCP tool shares: the connection under one lock, project scope, error translation,
the annotations and the registration helper.

Every tool runs its core call under one lock on one connection, so calls that the
SDK runs on worker threads never share the connection at the same time. Core
errors become tool errors (``is_error``) whose text tells the model what to do.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from lore.errors import LoreError, StoreBusy, os_error_message
from lore.normalize import project_root, storable_json

if TYPE_CHECKING:
    from lore.api import Lore
    from lore.config import Settings
    from lore.policy import Scope

GLOBAL = ("global", "none", "")
EVERY_PROJECT = ("all", "*")

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                       open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                        open_world_hint=False)
UPDATE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                         open_world_hint=False)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                         open_world_hint=False)
# Searching bumps usage statistics, but changes nothing a user would call data.
SEARCH = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False,
                         open_world_hint=False)


StrList = list[str] | None


class LoreTools:
    """The tool implementations: argument handling, project scope, error translation."""

    def __init__(self, settings: Settings | Callable[[], Settings],
                 lore: Lore | None = None) -> None:
        self._settings = settings
        self._lore = lore
        self._lock = threading.Lock()
        self._roots: str | None = None
        self._roots_checked = False
        self._warm_started = False

    @property
    def settings(self) -> Settings:
        """The settings, loaded by the first call that needs them when given as a function."""
        if callable(self._settings):
            self._settings = self._settings()
        return self._settings

    @property
    def lore(self) -> Lore:
        if self._lore is None:
            # Imported here: numpy and the store are not needed to answer `initialize`.
            from lore.api import Lore

            self._lore = Lore.open(self.settings)
        return self._lore

    def start_warm(self) -> None:
        """Load the database, the model and the vectors on a background thread, once."""
        with self._lock:
            if self._warm_started:
                return
            self._warm_started = True
        threading.Thread(target=self._warm, name="lore-warm", daemon=True).start()

    def _warm(self) -> None:
        try:
            with self._lock:
                self.lore.search.warm()
        except Exception:  # noqa: BLE001 - a failed warm-up shows up on the first real call
            pass

    def close(self) -> None:
        with self._lock:
            if self._lore is not None:
                self._lore.close()

    async def run(self, fn: Callable[[Lore], Any]) -> Any:
        """Run a core call on a worker thread under the lock; LoreError -> tool error."""

        def call() -> Any:
            for attempt in range(3):
                try:
                    with self._lock:
                        return fn(self.lore)
                except StoreBusy:
                    if attempt == 2:
                        raise
            return None  # pragma: no cover

        self.start_warm()
        try:
            return await anyio.to_thread.run_sync(call)
        except StoreBusy as exc:
            raise ToolError(f"{exc} (retried 3 times)") from None
        except LoreError as exc:
            raise ToolError(str(exc)) from None
        except OSError as exc:  # a home that is a file, unreadable, read-only, full
            raise ToolError("; ".join(os_error_message(exc))) from None
        except Exception as exc:
            from lore.api import storage_error

            if callable(self._settings):  # the settings themselves did not load
                raise
            found = storage_error(exc, self._settings.db_location)  # read-only, full disk …
            if found is None:
                raise
            raise ToolError(str(found)) from None

    async def scope(self, ctx: Context | None, given: str | None, request: str) -> Scope:
        """Which project a read request is about, by the request policy (lore.policy), the
        client's root (else our cwd) being where the caller is."""
        from lore import policy

        return policy.scope(given, request, here=await self.here(ctx))

    async def here(self, ctx: Context | None) -> str | None:
        """The client's project: its first root, else our cwd, as its project."""
        if not self._roots_checked and ctx is not None:
            self._roots_checked = True
            self._roots = project_root(await first_root(ctx))
        return self._roots or project_root(str(Path.cwd()))

    async def project(self, ctx: Context | None, given: str | None) -> str | None:
        """The project a call is about: the argument, else the client's root, else our cwd,
        each as its project (the git top level of the folder, as every face resolves it).

        Returns None for "every project" ('all' or '*'); '' for global lessons.
        """
        if given is not None:
            value = given.strip()
            if value.lower() in EVERY_PROJECT:
                return None
            if value.lower() in GLOBAL:
                return ""
            return project_root(value) if os.path.isdir(os.path.expanduser(value)) else value
        return await self.here(ctx)


async def first_root(ctx: Context) -> str | None:
    try:
        caps = ctx.client_capabilities
        if caps is None or caps.roots is None:
            return None
        with warnings.catch_warnings():
            # Deprecated in protocol 2026-07-28, but it is how today's clients say where they are.
            warnings.simplefilter("ignore")
            result = await ctx.session.list_roots()
    except Exception:  # noqa: BLE001 - roots are optional; any failure means "use the cwd"
        return None
    for root in result.roots:
        uri = str(root.uri)
        if uri.startswith("file://"):
            from urllib.parse import unquote, urlparse

            return str(Path(unquote(urlparse(uri).path)).resolve())
    return None


def search_payload(query: str, hits: list[Any], explain: bool = False) -> dict[str, Any]:
    return {"query": query, "count": len(hits),
            "results": [h.to_dict(explain=explain) for h in hits]}


def lesson_fields(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


def tool(server: MCPServer, name: str, annotations: ToolAnnotations) -> Callable[[Any], Any]:
    """Register a tool whose description is its docstring, dedented, and whose string
    arguments are made storable (lone surrogates and NULs become U+FFFD) before it runs."""

    def register(fn: Any) -> Any:
        @functools.wraps(fn)
        async def storable_call(*args: Any, **kwargs: Any) -> Any:
            return await fn(*args, **{k: storable_json(v) for k, v in kwargs.items()})

        return server.tool(name=name, annotations=annotations,
                           description=inspect.cleandoc(fn.__doc__ or ""))(storable_call)

    return register

