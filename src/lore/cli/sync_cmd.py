"""`lore sync`: one memory across devices through a `lore serve` (docs/server.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from lore.cli.common import LoreCommand, emit_json, json_option, notice, open_lore, settings


@click.command("sync", cls=LoreCommand)
@click.option("--server", help="The server's URL, e.g. http://192.168.1.10:8420 "
                               "(default: sync.server in config.yaml).")
@click.option("--token", help="A token of the server (default: $LORE_SYNC_TOKEN, then "
                              "sync.token_file, then $LORE_HOME/sync-token).")
@click.option("--push-only", is_flag=True, help="Send this device's changes, pull nothing.")
@click.option("--pull-only", is_flag=True, help="Pull decided rules and lessons, send nothing.")
@click.option("--status", "status_", is_flag=True,
              help="Sync nothing: this device's id, its server, the last push and pull, and "
                   "what waits to be pushed.")
@json_option
@click.pass_context
def sync(ctx: click.Context, server: str | None, token: str | None, push_only: bool,
         pull_only: bool, status_: bool, json_: bool) -> None:
    """Push this device's new lessons, captured corrections, conversations and edits to a
    `lore serve`, and pull the rules and lessons a person decided on from the other devices.

    Everything is redacted before it leaves. A cut connection loses nothing: run it again
    and it resumes; the server never stores a record twice. Pushing needs a write token.

    \b
    Examples:
      lore sync --server http://192.168.1.10:8420
      LORE_SYNC_TOKEN=lore_… lore sync
      lore sync --status
    """
    if status_:
        if server or token or push_only or pull_only:
            raise click.UsageError("--status syncs nothing; give it alone (or with --json)", ctx)
        _status(ctx, json_)
        return
    if push_only and pull_only:
        raise click.UsageError("--push-only and --pull-only exclude each other", ctx)
    from lore.core.sync.client import Client, read_token_file, run

    s = settings(ctx)
    url = server or s.config.sync.server
    if not url:
        raise click.UsageError("no sync server: give --server URL, or set `sync: {server: "
                               "http://host:8420}` in config.yaml (lore config --path)", ctx)
    if not url.startswith(("http://", "https://")):
        raise click.UsageError(f"--server '{url}' is not an http:// or https:// URL", ctx)
    token = token or os.environ.get("LORE_SYNC_TOKEN") or None
    if token is None:
        configured = s.config.sync.token_file
        path = Path(configured).expanduser() if configured else s.home / "sync-token"
        if configured or path.exists():
            token = read_token_file(path)
    tty = sys.stderr.isatty() and not json_

    def progress(stage: str, done: int, total: int) -> None:
        if tty:
            click.echo(f"\r{stage}: {done}/{total}", err=True, nl=False)

    client = Client(url.rstrip("/"), token, timeout=s.config.sync.timeout)
    try:
        with open_lore(ctx) as lore:
            report = run(lore.sync, client, batch_size=s.config.sync.batch_size,
                         push=not pull_only, pull=not push_only, progress=progress)
    finally:
        client.close()
        if tty:
            click.echo("", err=True)
    if json_:
        emit_json(report.to_dict())
        return
    pushed = sum(report.pushed.values())
    if report.behind:
        notice("this device's database is behind the server's view of it (reset or restored "
               f"from a backup?): sent what it holds from its cursor ({', '.join(report.behind)})")
    if report.resent:
        notice("the server lacked records it had acknowledged (restored from a backup, or "
               f"another server): sent them again ({', '.join(report.resent)})")
    if report.refused:
        notice(f"the server left out {report.refused} records of sessions another device owns")
    clock = report.clock_problem()
    if clock:
        notice(clock)
    if report.skipped:
        notice(f"not sent: {len(report.skipped)} lessons whose updated_at or created_at is not "
               "believable (before 2000, more than a day ahead of this clock, or not a date); "
               "fix the dates (or the clock) to send them: " + ", ".join(report.skipped[:5]))
    notice(f"synced with {report.server}: pushed {pushed} ({report.stored} new to the server, "
           f"{report.batches} batches), pulled {report.pulled} (added {report.merge.added}, "
           f"updated {report.merge.updated}, deleted {report.merge.deleted}, "
           f"conflicts {report.merge.conflicts})")


def _status(ctx: click.Context, json_: bool) -> None:
    with open_lore(ctx) as lore:
        status: dict[str, Any] = lore.sync.status()
    if json_:
        emit_json(status)
        return
    pending = ", ".join(f"{n} {k}" for k, n in status["pending"].items())
    click.echo(f"device     {status['device']}")
    click.echo(f"server     {status['server'] or '(never synced)'}")
    click.echo(f"last push  {status['last_push'] or '-'}")
    click.echo(f"last pull  {status['last_pull'] or '-'}")
    click.echo(f"pending    {status['pending_total']} ({pending})")
    if status.get("clock"):
        click.echo(f"clock      {status['clock']['problem']} (at {status['clock']['at']})")
