"""`lore review`: what Lore learned and waits for a person's word, and that word."""

from __future__ import annotations

from typing import Any

import click

from lore.cli.common import LoreGroup, emit_json, json_option, notice, open_lore, resolve_project, with_lore
from lore.cli.learn import show_saved


@click.group("review", cls=LoreGroup, invoke_without_command=True)
@click.option("--project", help="Only this project's rules and global ones ('.' = current).")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True,
              help="At most this many rules.")
@json_option
@click.pass_context
def review(ctx: click.Context, project: str | None, limit: int, json_: bool) -> None:
    """List what waits for review, or decide on one rule (approve, edit, reject, defer).

    Without a verb: candidates, proposed rules and rules in conflict that nobody reviewed,
    each with its evidence verbatim (the user's words, the agent turn they answer, session,
    date, project), occurrences, score and scope. A decision sticks: rescoring and later
    corrections never change a reviewed rule's status.

    \b
    Examples:
      lore review
      lore review approve 01JD…
      lore review reject 01JD… --reason "a one-off, not a rule"
    """
    if ctx.invoked_subcommand is not None:
        return
    with open_lore(ctx) as lore:
        scope = resolve_project(project) if project else None
        items = lore.learner.waiting(scope, all_projects=scope is None, limit=limit)
    if json_:
        emit_json({"count": len(items), "waiting": items})
        return
    if not items:
        notice("nothing waits for review")
        return
    for item in items:
        _show(item)


def _show(item: dict[str, Any]) -> None:
    flags = [item["status"], f"score {item['score']:.2f}" if item["score"] is not None else "",
             f"seen {item['occurrences']}x in {item['sessions']} session(s)", f"scope {item['scope']}"]
    if item["conflicts"]:
        flags.append(f"conflicts with {', '.join(item['conflicts'])}")
    if item["recorrections"]:
        flags.append(f"{item['recorrections']} re-correction(s)")
    click.echo(f"{item['id']}  {item['title']}")
    click.echo(f"  [{', '.join(f for f in flags if f)}]")
    if item["why_candidate"]:
        click.echo(f"  candidate: {item['why_candidate']}")
    for ev in item["evidence"][-3:]:
        where = ", ".join(str(x) for x in (ev["date"], ev["session"] and f"session {ev['session']}",
                                           ev["project"]) if x)
        click.echo(f"  said ({where}): {_one_line(ev['said'])}")
        if ev["agent_turn"]:
            click.echo(f"    answering: {_one_line(ev['agent_turn'])}")
    click.echo()


def _one_line(text: str, limit: int = 240) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@review.command("approve")
@click.argument("lesson_id")
@click.option("--status", type=click.Choice(["active", "proposed"]), default="active",
              show_default=True, help="The status it keeps.")
@json_option
@with_lore
def review_approve(lore: Any, lesson_id: str, status: str, json_: bool) -> None:
    """Approve a learned rule: it becomes active and stays so.

    \b
    Example:
      lore review approve 01JD…
    """
    show_saved(lore.learner.review(lesson_id, "approve", status=status), "approved", json_)


@review.command("edit")
@click.argument("lesson_id")
@click.option("--title", help="The rule's new title.")
@click.option("--content", help="The rule's new text.")
@json_option
@with_lore
def review_edit(lore: Any, lesson_id: str, title: str | None, content: str | None,
                json_: bool) -> None:
    """Reword a learned rule and approve it.

    \b
    Example:
      lore review edit 01JD… --title "Use httpx, not requests"
    """
    if title is None and content is None:
        raise click.UsageError("nothing to edit: give --title or --content")
    show_saved(lore.learner.review(lesson_id, "edit", title=title, content=content), "edited", json_)


@review.command("reject")
@click.argument("lesson_id")
@click.option("--reason", help="Why it is not a rule (kept with it).")
@json_option
@with_lore
def review_reject(lore: Any, lesson_id: str, reason: str | None, json_: bool) -> None:
    """Reject a learned rule; the same correction later stays rejected (a re-correction).

    \b
    Example:
      lore review reject 01JD… --reason "pasted from another tool's prompt"
    """
    show_saved(lore.learner.review(lesson_id, "reject", reason=reason), "rejected", json_)


@review.command("defer")
@click.argument("lesson_id")
@json_option
@with_lore
def review_defer(lore: Any, lesson_id: str, json_: bool) -> None:
    """Not now: the rule leaves the list until it is seen again.

    \b
    Example:
      lore review defer 01JD…
    """
    show_saved(lore.learner.review(lesson_id, "defer"), "deferred", json_)
