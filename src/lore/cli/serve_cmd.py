"""`lore serve`: the REST API and the dashboard on Uvicorn, and the tokens that open them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from lore.cli.common import LoreGroup, emit_json, json_option, notice, open_lore, table

if TYPE_CHECKING:
    pass


@click.group("serve", cls=LoreGroup, invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback requires tokens.")
@click.option("--port", type=click.IntRange(1, 65535), default=8420, show_default=True)
@click.option("--require-token", is_flag=True,
              help="Require a token on loopback too (always on for other addresses).")
@click.option("--run-schedule-now", is_flag=True,
              help="Run the scheduled analysis once (ingest, learn, rescore, digests) and exit "
                   "without serving.")
@json_option
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, require_token: bool, run_schedule_now: bool,
          json_: bool) -> None:
    """Serve the REST API (/api/v1) and the dashboard in a browser (needs the `server` extra).

    On loopback (the default) anyone on this machine may read and write, as with the CLI.
    Binding another address needs a token on every request: make one first with
    `lore serve token create`. With `schedule.analysis` set in config.yaml (a cron
    expression) the server also ingests transcripts, learns, rescores and writes the
    digests at those times. docs/server.md describes the API and the pages.

    \b
    Examples:
      lore serve                      # http://127.0.0.1:8420
      lore serve token create --scope write --name laptop
      lore serve --host 0.0.0.0 --port 8420
      lore serve --run-schedule-now   # one scheduled analysis, then exit
    """
    if ctx.invoked_subcommand is not None:
        return
    if run_schedule_now:
        _run_schedule(ctx, json_)
        return
    try:
        from lore.web import serve as run
    except ImportError as exc:
        from lore.extras import add_extra

        raise click.ClickException(f"the web server needs the `server` extra ({exc.name} is "
                                   f"missing): {add_extra('server')}") from None
    from lore.cli.common import settings

    def ready(tokens: bool, scheduler: Any) -> None:
        shown = f"[{host}]" if ":" in host else host
        notice(f"serving Lore on http://{shown}:{port}/ "
               f"({'tokens required' if tokens else 'loopback, no token needed'}); Ctrl-C stops")
        if scheduler.next_run is not None:
            notice(f"scheduled analysis '{scheduler.expression}': next run "
                   f"{scheduler.next_run:%Y-%m-%d %H:%M %Z}")

    run(settings(ctx), host, port, require_token=require_token, ready=ready)


def _run_schedule(ctx: click.Context, json_: bool) -> None:
    from lore.cli.common import settings
    from lore.schedule import Scheduler

    run = Scheduler(settings(ctx)).run("command")
    if json_:
        emit_json(run)
    else:
        summary = run["summary"]
        notice(f"scheduled analysis {run['outcome']} in {run['duration_ms'] / 1000:.1f} s"
               + (f": {run['error']}" if run["error"] else ""))
        for key, value in summary.items():
            click.echo(f"  {key}: {value}")
    if run["outcome"] != "ok":
        ctx.exit(1)


@serve.command("token")
@click.argument("action", type=click.Choice(["list", "create", "revoke"]), default="list")
@click.argument("token_id", required=False)
@click.option("--scope", type=click.Choice(["read", "write"]),
              help="With create: read (search and look) or write (also add, change and delete "
                   "lessons).")
@click.option("--name", help="With create: a name to tell tokens apart (default: the scope).")
@json_option
@click.pass_context
def serve_token(ctx: click.Context, action: str, token_id: str | None, scope: str | None,
                name: str | None, json_: bool) -> None:
    """The tokens that open the server beyond loopback: list (the default, never their
    secrets), create (printed once: only a salted hash is stored), revoke ID (requests
    carrying it get 401 from now on).

    \b
    Examples:
      lore serve token
      lore serve token create --scope read --name phone
      lore serve token revoke 01M83K6N6CXQ71CPA854DRF04X
    """
    if (action == "create") != (scope is not None):
        raise click.UsageError("create takes --scope read|write (and only create takes it)", ctx)
    if name is not None and action != "create":
        raise click.UsageError("--name goes with create", ctx)
    if (action == "revoke") != (token_id is not None):
        raise click.UsageError("revoke takes the token's ID (and only revoke takes one)", ctx)
    with open_lore(ctx) as lore:
        if action == "create" and scope is not None:
            info, secret = lore.tokens.create(scope, name)
            if json_:
                emit_json({**info.to_dict(), "token": secret})
                return
            click.echo(secret)
            notice(f"token '{info.name}' ({info.scope}) made; it is shown only now: keep it "
                   "somewhere safe")
        elif action == "revoke" and token_id is not None:
            info = lore.tokens.revoke(token_id)
            if json_:
                emit_json(info.to_dict())
                return
            notice(f"token '{info.name}' revoked")
        else:
            _list(lore.tokens.list(), json_)


def _list(tokens: list[Any], json_: bool) -> None:
    if json_:
        emit_json([t.to_dict() for t in tokens])
        return
    if not tokens:
        notice("no tokens yet: lore serve token create --scope read")
        return
    table(None, ["id", "name", "scope", "created", "last used", "state"],
          [[t.id, t.name, t.scope, t.created_at[:16], (t.last_used_at or "-")[:16],
            "active" if t.active else f"revoked {(t.revoked_at or '')[:10]}"] for t in tokens])
