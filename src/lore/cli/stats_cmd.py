"""`lore stats`: is the learning loop working? Rules followed or re-corrected, and the
learning curve (repeated corrections per session over time)."""

from __future__ import annotations

import json
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
from lore.normalize import clip_words


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
@click.option("--digest", type=click.Choice(["week", "month"]),
              help="A trend report of this week or month as Markdown: learned, approved, "
                   "rejected, repeated and re-corrected, top projects, against the previous one.")
@click.option("--period", metavar="LABEL",
              help="With --digest: which week (2026-W47) or month (2026-11); default: the current.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False),
              help="With --digest: write the report to FILE instead of printing it.")
@click.option("--yes", "-y", is_flag=True, help="Overwrite an existing chart or digest file without asking.")
@click.option("--counts", is_flag=True,
              help="The database's figures instead: lessons by kind, status, confidence and "
                   "project; size, model, searches.")
@json_option
@click.pass_context
def stats(ctx: click.Context, rules_: bool, learning: bool, chart: str | None,
          project: str | None, digest: str | None, period: str | None, out_file: str | None,
          yes: bool, counts: bool, json_: bool) -> None:
    """Whether the user still has to repeat corrections; with --counts, the database's figures.

    --rules shows, for each approved rule since its approval: the sessions that loaded it,
    followed out of relevant sessions (relevant: it applied there, a check of it matched, or
    the user corrected it again; followed: none of that went against it), held (a blocking
    check stopped a call), its checks' matches (blocked, reminded, allowed by the user),
    re-corrections (flagged) and when it was last relevant; a rule not relevant for 90 days
    is proposed for archiving (ARCHIVE?). The dashboard's Trends page shows the same
    figures. --learning shows repeated corrections (the rule was already known) per
    session, oldest first. Without either option both are shown.

    \b
    Examples:
      lore stats --rules
      lore stats --learning --chart learning.png
      lore stats --digest week --out digest.md
      lore stats --digest month --period 2026-10
      lore stats --counts --json
    """
    from lore.measure.learning import learning_curve, rates, rule_follow, sparkline, summary

    if counts:
        if rules_ or learning or chart or digest:
            raise click.UsageError("--counts is a report of its own; leave out the other "
                                   "reports", ctx)
        with open_lore(ctx) as lore:
            _counts(lore.admin.stats(), json_)
        return
    if (period or out_file) and not digest:
        raise click.UsageError("--period and --out go with --digest week|month", ctx)
    if digest:
        if rules_ or learning or chart:
            raise click.UsageError("--digest is a report of its own; leave out --rules, "
                                   "--learning and --chart", ctx)
        _digest(ctx, digest, period, out_file, yes, json_)
        return

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
            out["learning"] = {**summary(points, lore.sessions.learned_corrections()),
                               "rates": [round(r, 3) for r in rates(points)],
                               "sessions": [p.to_dict() for p in points]}
            if chart:
                from lore.measure.learning import chart as draw

                draw(points, Path(chart))
    if json_:
        emit_json(out)
        return
    if "rules" in out:
        rows = [(r["id"], clip_words(r["title"], 50), r["approved_at"][:10], r["loaded"],
                 f"{r['followed']}/{r['situations']}", r["held"],
                 "/".join(str(r["matches"][k]) for k in ("blocked", "reminded", "allowed")),
                 r["re_corrected"], (r["last_relevant"] or "never")[:10],
                 " ".join(f for f, on in (("RE-CORRECTED", r["flagged"]),
                                          ("ARCHIVE?", r["archive"])) if on))
                for r in out["rules"]]
        if rows:
            table("Approved rules", ["id", "rule", "approved", "loaded", "followed", "held",
                                     "blocked/reminded/allowed", "re-corrected",
                                     "last relevant", "flag"], rows)
            quiet = [r["id"] for r in out["rules"] if r["archive"]]
            if quiet:
                notice(f"{len(quiet)} rule(s) not relevant for 90 days; to archive one: "
                       f"lore learn update {quiet[0]} --status archived")
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


def _digest(ctx: click.Context, kind: str, period: str | None, out: str | None, yes: bool,
            json_: bool) -> None:
    from lore.measure import digest

    digest.parse_period(kind, period)  # a bad label fails before the database opens
    if out:
        check_output(ctx, out, yes)
    with open_lore(ctx) as lore:
        report = digest.build(lore, kind, period)
    text = json.dumps(report, indent=2, ensure_ascii=False) + "\n" if json_ else digest.markdown(report)
    if out:
        Path(out).write_text(text, encoding="utf-8")
        notice(f"wrote {out} ({report['title']})")
    else:
        click.echo(text, nl=False)


def _counts(st: dict[str, Any], json_: bool) -> None:
    if json_:
        emit_json(st)
        return
    size = st["size_bytes"] / 1024
    table("Lore", ["", ""], [
        ["database", st["database"]],
        ["size", f"{size:,.0f} KiB"],
        ["lessons", st["lessons"]],
        ["tags / edges", f"{st['tags']} / {st['edges']}"],
        ["vectors", f"{st['vectors']} ({st['embedding_model'] or 'none yet'}, "
                    f"{st['embedding_dimensions'] or '-'} dims)"],
        ["searches logged", st["searches"]],
    ])
    for key, label in (("by_kind", "kind"), ("by_status", "status"),
                       ("by_confidence", "confidence"), ("by_project", "project")):
        if st[key]:
            table(None, [label, "lessons"], list(st[key].items()))
    if st["top_queries"]:
        table(None, ["top query", "times"], [[q["query"], q["count"]] for q in st["top_queries"]])
