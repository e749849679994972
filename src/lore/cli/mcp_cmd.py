"""`lore mcp`: run the MCP server over stdio."""

from __future__ import annotations

import click

from lore.cli.common import LoreCommand

PROFILE_CHOICES = ["canonical", "ai-lessons", "self-learning", "self-reflect", "reinforcement", "all"]


@click.command("mcp", cls=LoreCommand)
@click.option("--profile", type=click.Choice(PROFILE_CHOICES), default="canonical",
              show_default=True, envvar="LORE_MCP_PROFILE",
              help="Tool names to expose: Lore's own (lore_*), a design seed's, or all of them.")
@click.pass_context
def mcp(ctx: click.Context, profile: str) -> None:
    """Serve Lore to MCP clients over stdio (Claude Code, Codex, Cursor, the MCP Inspector …).

    Stdout carries the protocol; notices go to stderr. The embedding model and the
    vectors load in the background after start-up, so `initialize` answers at once.

    \b
    Example (register with Claude Code, every project):
      claude mcp add --scope user lore -- lore mcp
    """
    from lore.cli.common import settings
    from lore.mcp.server import build_server

    server, tools = build_server(settings(ctx), profile)
    try:
        server.run()  # stdio
    finally:
        tools.close()
