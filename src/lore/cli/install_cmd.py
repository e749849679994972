"""`lore install` / `lore uninstall`: wire Lore into Claude Code (hooks + MCP server)."""

from __future__ import annotations

from pathlib import Path

import click

from lore.cli.common import LoreCommand, notice

SCOPE = click.option("--scope", type=click.Choice(["user", "project", "local"]), default="user",
                     show_default=True,
                     help="user: ~/.claude/settings.json; project: .claude/settings.json; "
                          "local: .claude/settings.local.json.")
DRY = click.option("--dry-run", is_flag=True, help="Show the diff and change nothing.")


def _run(scope: str, dry_run: bool, remove: bool) -> None:
    from lore.errors import LoreError
    from lore.install import apply, lore_command, plan

    try:
        changes = plan(scope, Path.home(), Path.cwd().resolve(), lore_command(), remove=remove)
    except LoreError as exc:
        raise click.ClickException(str(exc)) from None
    if not changes:
        notice("nothing to change: " + ("Lore is not installed there" if remove
                                        else "Lore is already installed"))
        return
    if dry_run:
        for c in changes:
            click.echo(c.diff())
        notice("dry run: nothing was changed")
        return
    for backup in apply(changes):
        notice(f"backup: {backup}")
    for c in changes:
        notice(("updated " if c.before is not None else "created ") + str(c.path))
    if not remove:
        notice(NEXT_STEPS)


NEXT_STEPS = """
Next:
  Start a new Claude Code session and work as usual: Lore notices your corrections.
  lore status     what was learned and what waits for you
  lore review     approve or reject the rules Lore proposes
  lore apply      write the approved rules into CLAUDE.md
  lore doctor     check hooks, worker, MCP server and model if something seems off"""


@click.command("install", cls=LoreCommand)
@SCOPE
@DRY
def install(scope: str, dry_run: bool) -> None:
    """Add Lore's hooks and MCP server to Claude Code's settings (keeps everything else).

    \b
    Examples:
      lore install --dry-run
      lore install --scope project
    """
    _run(scope, dry_run, remove=False)


@click.command("uninstall", cls=LoreCommand)
@SCOPE
@DRY
def uninstall(scope: str, dry_run: bool) -> None:
    """Remove exactly what `lore install` added.

    \b
    Example:
      lore uninstall --scope project
    """
    _run(scope, dry_run, remove=True)
