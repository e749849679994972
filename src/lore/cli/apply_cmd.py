"""`lore apply`: approved rules into CLAUDE.md, .claude/rules, AGENTS.md and ~/.claude/CLAUDE.md."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from lore.cli.common import (
    LoreCommand,
    confirm,
    emit_json,
    json_option,
    notice,
    open_lore,
    resolve_project,
)


def refuse_unattended(ctx: click.Context, action: str, yes: bool) -> None:
    """Without a terminal nobody can be asked: a write needs --yes (checked before anything
    is opened or read)."""
    if not yes and not sys.stdin.isatty():
        raise click.UsageError(f"refusing to {action} without confirmation: standard input is "
                               "not a terminal, so Lore cannot ask; add --yes (or --dry-run "
                               "to see the change)", ctx)


@click.command("apply", cls=LoreCommand)
@click.option("--dry-run", is_flag=True, help="Print the change as a unified diff; write nothing.")
@click.option("--project", type=click.Path(file_okay=False), default=".", show_default=True,
              help="The project folder whose rules files are written.")
@click.option("--global/--no-global", "global_", default=None,
              help="Write global rules to ~/.claude/CLAUDE.md (default: apply.global_file).")
@click.option("--agents-md/--no-agents-md", default=None,
              help="Also write every project rule to AGENTS.md (default: apply.agents_md).")
@click.option("--local/--no-local", default=None,
              help="Project rules go to CLAUDE.local.md, not CLAUDE.md (default: "
                   "apply.project_file).")
@click.option("--yes", "-y", is_flag=True,
              help="Write without asking; required when standard input is not a terminal.")
@json_option
@click.pass_context
def apply(ctx: click.Context, dry_run: bool, project: str, global_: bool | None,
          agents_md: bool | None, local: bool | None, yes: bool, json_: bool) -> None:
    """Write the approved rules where coding agents read them, as Lore's own block.

    Project rules go to the project's CLAUDE.md (rules tied to file types to
    .claude/rules/<topic>.md), global rules to ~/.claude/CLAUDE.md, and optionally every
    project rule to AGENTS.md. Only Lore's block changes; a rule rejected or superseded
    since the last run leaves it. Running it twice changes nothing. Every approved rule it
    does not write here is named with why (another project's rule, the global file off, or
    a line the file already holds).

    \b
    Examples:
      lore apply --dry-run
      lore apply --yes --agents-md
      lore apply --project ~/src/shop --no-global --yes
    """
    folder = resolve_project(project)
    if folder is None or not os.path.isdir(folder):
        raise click.BadParameter(f"no such folder: {project}", ctx, param_hint="--project")
    with open_lore(ctx) as lore:
        plan = lore.apply.plan(folder, Path.home(), local=local, agents_md=agents_md,
                               include_global=global_)
        diff = plan.diff()
        left_out = lore.apply.left_out(folder, include_global=global_)
        holding = bool(lore.apply.rules(folder))
        written: list[str] = []
        if not dry_run and plan.changed:
            # Asked only when there is something to write: nothing to do is a plain success.
            refuse_unattended(ctx, "write rules files", yes)
            if not json_:
                click.echo(diff, nl=False)
            confirm(yes, f"Write {len(plan.changed)} file(s)?")
            written = [str(p) for p in plan.write()]
    skipped = [{"file": str(path), "id": s.rule_id, "reason": s.reason}
               for path, s in plan.skipped]
    if json_:
        emit_json({"project": folder, "dry_run": dry_run, "diff": diff,
                   "changed": [str(c.path) for c in plan.changed], "written": written,
                   "skipped": skipped, "not_written": left_out})
        return
    if dry_run:
        click.echo(diff, nl=False)
    for s in skipped:
        notice(f"left out {s['id']} in {s['file']}: {s['reason']}")
    # Rules of other projects are summed up; a global rule left out, or this project's rule
    # another supersedes, is named with why.
    elsewhere = [r for r in left_out if r["project"] not in (None, folder)]
    for r in left_out:
        if r not in elsewhere:
            notice(f"not written: {r['id']} \"{r['title']}\": {r['reason']}")
    if elsewhere:
        projects = len({r["project"] for r in elsewhere})
        notice(f"not written here: {len(elsewhere)} approved rule(s) of {projects} other "
               "project(s) (`lore apply` in their folder writes them; `lore apply --json` "
               "lists them)")
    if not plan.changed and not holding:
        notice("nothing to write: no approved rule holds here yet (`lore review` lists what "
               "waits for your word)")
    elif not plan.changed:
        notice("nothing to change: the files already hold the approved rules")
    elif dry_run:
        notice(f"{len(plan.changed)} file(s) would change; run without --dry-run to write")
    else:
        notice(f"wrote {len(written)} file(s): " + ", ".join(written))
