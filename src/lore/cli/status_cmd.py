"""`lore status`: where the loop stands — what was learned, what waits for the user, what is
written, and whether capture is running. Reads the store only; loads no model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from lore.cli.common import LoreCommand, emit_json, json_option, open_lore, settings
from lore.home import model_in_use as home_model


@click.command("status", cls=LoreCommand)
@json_option
@click.pass_context
def status(ctx: click.Context, json_: bool) -> None:
    """Where the loop stands: lessons, rules waiting for review, approved rules, capture.

    Rules whose score made them active (they recurred in the user's own words) are counted
    apart until the user confirms or rejects them in `lore review`.

    \b
    Example:
      lore status
    """
    from lore.cli.worker_cmd import judge_line
    from lore.doctor import claude_code_checks, embeddings_check, in_worker, model_name, worker_check

    s = settings(ctx)
    with open_lore(ctx) as lore:
        lessons = lore.lessons.count()
        items = lore.review.waiting(limit=10_000)
        waiting = len(items)
        repeated = [{"id": i["id"], "title": i["title"]} for i in items
                    if i.get("active_by_repetition")]
        approved = len(lore.review.approved())
        vectors = lore.admin.embedding_state()
        judging = lore.admin.waiting_for_judge()
        unwritten = _unwritten(lore) if approved else []
    if s.llm_provider is None:  # nothing set: no model, and no config built to say so
        judge = model_name(None, None)
    else:
        llm = s.config.llm
        judge = (model_name(llm.provider, llm.model) if s.config.learning.judge
                 else f"{model_name(llm.provider, llm.model)}, second opinions only "
                      "(learning.judge off)")
    checks = {c.name: c for c in [*claude_code_checks(Path.home(), Path.cwd()), worker_check(s.home)]}
    report: dict[str, Any] = {
        "database": s.db_shown, "lessons": lessons, "waiting_for_review": waiting,
        "approved_rules": approved, "unwritten_files": unwritten,
        "active_by_repetition": repeated, "embeddings": vectors,
        "judge": {"configured": judge, "in_worker": home_model(s.home), "waiting": judging},
        **{name: {"ok": c.ok, "detail": c.detail} for name, c in checks.items()}}
    if json_:
        emit_json(report)
        return
    lines = [
        f"Lessons        {lessons} in {s.db_shown}",
        f"Review         {waiting} waiting" + ("  → lore review" if waiting else ""),
        f"Rules          {approved} approved" + (
            f", not yet written to {', '.join(unwritten)}  → lore apply" if unwritten
            else ", written where the agent reads them" if approved else ""),
    ]
    if repeated:
        lines.append(f"{'':15}{len(repeated)} active by repetition, nobody confirmed them  → "
                     "lore review (approve or reject)")
    if vectors["state"] in ("needed", "half done"):  # only when the user has something to do
        c = embeddings_check(vectors)
        lines.append(f"{'Embeddings':<15}{c.detail}  → {c.fix}")
    for name, label in (("claude code", "Claude Code"), ("hooks", "Capture"),
                        ("mcp server", "MCP server"), ("worker", "Worker")):
        found = checks.get(name)
        if found is not None:
            lines.append(f"{label:<15}{found.detail}" + (f"  → {found.fix}" if found.fix else ""))
    lines.append(f"{'Judge':<15}{judge}{in_worker(s)}")
    if judging["messages"] or judging["given_up"]:
        lines.append(f"{'':<15}waiting: {judge_line(judging)}")
    click.echo("\n".join(lines))


def _unwritten(lore: Any) -> list[str]:
    """The files `lore apply` here would change: approved rules not written yet (a file
    Lore cannot read counts as not written)."""
    from lore.errors import LoreError
    from lore.normalize import project_root

    try:
        plan = lore.apply.plan(project_root(str(Path.cwd())), Path.home())
    except (LoreError, OSError):
        return []
    return [str(c.path) for c in plan.changed]
