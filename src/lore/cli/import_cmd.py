"""`lore import claude-memory`: Claude Code's auto memory as lessons waiting for review."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from lore.cli.common import LoreGroup, emit_json, json_option, notice, with_lore

if TYPE_CHECKING:
    from lore.api import Lore


@click.group("import", cls=LoreGroup)
def import_group() -> None:
    """Bring what other tools remembered into Lore, for review.

    \b
    Example:
      lore import claude-memory --dry-run
    """


@import_group.command("claude-memory")
@click.option("--dry-run", is_flag=True, help="List what would be added; add nothing.")
@click.option("--claude-home", type=click.Path(file_okay=False),
              help="Claude Code's folder (default: $CLAUDE_CONFIG_DIR, else ~/.claude).")
@json_option
@with_lore
def import_claude_memory(lore: Lore, dry_run: bool, claude_home: str | None, json_: bool) -> None:
    """Add Claude Code's auto-memory entries (~/.claude/projects/*/memory/) as proposed
    lessons for review, each with its file and date as evidence.

    Claude Code's files are only read. Each entry is added once: running it again adds only
    new entries, and an entry you rejected or deleted does not come back.

    \b
    Examples:
      lore import claude-memory --dry-run
      lore import claude-memory --json
    """
    home = Path(claude_home or os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    if not os.path.isdir(home):
        raise click.ClickException(f"no such folder: {home}; give Claude Code's folder with "
                                   "--claude-home")
    report = lore.lessons.import_claude_memory(home, dry_run=dry_run)
    if json_:
        emit_json({"dry_run": dry_run, **report.to_dict()})
        return
    for entry in report.added:
        click.echo(f"{entry.get('id', '(new)')}  {entry['kind']:<10}  {entry['title']}")
    for s in report.skipped:
        notice(f"skipped {s['file']}: {s['reason']}")
    verb = "would add" if dry_run else "added"
    notice(f"{verb} {len(report.added)} entr{'y' if len(report.added) == 1 else 'ies'} for "
           f"review, {report.known} already imported"
           + ("" if dry_run or not report.added else " (status proposed, tag claude-memory)"))
