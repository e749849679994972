"""`lore stats`: is the learning loop working? Rules followed or re-corrected, and the
learning curve (repeated corrections per session over time)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from lore.cli.common import (
    LoreCommand,
    check_output,
    emit_json,
    json_option,
    notice,
    open_lore,
    resolve_project,
    table,
)


@click.command("stats", cls=LoreCommand)
@click.option("--rules", "rules_", is_flag=True,
              help="Each approved rule: re-corrected after approval, or followed.")
@click.option("--learning", is_flag=True,
              help="Repeated corrections per session over time, as a sparkline.")
@click.option("--chart", type=click.Path(dir_okay=False),
              help="With --learning: also draw the curve to FILE.png or FILE.svg (needs the "
                   "charts extra).")
@click.option("--project", help="Rules of this project and global ones ('.' = current); "
                                "default: every project.")
@click.option("--yes", "-y", is_flag=True, help="Overwrite an existing chart file without asking.")
@json_option
@click.pass_context
def stats(ctx: click.Context, rules_: bool, learning: bool, chart: str | None,
          project: str | None, yes: bool, json_: bool) -> None:
    """Whether the user still has to repeat corrections.

    --rules counts, for each approved rule, the corrections of the same rule after its
    approval (flagged: the rule is not followed) and the later sessions where it applied
    without one. --learning shows repeated corrections (the rule was already known) per
    session, oldest first. Without either option both are shown.

    \b
    Examples:
      lore stats --rules
      lore stats --learning --chart learning.png
    """
    from lore.measure.learning import learning_curve, rates, rule_follow, sparkline, summary

    if chart and not learning:
        raise click.UsageError("--chart draws the learning curve; add --learning", ctx)
    if chart:
        if Path(chart).suffix.lower() not in (".png", ".svg"):
            raise click.BadParameter(f"{chart}: name a .png or .svg file", ctx,
                                     param_hint="--chart")
        check_output(ctx, chart, yes)
    both = not rules_ and not learning
    out: dict[str, Any] = {}
    with open_lore(ctx) as lore:
        if rules_ or both:
            out["rules"] = [r.to_dict() for r in rule_follow(lore, resolve_project(project))]
        if learning or both:
            points = learning_curve(lore)
            out["learning"] = {**summary(points), "rates": [round(r, 3) for r in rates(points)],
                               "sessions": [p.to_dict() for p in points]}
            if chart:
                from lore.measure.learning import chart as draw

                draw(points, Path(chart))
    if json_:
        emit_json(out)
        return
    if "rules" in out:
        rows = [(r["id"], r["title"][:60], r["approved_at"][:10], r["re_corrected"],
                 f"{r['followed']}/{r['situations']}",
                 "RE-CORRECTED" if r["flagged"] else "") for r in out["rules"]]
        if rows:
            table("Approved rules", ["id", "rule", "approved", "re-corrected", "followed",
                                     "flag"], rows)
        else:
            notice("no approved rule yet")
    if "learning" in out:
        lc = out["learning"]
        click.echo(f"repeated corrections per session {sparkline(lc['rates'])}  "
                   f"({lc['repeated']} of {lc['corrections']} corrections over "
                   f"{len(lc['sessions'])} sessions; first half "
                   f"{lc['repeated_per_session_first_half']}, second half "
                   f"{lc['repeated_per_session_second_half']} per session)")
        if chart:
            notice(f"wrote {chart}")
