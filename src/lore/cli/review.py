"""`lore review`: what Lore learned and waits for a person's word, and that word."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from lore import policy
from lore.cli.common import LoreGroup, emit_json, here, json_option, notice, open_lore, with_lore
from lore.cli.learn import show_saved
from lore.cli.review_tty import item_lines
from lore.policy import REQUESTS

if TYPE_CHECKING:
    from lore.api import Lore


@click.group("review", cls=LoreGroup, invoke_without_command=True)
@click.option("-i", "--interactive", is_flag=True,
              help="Walk the queue one rule at a time in the terminal, deciding with single "
                   "keys.")
@click.option("--project", help="Only this project's rules and global ones ('.' = current).")
@click.option("--limit", type=click.IntRange(1, REQUESTS["review"].most),
              default=REQUESTS["review"].limit, show_default=True,
              help="At most this many rules.")
@json_option
@click.pass_context
def review(ctx: click.Context, interactive: bool, project: str | None, limit: int,
           json_: bool) -> None:
    """List what waits for review, or decide on one rule (approve, edit, reject, defer).

    Without a verb: candidates, proposed rules, rules in conflict and rules active by
    repetition (their score made them active) that nobody reviewed, each with its evidence
    verbatim (the user's words, the agent turn they answer, session, date, project),
    occurrences, score and scope, and why one reaches the agent only once approved. A
    decision sticks: rescoring and later corrections never change a reviewed rule's status.
    Then the checks on approved rules that wait (`lore guard`), each in words with what it
    would have matched in the recorded tool calls; approve and reject take a check's id too.
    Any id may be given in any case, or as a unique prefix of 6 or more characters.

    With -i: one rule at a time; keys a approve, e edit, r reject (asks a reason), d defer,
    s or n skip, p previous, ? help, q quit. Each decision is stored at once.

    sync keeps a markdown review folder (Obsidian-compatible): tick a box or edit a rule in
    its files, then sync.

    \b
    Examples:
      lore review
      lore review -i
      lore review approve 01JD…
      lore review reject 01JD… --reason "a one-off, not a rule"
      lore review sync ~/vault/Lore
    """
    if ctx.invoked_subcommand is not None:
        if interactive:
            raise click.UsageError("-i walks the queue on its own; give it without a verb")
        return
    if interactive:
        _interactive(ctx, project, limit, json_)
        return
    with open_lore(ctx) as lore:
        where = policy.scope(project, "review", here=here())
        scope = where.project
        items = lore.review.waiting(scope, all_projects=where.every, limit=limit)
        checks = lore.review.waiting_checks(scope)[:limit]
    if json_:
        emit_json({"count": len(items), "waiting": items, "checks": checks})
        return
    if not items and not checks:
        notice("nothing waits for review")
        return
    # One write for the whole list: a thousand rules are ~7,000 lines.
    if items:
        click.echo("\n".join("\n".join(item_lines(item)) + "\n" for item in items))
    if checks:
        from lore.cli.guard_cmd import check_lines

        click.echo("Checks waiting for review (approve or reject them like rules):\n")
        click.echo("\n".join(check_lines(c) + "\n" for c in checks))


def _interactive(ctx: click.Context, project: str | None, limit: int, json_: bool) -> None:
    from lore.cli import review_tty

    if json_:
        raise click.UsageError("-i is for a person at a terminal; --json lists with `lore review`")
    if not review_tty.is_terminal():
        raise click.ClickException(review_tty.NOT_A_TERMINAL)
    with open_lore(ctx) as lore:
        where = policy.scope(project, "review", here=here())
        scope = where.project
        items: list[dict[str, Any]] = [
            dict(i) for i in lore.review.waiting(scope, all_projects=where.every, limit=limit)]
        items += [{**c, "check": True} for c in lore.review.waiting_checks(scope)][:limit]
        if not items:
            notice("nothing waits for review")
            return
        walk = review_tty.Session(lore.review.decide, items, decide_check=lore.review.decide_check)
        try:
            walk.run()
        except (KeyboardInterrupt, EOFError):
            click.echo("\ninterrupted; every decision made so far is stored")
            click.echo(walk.summary())
            ctx.exit(130)
        click.echo(walk.summary())


@review.command("approve")
@click.argument("lesson_id")
@click.option("--status", type=click.Choice(["active", "proposed"]), default="active",
              show_default=True, help="The status a rule keeps.")
@click.option("--mode", type=click.Choice(["block", "remind"]),
              help="A check: approve it in this mode (`lore guard`).")
@json_option
@with_lore
def review_approve(lore: Lore, lesson_id: str, status: str, mode: str | None,
                   json_: bool) -> None:
    """Approve a learned rule (it becomes active and stays so), or a check (it holds while
    its rule is approved).

    \b
    Examples:
      lore review approve 01JD…
      lore review approve 01JE… --mode block
    """
    lesson_id = lore.lessons.resolve_id(lesson_id)
    if lore.checks.is_check(lesson_id):
        from lore.cli.guard_cmd import done

        done(lore.review.decide_check(lesson_id, "approve", mode=mode), "approved", json_)
        return
    if mode is not None:
        raise click.UsageError("--mode goes with a check's id; this is a rule")
    lesson = lore.review.decide(lesson_id, "approve", status=status)
    show_saved(lesson, "approved", json_)
    if not json_:
        for check in lore.checks.checks(lesson.id, statuses=("proposed",)):
            notice(f"it proposed a check {check['id']}: {check['words']} (`lore review approve "
                   f"{check['id']}` turns it on, `lore review reject {check['id']}` drops it)")


@review.command("edit")
@click.argument("lesson_id")
@click.option("--title", help="The rule's new title.")
@click.option("--content", help="The rule's new text.")
@json_option
@with_lore
def review_edit(lore: Lore, lesson_id: str, title: str | None, content: str | None,
                json_: bool) -> None:
    """Reword a learned rule and approve it.

    \b
    Example:
      lore review edit 01JD… --title "Use httpx, not requests"
    """
    if title is None and content is None:
        raise click.UsageError("nothing to edit: give --title or --content")
    lesson_id = lore.lessons.resolve_id(lesson_id)
    show_saved(lore.review.decide(lesson_id, "edit", title=title, content=content), "edited", json_)


@review.command("reject")
@click.argument("lesson_id")
@click.option("--reason", help="Why it is not a rule (kept with it).")
@json_option
@with_lore
def review_reject(lore: Lore, lesson_id: str, reason: str | None, json_: bool) -> None:
    """Reject a learned rule (the same correction later stays rejected: a re-correction), or
    a check (it never holds and is not proposed again).

    \b
    Example:
      lore review reject 01JD… --reason "pasted from another tool's prompt"
    """
    lesson_id = lore.lessons.resolve_id(lesson_id)
    if lore.checks.is_check(lesson_id):
        from lore.cli.guard_cmd import done

        done(lore.review.decide_check(lesson_id, "reject"), "rejected", json_)
        return
    show_saved(lore.review.decide(lesson_id, "reject", reason=reason), "rejected", json_)


@review.command("defer")
@click.argument("lesson_id")
@json_option
@with_lore
def review_defer(lore: Lore, lesson_id: str, json_: bool) -> None:
    """Not now: the rule leaves the list until it is seen again.

    \b
    Example:
      lore review defer 01JD…
    """
    lesson_id = lore.lessons.resolve_id(lesson_id)
    show_saved(lore.review.decide(lesson_id, "defer"), "deferred", json_)


@review.command("why")
@click.argument("lesson_id")
@json_option
@with_lore
def review_why(lore: Lore, lesson_id: str, json_: bool) -> None:
    """Where a rule came from (the user's words), the decision on it, the sessions it was
    told to, and what its checks blocked.

    \b
    Example:
      lore review why 01JD…
    """
    why = lore.review.why(lesson_id)
    if json_:
        emit_json(why)
        return
    lines = [f"{why['id']}  {why['title']}", f"  status {why['status']}, scope {why['scope']}, "
             f"learned {why['created_at'][:10]}"]
    for e in why["evidence"]:
        lines.append(f"  said {str(e['date'] or '')[:10]} in session {e['session'] or '-'}: "
                     f"\"{e['said']}\"")
    if why["decision"]:
        d = why["decision"]
        lines.append(f"  {d['action']} {str(d['at'] or '')[:16]}" + (f" via {d['via']}" if d["via"] else "")
                     + (f": {d['reason']}" if d["reason"] else ""))
    told = why["told"]
    lines.append(f"  told to {told['sessions']} session(s)" +
                 (f", last {told['last'][:16]}" if told["last"] else ""))
    for c in why["checks"]:
        lines.append(f"  check {c['id']} ({c['status']}, {c['mode']}): {c['words']}")
    if why["matches"]:
        lines.append("  matched: " + ", ".join(f"{n} {k}" for k, n in sorted(why["matches"].items()))
                     + (f" (last blocked {why['last_blocked'][:16]})" if why["last_blocked"] else ""))
    elif why["checks"]:
        lines.append("  its checks matched no call yet")
    click.echo("\n".join(lines))


@review.command("forget")
@click.argument("lesson_id")
@json_option
@with_lore
def review_forget(lore: Lore, lesson_id: str, json_: bool) -> None:
    """Forget a rule: delete it with its evidence and checks (`lore apply` then takes it out
    of CLAUDE.md). To keep the same correction from coming back as a rule, reject it instead.
    Given a check's id: delete the check and its recorded matches.

    \b
    Examples:
      lore review forget 01JD…
      lore review forget 01JE…
    """
    lesson_id = lore.lessons.resolve_id(lesson_id)
    if lore.checks.is_check(lesson_id):
        from lore.cli.guard_cmd import done

        done(lore.checks.remove(lesson_id), "removed", json_)
        return
    lesson = lore.lessons.delete(lesson_id)
    if json_:
        emit_json({"deleted": lesson.id, "title": lesson.title})
        return
    notice(f"forgot rule {lesson.id}: {lesson.title} (`lore apply` takes it out of CLAUDE.md)")


FOLDER = click.argument("folder", required=False,
                        type=click.Path(file_okay=False, path_type=Path))


def _report(report: dict[str, Any], json_: bool, show: Any) -> None:
    if json_:
        emit_json(report)
    else:
        show(report)


def _exported(report: dict[str, Any]) -> None:
    for note in report["notes"]:
        notice(note)
    click.echo(f"{report['folder']}: {report['waiting']} waiting, {report['approved']} approved, "
               f"{report['archived']} decided; {len(report['written'])} file(s) written")


def _imported(report: dict[str, Any]) -> None:
    for warning in report["warnings"]:
        notice(f"warning: {warning}")
    approved = report["approved"] + report["edited"]
    edited = f" ({report['edited']} edited)" if report["edited"] else ""
    click.echo(f"imported from {report['folder']}: approved {approved}{edited}, rejected "
               f"{report['rejected']}, deferred {report['deferred']}, undecided "
               f"{report['undecided']}" + (f", kept {report['kept']} newer decision(s)"
                                           if report["kept"] else ""))


def _synced(report: dict[str, Any]) -> None:
    _imported(report["imported"])
    _exported(report["exported"])


@review.command("sync")
@FOLDER
@click.option("--only", type=click.Choice(["import", "export"]),
              help="Only import the decisions, or only write the folder.")
@json_option
@with_lore
def review_sync(lore: Lore, folder: Path | None, only: str | None, json_: bool) -> None:
    """Keep the markdown review folder: import the decisions ticked or written in its files,
    then export it afresh (a file per waiting rule, approved rules, an index).

    FOLDER defaults to review.folder in config.yaml, else review/ in the Lore home. On import
    a ticked box decides (approve, reject, defer), an edited rule text is approved as edited,
    the reason: line is kept; a decision made elsewhere since the export wins (a warning says
    so), as does nothing when two boxes are ticked; importing twice changes nothing. On
    export, files holding a decision not imported yet are kept as they are.

    \b
    Examples:
      lore review sync
      lore review sync ~/vault/Lore --only export
      lore review sync ~/vault/Lore --only import
    """
    if only == "export":
        _report(lore.review.export_folder(folder), json_, _exported)
    elif only == "import":
        _report(lore.review.import_folder(folder), json_, _imported)
    else:
        _report(lore.review.sync_folder(folder), json_, _synced)
