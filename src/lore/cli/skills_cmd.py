"""`lore skills`: propose Agent Skills from groups of approved lessons; write the one chosen."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from lore.cli.common import LoreCommand, emit_json, json_option, notice, open_lore

if TYPE_CHECKING:
    from lore.api import Lore


@click.command("skills", cls=LoreCommand)
@click.argument("choice", metavar="[NUMBER|NAME]", required=False)
@click.option("--global", "to_global", is_flag=True,
              help="Into ~/.claude/skills (every project), not the project's .claude/skills.")
@click.option("--dry-run", is_flag=True, help="Print the files as a diff; write nothing.")
@json_option
@click.pass_context
def skills_group(ctx: click.Context, choice: str | None, to_global: bool, dry_run: bool,
                 json_: bool) -> None:
    """Agent Skills (SKILL.md + reference.md) from related approved lessons.

    Without an argument: the groups of approved lessons that could become a skill (same tag
    and project, similar in meaning); nothing is written. With NUMBER or NAME: write that
    skill. The folder is checked before anything is written; a folder of the same name that
    Lore did not generate is never touched: the skill gets the next free name
    (learned-testing-2).

    \b
    Examples:
      lore skills
      lore skills 1 --dry-run
      lore skills learned-testing --global
    """
    if choice is None and (to_global or dry_run):
        raise click.UsageError("--global and --dry-run go with the skill to write: "
                               "lore skills NUMBER|NAME", ctx)
    with open_lore(ctx) as lore:
        if choice is None:
            _propose(lore, json_)
        else:
            _write(lore, choice, to_global, dry_run, json_)


def _propose(lore: Lore, json_: bool) -> None:
    proposals = lore.apply.skills()
    if json_:
        emit_json({"count": len(proposals), "proposals": [p.to_dict() for p in proposals]})
        return
    if not proposals:
        notice(f"no skill to propose: it takes {lore.apply.skill_min_size()} approved lessons "
               "with a tag in common and similar meaning")
        return
    for p in proposals:
        where = p.cluster.project or "all projects"
        click.echo(f"{p.number}. {p.skill.name}  ({len(p.cluster.lessons)} lessons, {where})")
        for x in p.cluster.lessons:
            click.echo(f"     {x.id}  {x.title}")
    notice("write one with `lore skills NUMBER` (or its name); --dry-run shows the files")


def _write(lore: Lore, choice: str, to_global: bool, dry_run: bool, json_: bool) -> None:
    skill, plan = lore.apply.skill_plan(choice, Path.home(), to_global=to_global)
    written = [] if dry_run else [str(p) for p in plan.write()]
    if json_:
        emit_json({"name": skill.name, "dry_run": dry_run, "diff": plan.diff(),
                   "changed": [str(c.path) for c in plan.changed], "written": written})
        return
    if dry_run:
        click.echo(plan.diff(), nl=False)
        notice(f"skill {skill.name}: {len(plan.changed)} file(s) would change")
    elif written:
        notice(f"wrote skill {skill.name}: " + ", ".join(written))
    else:
        notice(f"skill {skill.name} is already up to date")
