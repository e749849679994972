"""`lore context`: what SessionStart gave recent sessions, and what its budget left out."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from lore.cli.common import LoreCommand, emit_json, json_option, notice, with_lore

if TYPE_CHECKING:
    from lore.api import Lore


@click.command("context", cls=LoreCommand)
@click.option("--session", "session_id", help="One session's start (its session id).")
@click.option("--limit", type=click.IntRange(1, 1000), default=5, show_default=True,
              help="How many recent session starts.")
@json_option
@with_lore
def context_group(lore: Lore, session_id: str | None, limit: int, json_: bool) -> None:
    """Show what SessionStart injected: the lessons given, those the size budget left out,
    their sizes, the session and the time (latest first).

    \b
    Examples:
      lore context
      lore context --session 3f0c2a… --json
    """
    loads = lore.sessions.context_loads(session_id, limit)
    if json_:
        emit_json({"count": len(loads), "loads": loads})
        return
    if not loads:
        notice("no session start recorded" + (f" for session {session_id}" if session_id else "")
               + "; the SessionStart hook records one each time it runs (lore install)")
        return
    for load in loads:
        click.echo(f"{load['at']}  session {load['session_id'] or '-'}  {load['project'] or '-'}")
        click.echo(f"  given: {len(load['shown'])} lesson(s), {load['chars']} characters; "
                   f"left out: {len(load['dropped'])} ({load['dropped_chars']} characters)")
        for item in load["shown"]:
            click.echo(f"  + {item['id']}  {item['title']}")
        for item in load["dropped"]:
            click.echo(f"  - {item['id']}  {item['title']}  (left out)")
