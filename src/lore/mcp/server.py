"""`lore mcp`: the core facade as MCP tools over stdio (official MCP SDK 2.x).

Every tool's schema goes with every request the agent makes, so the default profile,
``session`` (:mod:`lore.mcp.session`), holds only what an agent needs in a session: search
lessons and past conversations, get one, the rules that apply here, record a correction,
suggest a rule. ``admin`` adds the administration tools (:mod:`lore.mcp.lessons` and
:mod:`lore.mcp.learning`: write, link, delete, reference lists, review decisions, the review
folder, apply, analysis); ``canonical`` is that set without the conversation search, as earlier
versions served it. The tool names and argument shapes of compatible memory tools are profiles
generated from one table of aliases over the same functions (:mod:`lore.mcp.aliases`:
``ai-lessons``, ``self-learning``, ``self-reflect``, ``reinforcement``). :mod:`lore.mcp.tools`
holds what every tool shares: one connection under a lock, project scope, error translation.
Only the modules of the chosen profile are imported, and the model loads after the client listed the tools, so
``initialize`` and ``tools/list`` answer as soon as the SDK is loaded.

A request holding a lone UTF-16 surrogate escape ("\\ud800", written by JavaScript
clients that cut a string inside an emoji) is valid JSON to Python but not to the SDK's
stdio reader, which drops it without a reply. ``LoreMCPServer`` reads stdin itself and
turns such escapes into U+FFFD before the SDK parses the line; every tool's string
arguments are made storable (no lone surrogates, no NULs) before the tool runs.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

from lore import __version__
from lore.errors import LoreError
from lore.mcp.tools import LoreTools
from lore.normalize import storable_json

if TYPE_CHECKING:
    from collections.abc import Callable

    from lore.api import Lore
    from lore.config import Settings

__all__ = ["DEFAULT_PROFILE", "PROFILES", "build_server", "schema_size", "serve"]

from lore.mcp import DEFAULT_PROFILE, PROFILES

# Clients that never list the tools still get a warm model this long after the handshake.
WARM_AFTER_S = 3.0

INSTRUCTIONS = """\
Lore is the user's learning memory: corrections, preferences and lessons from earlier sessions.
Search it (lore_search) before choosing an approach the user may have an opinion on; when the
user corrects you or states a lasting preference, record it (lore_record_correction). Search
results are short; fetch a whole lesson with lore_get."""


def serve(profile: str = DEFAULT_PROFILE,
          settings: Settings | Callable[[], Settings] | None = None) -> None:
    """Serve over stdio until the client closes the pipe. ``settings``: the loaded settings,
    or a function that loads them when the first tool needs them (`lore mcp` answers the
    handshake and the tool list before reading the config)."""
    server, tools = build_server(settings or _load_settings, profile)
    try:
        server.run()  # stdio
    finally:
        tools.close()


def _load_settings() -> Settings:
    from lore.config import load_config

    return load_config()


def aliases_of(profile: str) -> tuple[str, ...]:
    """The compatible profiles whose tool names ``profile`` serves (lore.mcp.aliases)."""
    seed = ("ai-lessons", "self-learning", "self-reflect", "reinforcement")
    return seed if profile == "all" else tuple(p for p in seed if p == profile)


def build_server(settings: Settings | Callable[[], Settings], profile: str = DEFAULT_PROFILE,
                 lore: Lore | None = None) -> tuple[MCPServer, LoreTools]:
    """The server with the profile's tools. ``settings`` may be a function that loads them."""
    if profile not in PROFILES:
        raise LoreError(f"unknown profile '{profile}'; valid: {', '.join(PROFILES)}")
    tools = LoreTools(settings, lore)
    server = LoreMCPServer("lore", version=__version__, instructions=INSTRUCTIONS)
    server.tools = tools
    warm_after_handshake(server, tools)
    if profile == "session":
        from lore.mcp import session

        session.register(server, tools)
        return server, tools
    if profile in ("admin", "canonical", "all"):
        from lore.mcp import learning, lessons

        lessons.register(server, tools)
        learning.register(server, tools)
    if profile in ("admin", "all"):
        from lore.mcp import session

        session.register_conversations(server, tools)
    seed = aliases_of(profile)
    if seed:
        from lore.mcp import aliases

        aliases.register(server, tools, seed)
    return server, tools


def schema_size(tools: list[Any]) -> int:
    """The bytes the tools add to a model request: each tool's name, description and input
    schema as compact JSON (what a client such as Claude Code sends to the model)."""
    return sum(len(json.dumps({"name": t.name, "description": t.description or "",
                               "input_schema": t.input_schema}, separators=(",", ":"),
                              ensure_ascii=False).encode("utf-8")) for t in tools)


class LoreMCPServer(MCPServer):
    """The SDK's server, reading stdin through ``_storable_stdin``; the model starts loading
    once the tools were listed (``tools`` set by ``build_server``)."""

    tools: LoreTools | None = None

    async def list_tools(self) -> list[Any]:
        listed = await super().list_tools()
        if self.tools is not None:
            self.tools.start_warm()
        return listed

    async def run_stdio_async(self) -> None:
        async with _storable_stdin() as stdin, stdio_server(stdin=stdin) as (read, write):
            lowlevel = self._lowlevel_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())


# A JSON escape of a UTF-16 surrogate: a line with one may hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def storable_line(line: str) -> str:
    """A JSON-RPC line with every lone surrogate escape turned into U+FFFD (others untouched)."""
    if not _SURROGATE_ESCAPE.search(line):
        return line
    try:
        value = json.loads(line)
    except ValueError:
        return line  # not JSON: the SDK answers it as a parse error
    return json.dumps(storable_json(value), ensure_ascii=False) + "\n"


class _StorableLines:
    """stdin as the SDK's reader iterates it: text lines, each through ``storable_line``."""

    def __init__(self, binary: Any) -> None:
        import anyio

        self._file = anyio.wrap_file(binary)

    def __aiter__(self) -> _StorableLines:
        return self

    async def __anext__(self) -> str:
        raw = await self._file.readline()
        if not raw:
            raise StopAsyncIteration
        return storable_line(raw.decode("utf-8", "replace"))


@asynccontextmanager
async def _storable_stdin() -> AsyncIterator[Any]:
    """The wire's stdin, read through ``_StorableLines``. While serving, fd 0 points at the
    null device (as the SDK does), so a child process cannot read the client's requests."""
    try:
        wire = os.dup(sys.stdin.fileno())
        null = os.open(os.devnull, os.O_RDONLY)
    except (OSError, ValueError, AttributeError):  # no real stdin (embedded, tests): in place
        yield _StorableLines(sys.stdin.buffer)
        return
    os.dup2(null, 0)
    os.close(null)
    try:
        # closefd=False: a reader thread may still block on it after the server stops.
        yield _StorableLines(os.fdopen(wire, "rb", buffering=0, closefd=False))
    finally:
        os.dup2(wire, 0)


def warm_after_handshake(server: MCPServer, tools: LoreTools) -> None:
    """Start loading the model ``WARM_AFTER_S`` after the client sent
    `notifications/initialized`, unless listing the tools (or a first call) started it sooner.

    Loading at once would compete with the handshake and ``tools/list`` for the CPU (and the
    interpreter's lock): a client that waits for the tools before its first request would
    wait for the model too.
    """
    from mcp.types import NotificationParams

    async def initialized(ctx: Any, params: Any) -> None:
        timer = threading.Timer(WARM_AFTER_S, tools.start_warm)
        timer.daemon = True
        timer.start()

    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is not None and hasattr(lowlevel, "add_notification_handler"):
        lowlevel.add_notification_handler("notifications/initialized", NotificationParams,
                                          initialized)
