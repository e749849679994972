"""`lore analyze`: learn from a repository's changes or a session; `--status`: what analysis did."""

from __future__ import annotations

from typing import Any

import click
from click.core import ParameterSource

from lore.cli.common import LoreCommand, emit_json, json_option, open_lore, resolve_project, table


@click.command("analyze", cls=LoreCommand)
@click.argument("path", required=False, default=".", type=click.Path(file_okay=False))
@click.option("--since", metavar="REF", help="Changes from this commit, branch or tag to the working tree.")
@click.option("--range", "range_", metavar="A..B", help="Changes between two commits (B defaults to HEAD).")
@click.option("--force", is_flag=True, help="Analyse whatever the score (a manual trigger).")
@click.option("--explain", is_flag=True, help="Print every part of the significance score with its points.")
@click.option("--session", metavar="SESSION",
              help="Read one session's transcript instead: a transcript file (.jsonl) or the id "
                   "of an imported session.")
@click.option("--status", "status_", is_flag=True,
              help="What analysis did instead: sessions seen, analysed and skipped (with why), "
                   "lessons per kind, today's language-model use, the last error.")
@click.option("--project", help="With --status: only this project ('.' for the current one).")
@click.option("--dry-run", is_flag=True, help="Score and show what would be proposed; store nothing.")
@json_option
@click.pass_context
def analyze(ctx: click.Context, path: str, since: str | None, range_: str | None, force: bool,
            explain: bool, session: str | None, status_: bool, project: str | None,
            dry_run: bool, json_: bool) -> None:
    """Learn from the work itself: score PATH's changes and propose what they teach.

    PATH's changes (default: the last commit and the work in progress) are scored and, at
    or above the threshold (`analysis.threshold`, 5) or with --force, lessons are proposed:
    the four-stage analysis when a language model is configured, else a summary marked as
    not analysed. Proposed lessons wait for review (`lore review`); one that restates a known
    lesson reinforces it instead.

    --session proposes what one session's transcript teaches: decisions, recurring
    patterns, problems solved and anti-patterns, each with its quotes (read by the language
    model when one is configured, quotes not found in the transcript dropped; else by the
    pattern pass, as at the end of a session). See docs/analysis.md.

    \b
    Examples:
      lore analyze --explain
      lore analyze . --since main --explain
      lore analyze ~/src/app --range v1.2..v1.3 --force
      lore analyze . --since HEAD~5 --dry-run --json
      lore analyze --session 0d3a8e6f-290f-4105-a327-a2496e5e2a83 --dry-run
      lore analyze --status --json
    """
    source = ctx.get_parameter_source
    repo_options = [name for name, given in (("--since", since), ("--range", range_),
                                             ("--force", force), ("--explain", explain),
                                             ("PATH", source("path") != ParameterSource.DEFAULT))
                    if given]
    if status_:
        if session or dry_run or repo_options:
            raise click.UsageError("--status reports on its own; give it with --project or "
                                   "--json only", ctx)
        _status(ctx, project, json_)
        return
    if project:
        raise click.UsageError("--project goes with --status", ctx)
    if session:
        if repo_options:
            raise click.UsageError(f"--session reads a transcript; leave out {repo_options[0]}",
                                   ctx)
        _session(ctx, session, dry_run, json_)
        return
    if since and range_:
        raise click.UsageError("give --since or --range, not both")
    with open_lore(ctx) as lore:
        report = lore.analysis.analyze(path, since=since, range_=range_, force=force, dry_run=dry_run)
    if json_:
        emit_json(report.to_dict())
        return
    _print_report(report, explain)


def _print_report(report: Any, explain: bool) -> None:
    sig, changes = report.significance, report.changes
    if changes is not None:
        where = changes.branch or (changes.head or "working tree")[:10]
        click.echo(f"{changes.root} ({where}): {len(changes.commits)} commits, {len(changes.files)} files, "
                   f"+{changes.added} -{changes.removed}"
                   + (f", {len(changes.skipped)} files not counted" if changes.skipped else ""))
    if sig is not None:
        lines = sig.explain()
        for line in lines if explain else lines[-1:]:
            click.echo(line)
    verb = {"analysed": "analysed by the language model", "summarised": "summarised without a language model",
            "skipped": "skipped"}.get(report.outcome, report.outcome)
    click.echo(f"{verb}: {report.reason}" if report.reason else verb)
    if report.error:
        click.echo(f"language model: {report.error}", err=True)
    for p in report.lessons:
        click.echo(f"  {p.action:<13} {p.id or '-':<26}  [{p.kind}] {p.title}")
    if report.dry_run and report.lessons:
        click.echo("dry run: nothing stored", err=True)


def _session(ctx: click.Context, session: str, dry_run: bool, json_: bool) -> None:
    with open_lore(ctx) as lore:
        report = lore.analysis.learn_from_session(session, dry_run=dry_run)
    if json_:
        emit_json(report.to_dict())
        return
    note = report.session_pass or {}
    by = "the language model" if note.get("by") == "llm" else "the pattern pass"
    click.echo(f"session {report.session_id}: read by {by}, {len(report.lessons)} learnings")
    if note.get("by") == "llm":
        click.echo(f"  {note['in_reply']} in the reply, {note['dropped_without_quote']} dropped: no quote "
                   f"found in the transcript ({note['quotes_not_in_transcript']} quotes not found)")
    if report.error:
        click.echo(f"language model: {report.error}", err=True)
    for p in report.lessons:
        click.echo(f"  {p.action:<13} {p.id or '-':<26}  [{p.kind}] {p.title}")
    if report.dry_run and report.lessons:
        click.echo("dry run: nothing stored", err=True)


def _status(ctx: click.Context, project: str | None, json_: bool) -> None:
    with open_lore(ctx) as lore:
        st = lore.analysis.status(resolve_project(project))
    if json_:
        emit_json(st)
        return
    llm = st["llm"]
    click.echo(f"sessions seen {st['sessions_seen']}; runs: analysed {st['analysed']}, summarised "
               f"{st['summarised']}, skipped {st['skipped']}; lessons created {st['lessons_created']}, "
               f"reinforced {st['lessons_reinforced']}; threshold {st['threshold']}")
    for reason, n in st["skipped_by_reason"].items():
        click.echo(f"  skipped {n}: {reason}")
    rows = [[kind, sum(by.values()), ", ".join(f"{s} {n}" for s, n in by.items())]
            for kind, by in st["entries_by_kind"].items()]
    if rows:
        table(None, ["kind", "lessons", "by status"], rows)
    click.echo(f"language model {llm['provider'] or 'none'}: {llm['calls_today']} calls, "
               f"{llm['tokens_today']} tokens, ${llm['cost_today_usd']:.4f} today")
    start = st.get("last_session_start")
    if start:
        at = f" {start['commit'][:10]}" + (f" on {start['branch']}" if start["branch"] else "") \
            if start["commit"] else ""
        click.echo(f"last session {start['session_id']} started {start['started_at']} {start['says']}{at}")
    if st["last_error"]:
        click.echo(f"last error ({st['last_error']['at']}): {st['last_error']['error']}")
