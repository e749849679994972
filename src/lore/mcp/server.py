"""`lore mcp`: the core facade as MCP tools over stdio (official MCP SDK 2.x).

A canonical tool set (``lore_*``, :mod:`lore.mcp.lessons` and :mod:`lore.mcp.learning`)
covers everything the store can do. ``--profile`` adds the tool names and argument shapes
of each design seed as thin aliases over the same functions (:mod:`lore.mcp.aliases`:
``ai-lessons`` seed 001, ``self-learning`` seed 000, ``reinforcement`` seed 004;
:mod:`lore.mcp.conversations`: ``self-reflect`` seed 003). :mod:`lore.mcp.tools` holds what
every tool shares: one connection under a lock, project scope, error translation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer

from lore.errors import LoreError
from lore.mcp import aliases, conversations, learning, lessons
from lore.mcp.tools import LoreTools

if TYPE_CHECKING:
    from lore.api import Lore
    from lore.config import Settings

PROFILES = ("canonical", "ai-lessons", "self-learning", "self-reflect", "reinforcement", "all")

INSTRUCTIONS = """\
Lore is the user's learning memory: corrections, preferences and lessons from earlier sessions.
Search it (lore_search) before choosing an approach the user may have an opinion on, and save a
lesson (lore_add) when the user corrects you, states a lasting preference, or when something took
debugging to learn. Search results are short; fetch a whole lesson with lore_get."""


def build_server(settings: Settings, profile: str = "canonical",
                 lore: Lore | None = None) -> tuple[MCPServer, LoreTools]:
    if profile not in PROFILES:
        raise LoreError(f"unknown profile '{profile}'; valid: {', '.join(PROFILES)}")
    tools = LoreTools(settings, lore)
    server = MCPServer("lore", instructions=INSTRUCTIONS)
    warm_after_handshake(server, tools)
    if profile in ("canonical", "all"):
        lessons.register(server, tools)
    if profile in ("ai-lessons", "all"):
        aliases.register_ai_lessons(server, tools)
    if profile in ("self-learning", "all"):
        aliases.register_self_learning(server, tools)
    if profile in ("self-reflect", "all"):
        conversations.register(server, tools)
    if profile in ("canonical", "all"):
        learning.register(server, tools)
    if profile in ("reinforcement", "all"):
        aliases.register_reinforcement(server, tools, with_conversations=profile != "all")
    return server, tools



def warm_after_handshake(server: MCPServer, tools: LoreTools) -> None:
    """Start loading the model once the client sent `notifications/initialized`.

    Loading earlier would compete with the handshake for the CPU; clients that skip
    the notification still get a warm-up from their first tool call.
    """
    from mcp.types import NotificationParams

    async def initialized(ctx: Any, params: Any) -> None:
        tools.start_warm()

    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is not None and hasattr(lowlevel, "add_notification_handler"):
        lowlevel.add_notification_handler("notifications/initialized", NotificationParams,
                                          initialized)

