"""`lore mcp`: run the MCP server over stdio."""

from __future__ import annotations

import click

from lore.cli.common import LoreCommand
from lore.mcp import DEFAULT_PROFILE, PROFILES


@click.command("mcp", cls=LoreCommand)
@click.option("--profile", type=click.Choice(PROFILES), default=DEFAULT_PROFILE,
              show_default=True, envvar="LORE_MCP_PROFILE",
              help="Tools to expose: session (what an agent needs in a session), admin (also "
                   "writing, links, review, apply), canonical (admin without the conversation "
                   "search), a compatible tool set's names, or all of them.")
@click.pass_context
def mcp(ctx: click.Context, profile: str) -> None:
    """Serve Lore to MCP clients over stdio (Claude Code, Codex, Cursor, the MCP Inspector …).

    Stdout carries the protocol; notices go to stderr. The embedding model and the
    vectors load in the background once the client listed the tools, so `initialize` and
    `tools/list` answer at once. The default tools (profile session) cost under 6 KB of
    every model request; --profile admin adds administration.

    \b
    Example (register with Claude Code, every project):
      claude mcp add --scope user lore -- lore mcp
      claude mcp add --scope user lore-admin -- lore mcp --profile admin
    """
    from lore.cli.common import settings
    from lore.mcp.server import serve

    serve(profile, settings(ctx))
