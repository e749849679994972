"""`lore guard`: checks on rules, held by the PreToolUse hook at the moment of action."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from lore.cli.common import LoreGroup, emit_json, json_option, notice, open_lore, with_lore

if TYPE_CHECKING:
    from lore.api import Lore

MODES = click.Choice(["remind", "block"])


@click.group("guard", cls=LoreGroup, invoke_without_command=True)
@click.option("--rule", "rule_id", help="Only the checks of this rule.")
@click.option("--status", type=click.Choice(["proposed", "active", "rejected"]),
              help="Only checks in this status.")
@json_option
@click.pass_context
def guard(ctx: click.Context, rule_id: str | None, status: str | None, json_: bool) -> None:
    """Checks: a rule held when the agent acts, not only read.

    A check says which tool calls a rule governs (--command: a Bash command pattern,
    --path: a glob for the files Write, Edit, MultiEdit and NotebookEdit change, --content: a
    pattern in the text written, --tool: a tool or MCP tool name) and whether the call is
    blocked (denied with the rule as the reason) or runs with the rule as a reminder. A check
    holds once both it and its rule are approved (`lore review approve|reject CHECK_ID`
    decides on it, `lore review forget CHECK_ID` deletes it). Without a verb: the checks, in
    words.

    \b
    Examples:
      lore guard propose
      lore guard add 01JD… --command 'npm(?=\\s|$)' --mode block
      lore guard test 01JE… --since 30d
      lore review approve 01JE…
      lore guard mode 01JE… allow --minutes 10
    """
    if ctx.invoked_subcommand is not None:
        return
    with open_lore(ctx) as lore:
        rows = lore.checks.checks(lore.lessons.resolve_id(rule_id) if rule_id else None,
                                   (status,) if status else None)
    if json_:
        emit_json({"count": len(rows), "checks": rows})
        return
    if not rows:
        notice("no check yet; `lore guard propose` proposes checks for the approved rules")
        return
    click.echo("\n".join(check_lines(r) for r in rows))


def check_lines(row: dict[str, Any]) -> str:
    out = [f"{row['id']}  [{row['status']}, {row['mode']}]  rule {row['lesson_id']}: {row['rule']}",
           f"  {row['words']}"]
    if row.get("note"):
        out.append(f"  proposed for: {row['note']} ({row['origin']})")
    if row.get("allowed_until"):
        out.append(f"  allowed until {row['allowed_until'][:19]}")
    if row.get("replay") is not None:
        out.extend(replay_lines(row["replay"], indent="  "))
    return "\n".join(out)


def replay_lines(r: dict[str, Any], indent: str = "") -> list[str]:
    """What a replay found, in a few lines."""
    out = [f"{indent}would have matched {r['matched']} of {r['calls']} recorded tool calls in "
           f"{r['sessions']} sessions; {r['accepted']} of them calls the user accepted"
           + ("  ← FLAGGED: it would have stopped calls the user was content with"
              if r["flagged"] else "")]
    for m in r["accepted_examples"] or r["examples"]:
        tag = "accepted" if m["accepted"] else ("refused" if m["refused"] else "corrected")
        out.append(f"{indent}  - {(m['at'] or '')[:10]} {m['tool']}: {m['matched'][:100]} ({tag})")
    return out


@guard.command("add")
@click.argument("rule_id")
@click.option("--command", "command_", help="A regular expression for a Bash command, matched "
                                            "at the start of each command the line runs (also "
                                            "through sudo, env, bash -c …): 'npm(?=\\s|$)'.")
@click.option("--path", help="A glob for the file written: 'gen/', '**/*.min.js', "
                             "'src/{a,b}/*.py'.")
@click.option("--content", help="A regular expression for the text written: "
                                "'^\\s*import requests'.")
@click.option("--tool", help="A tool name, * for any characters: WebFetch, 'mcp__github__*'.")
@click.option("--mode", type=MODES, default="remind", show_default=True,
              help="block: deny the call with the rule as the reason; remind: add the rule "
                   "as context and let it run.")
@click.option("--approve", is_flag=True, help="Approve it at once (it holds when its rule "
                                              "is approved).")
@json_option
@with_lore
def guard_add(lore: Lore, rule_id: str, command_: str | None, path: str | None,
              content: str | None, tool: str | None, mode: str, approve: bool,
              json_: bool) -> None:
    """Add a check to a rule (every condition given must hold).

    \b
    Examples:
      lore guard add 01JD… --command 'npm(?=\\s|$)' --mode block
      lore guard add 01JD… --path 'gen/' --mode block --approve
      lore guard add 01JD… --path '*.py' --content '^\\s*import requests'
    """
    row = lore.checks.add(lore.lessons.resolve_id(rule_id),
                          {"command": command_, "path": path, "content": content, "tool": tool,
                           "mode": mode},
                          status="active" if approve else "proposed")
    done(row, "added", json_)


def done(row: dict[str, Any], what: str, json_: bool) -> None:
    if json_:
        emit_json(row)
    else:
        click.echo(row["id"])
        notice(f"{what}: {row['words']} (rule: {row['rule']})")


@guard.command("propose")
@click.argument("rule_id", required=False)
@click.option("--no-model", is_flag=True,
              help="Only the shapes read from the rule's words, even with a model configured.")
@json_option
@with_lore
def guard_propose(lore: Lore, rule_id: str | None, no_model: bool, json_: bool) -> None:
    """Propose checks for a rule, or for every approved rule, from the rule's words
    (package managers, force-pushing, generated or vendored paths, a banned import, a file
    type) and, with a language model configured, from the model's reading of the rule. Each
    waits for review; none is proposed twice.

    \b
    Examples:
      lore guard propose
      lore guard propose 01JD8X3Q5M4Z2Y7T6R1W0V9K8J --no-model
    """
    made = lore.checks.propose(lore.lessons.resolve_id(rule_id) if rule_id else None,
                                ask_model=not no_model)
    if json_:
        emit_json({"count": len(made), "checks": made})
        return
    if not made:
        notice("no new check to propose")
        return
    click.echo("\n".join(check_lines(r) for r in made))
    notice(f"{len(made)} checks proposed; `lore guard test ID` replays one, "
           "`lore review approve ID` enables it")


@guard.command("mode")
@click.argument("check_id")
@click.argument("mode", type=click.Choice(["block", "remind", "allow"]))
@click.option("--minutes", type=click.FloatRange(0, 10080), default=30, show_default=True,
              help="With allow: how long its calls are let through (0: block again).")
@json_option
@click.pass_context
def guard_mode(ctx: click.Context, check_id: str, mode: str, minutes: float, json_: bool) -> None:
    """Switch a check between remind and block; or allow a blocking check's calls through
    for a while: the agent is told the rule, the call runs, and it counts as allowed by the
    user.

    \b
    Examples:
      lore guard mode 01JE… remind
      lore guard mode 01JE… allow --minutes 10
    """
    if mode != "allow" and ctx.get_parameter_source("minutes") != ParameterSource.DEFAULT:
        raise click.UsageError("--minutes goes with allow", ctx)
    with open_lore(ctx) as lore:
        check = lore.lessons.resolve_id(check_id)
        if mode == "allow":
            done(lore.checks.allow(check, minutes),
                 f"allowed for {minutes:g} minutes" if minutes else "blocking again", json_)
        else:
            done(lore.checks.set_mode(check, mode), f"now {mode}", json_)


@guard.command("test")
@click.argument("check_id", required=False)
@click.option("--command", "command_", help="Replay this command pattern instead of a stored check.")
@click.option("--path", help="Replay this path glob instead of a stored check.")
@click.option("--content", help="Replay this text pattern instead of a stored check.")
@click.option("--tool", help="Replay this tool name instead of a stored check.")
@click.option("--since", help="Only calls since this date (2026-11-01) or number of days (30d).")
@click.option("--all-projects", is_flag=True, help="Every project's calls, not only the rule's.")
@click.option("--examples", type=click.IntRange(0, 100), default=5, show_default=True,
              help="How many matches to show.")
@json_option
@click.pass_context
def guard_test(ctx: click.Context, check_id: str | None, command_: str | None,
               path: str | None, content: str | None, tool: str | None, since: str | None,
               all_projects: bool, examples: int, json_: bool) -> None:
    """Replay a check over the recorded tool calls (imported transcripts, hook events): how
    many it would have matched, with examples, and which of those the user accepted without
    complaint (flagged: the check would have stopped work the user wanted).

    \b
    Examples:
      lore guard test 01JE…
      lore guard test 01JE… --since 2026-11-01
      lore guard test --command 'git\\s+push\\b.*--force' --all-projects
    """
    given = {"command": command_, "path": path, "content": content, "tool": tool}
    if check_id and any(given.values()):
        raise click.UsageError("give a check id or patterns, not both", ctx)
    if not check_id and not any(given.values()):
        raise click.UsageError("give a check id, or --command/--path/--content/--tool", ctx)
    with open_lore(ctx) as lore:
        report = lore.checks.test(lore.lessons.resolve_id(check_id) if check_id else given, since=since,
                                  every_project=all_projects).to_dict(examples)
    if json_:
        emit_json(report)
        return
    click.echo("\n".join(replay_lines(report)))


@guard.command("compile")
@json_option
@with_lore
def guard_compile(lore: Lore, json_: bool) -> None:
    """Write the file the hooks read ($LORE_HOME/guards.json). Done by itself whenever a
    check or a checked rule changes, and at each session start; this is for a file removed by
    hand.

    \b
    Example:
      lore guard compile
    """
    n = lore.checks.compile()
    refused = lore.checks.refused()
    if json_:
        emit_json({"checks": n, "path": lore.checks.path, "refused": refused})
    else:
        notice(f"{n} checks hold; wrote {lore.checks.path}" if n else
               "no check holds: the hooks' file is removed, so they return at once")
        if refused:
            notice(f"note: the hooks will not enforce them: {refused}")
