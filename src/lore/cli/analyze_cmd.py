"""`lore analyze`: learn from a repository's changes; `lore analyze status`: what analysis did."""

from __future__ import annotations

from typing import Any

import click

from lore.cli.common import LoreGroup, emit_json, json_option, open_lore, resolve_project, table


class AnalyzeGroup(LoreGroup):
    """`lore analyze [PATH] …` runs an analysis; `lore analyze status` is the one subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("-h", "--help")):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group("analyze", cls=AnalyzeGroup)
def analyze() -> None:
    """Learn from the work itself: score a repository's changes and propose what they teach.

    `lore analyze [PATH]` is `lore analyze run [PATH]`; `lore analyze session ID` reads one
    session's transcript. See docs/analysis.md.

    \b
    Examples:
      lore analyze . --since main --explain
      lore analyze ~/src/app --range v1.2..v1.3 --force
      lore analyze session 0d3a8e6f-290f-4105-a327-a2496e5e2a83
      lore analyze status
    """


@analyze.command("run")
@click.argument("path", required=False, default=".", type=click.Path(file_okay=False))
@click.option("--since", metavar="REF", help="Changes from this commit, branch or tag to the working tree.")
@click.option("--range", "range_", metavar="A..B", help="Changes between two commits (B defaults to HEAD).")
@click.option("--force", is_flag=True, help="Analyse whatever the score (a manual trigger).")
@click.option("--explain", is_flag=True, help="Print every part of the significance score with its points.")
@click.option("--dry-run", is_flag=True, help="Score and show what would be proposed; store nothing.")
@json_option
@click.pass_context
def analyze_run(ctx: click.Context, path: str, since: str | None, range_: str | None, force: bool,
                explain: bool, dry_run: bool, json_: bool) -> None:
    """Score PATH's changes (default: the last commit and the work in progress) and, at or above
    the threshold (`analysis.threshold`, 5) or with --force, propose lessons: the four-stage
    analysis when a language model is configured, else a summary marked as not analysed.

    Proposed lessons wait for review (`lore review`); one that restates a known lesson
    reinforces it instead.

    \b
    Examples:
      lore analyze --explain
      lore analyze . --since HEAD~5 --dry-run --json
    """
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


@analyze.command("session")
@click.argument("session")
@click.option("--dry-run", is_flag=True, help="Show what would be proposed; store nothing.")
@json_option
@click.pass_context
def analyze_session(ctx: click.Context, session: str, dry_run: bool, json_: bool) -> None:
    """Propose what one session's transcript teaches: decisions, recurring patterns, problems
    solved and anti-patterns, each with its quotes. SESSION is a transcript file (.jsonl) or the
    id of an imported session.

    The language model reads it when one is configured (`llm.provider`; quotes not found in the
    transcript are dropped), else the pattern pass does, as at the end of a session.

    \b
    Examples:
      lore analyze session ~/.claude/projects/-src-app/0d3a8e6f.jsonl --dry-run
      lore analyze session 0d3a8e6f-290f-4105-a327-a2496e5e2a83 --json
    """
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


@analyze.command("status")
@click.option("--project", help="Only this project ('.' for the current one).")
@json_option
@click.pass_context
def analyze_status(ctx: click.Context, project: str | None, json_: bool) -> None:
    """Sessions seen, analysed and skipped (with why), lessons learned per kind, today's
    language-model tokens and cost, the last error.

    \b
    Example:
      lore analyze status --json
    """
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
