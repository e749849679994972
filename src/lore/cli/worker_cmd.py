"""`lore worker`: the background process that turns queued hook events into memory."""

from __future__ import annotations

import click

from lore.cli.common import LoreCommand, emit_json, json_option, notice, settings, table

ACTIONS = ("status", "start", "stop", "run", "requeue")


@click.command("worker", cls=LoreCommand)
@click.argument("action", type=click.Choice(ACTIONS), default="status")
@click.option("--once", is_flag=True, help="With run: process what is queued, then exit.")
@click.option("--idle-exit", type=click.IntRange(min=1), default=None, metavar="SECONDS",
              help="With run: exit after SECONDS with nothing pending (a worker a hook starts "
                   "uses $LORE_WORKER_IDLE_EXIT, default 600).")
@json_option
@click.pass_context
def worker(ctx: click.Context, action: str, once: bool, idle_exit: int | None,
           json_: bool) -> None:
    """The background worker, the single database writer: status (the default), start, stop,
    run, requeue.

    \b
    status   whether it runs, the queue depth, what is left to embed, failures
    start    start it in the background unless one is running
    stop     stop it (it finishes the event in hand first)
    run      run it in the foreground (SIGTERM finishes the event in hand, then exits)
    requeue  put quarantined events back in the queue with a fresh attempt count

    Chunks imported without their vectors (a first `lore ingest` leaves them to the worker)
    are found by keywords now and by meaning once embedded; the time left is estimated from
    the worker's last rate. Failed events are retried with backoff, then quarantined with the
    reason; requeue them once the cause is fixed (see the status and the worker log).
    Failures the database raised (a full disk, a locked or corrupt file) are counted apart,
    with the last one.

    \b
    Examples:
      lore worker
      lore worker status --json
      lore worker run --once
      lore worker requeue
    """
    if action != "run" and (once or idle_exit is not None):
        raise click.UsageError("--once and --idle-exit go with `lore worker run`", ctx)
    if json_ and action != "status":
        raise click.UsageError("--json goes with `lore worker status`", ctx)
    if action == "run":
        _run(ctx, once, idle_exit)
    else:
        {"status": _status, "start": _start, "stop": _stop, "requeue": _requeue}[action](ctx, json_)


def _run(ctx: click.Context, once: bool, idle_exit: int | None) -> None:
    from lore.errors import AlreadyRunning
    from lore.worker import Worker

    try:
        n = Worker(settings(ctx), idle_exit=idle_exit).run(once=once)
    except AlreadyRunning:
        if idle_exit is None:
            raise
        return  # two hooks started a worker at once: the other one serves the home
    notice(f"processed {n} events")


def _start(ctx: click.Context, json_: bool) -> None:
    from lore.worker import start_background

    pid = start_background(settings(ctx))
    notice("a worker is already running" if pid is None else f"worker started (pid {pid})")


def _stop(ctx: click.Context, json_: bool) -> None:
    from lore.worker import stop_background

    notice("worker stopped" if stop_background(settings(ctx)) else "no worker was running")


def _status(ctx: click.Context, json_: bool) -> None:
    from lore.errors import LoreError
    from lore.worker import Worker

    w = Worker(settings(ctx))
    st = w.status()
    try:
        st["embedding_backlog"] = w.backlog()
    except LoreError as exc:  # a full disk or a locked database: the queue is shown all the same
        st["embedding_backlog"] = {"chunks": None, "rate": None, "eta_seconds": None,
                                   "error": str(exc)}
    if json_:
        emit_json(st)
        return
    last = st["last_processed"] or {}
    table(None, ["", ""], [
        ["running", f"yes (pid {st['pid']})" if st["running"] else "no"],
        ["events waiting", st["queue_depth"]],
        ["to index for search", _backlog(st["embedding_backlog"], st["running"])],
        ["last event", f"{last.get('kind', '-')} {last.get('outcome', '')}".strip()],
        ["errors", st["errors"]["count"]],
        ["database failures", _database(st["errors"]["database"])],
        ["events not queued", _database(st["errors"]["dropped"])],
        ["retrying", len(st["retrying"])],
        ["set aside (unreadable)", len(st["quarantined"])],
        ["waiting for the judge", judge_line(st.get("waiting_for_judge"))],
        ["log", st["log"]],
    ])
    for r in st["retrying"]:
        notice(f"retrying {r['id']} ({r['kind']}, {r['attempts']} failed attempts): "
               f"{r['last_error']}")
    for q in st["quarantined"]:
        notice(f"quarantined {q['file']}: {q['reason']}")


def judge_line(w: dict | None) -> str:
    """"3 messages in 1 session (budget spent …)", "2 no longer asked about … (last: unanswered
    3: …)", or "nothing"."""
    if not w or not (w["messages"] or w.get("given_up")):
        return "nothing"
    parts = []
    if w["messages"]:
        parts.append(f"{w['messages']} messages in {w['sessions']} sessions"
                     + (f" (last failure: {w['last_error']})" if w.get("last_error") else ""))
    if w.get("given_up"):
        parts.append(f"{w['given_up']} no longer asked about, left without a verdict too often "
                     f"(last: {w.get('given_up_reason') or '?'}; `lore learn judge` asks again)")
    return "; ".join(parts)


def _database(db: dict) -> str:
    """"0", or "3 (last: OperationalError: database or disk is full)" (database failures,
    events a hook could not queue)."""
    last = db.get("last") or {}
    return f"{db['count']} (last: {last.get('reason', '?')})" if db["count"] else "0"


def _backlog(b: dict, running: bool) -> str:
    """"1,234 chunks, about 3 min at 8.5 a second" (search by meaning covers the rest)."""
    if b.get("error"):
        return f"unknown ({b['error']})"
    if not b["chunks"]:
        return "nothing"
    text = f"{b['chunks']:,} passages"
    if b["eta_seconds"] is not None:
        minutes = b["eta_seconds"] / 60
        left = f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"
        text += f", about {left} at {b['rate']:.1f} a second"
    return text + ("" if running else " (start the worker: `lore worker start`)")


def _requeue(ctx: click.Context, json_: bool) -> None:
    from lore.capture.queue import Queue

    n = Queue(settings(ctx).home / "queue").requeue()
    notice(f"requeued {n} events")
