"""`lore install` / `lore uninstall`: wire Lore into Claude Code (hooks + MCP server)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from lore.cli.common import LoreCommand, notice, settings

SCOPE = click.option("--scope", type=click.Choice(["user", "project", "local"]), default="user",
                     show_default=True,
                     help="user: ~/.claude/settings.json; project: .claude/settings.json; "
                          "local: .claude/settings.local.json.")
DRY = click.option("--dry-run", is_flag=True, help="Show the diff and change nothing.")


def _run(scope: str, dry_run: bool, remove: bool, judge: Any = None) -> None:
    from lore.errors import LoreError
    from lore.install import apply, lore_command, plan, plugin_scopes

    try:
        changes = plan(scope, Path.home(), Path.cwd().resolve(), lore_command(), remove=remove)
        plugin = [] if remove else plugin_scopes(Path.home(), Path.cwd().resolve())
        if plugin:
            # The plugin runs the hooks and the MCP server already: a second copy in the
            # settings would queue every event twice.
            notice(f"Claude Code's plugin lore is enabled ({', '.join(plugin)}): it runs Lore's "
                   "hooks and MCP server, so the settings are left alone (`lore doctor` checks)")
            changes = []
        if judge is not None:
            changes.append(judge())
    except LoreError as exc:
        raise click.ClickException(str(exc)) from None
    changes = [c for c in changes if c.changed]
    if not changes:
        notice("nothing to change: " + ("Lore is not installed there" if remove
                                        else "Lore is already installed"))
        return
    if dry_run:
        for c in changes:
            click.echo(c.diff())
        notice("dry run: nothing was changed")
        return
    for backup in apply(changes):
        notice(f"backup: {backup}")
    for c in changes:
        notice(("updated " if c.before is not None else "created ") + str(c.path))
    if not remove:
        notice(NEXT_STEPS)
        _offer_plugin()


def _offer_plugin() -> None:
    """Where Claude Code has plugins, say that the plugin does the same with review inside
    the session (one line; nothing is installed)."""
    from lore.install import PLUGIN_DOCS, claude_supports_plugins

    if claude_supports_plugins():
        notice("Your Claude Code supports plugins: Lore's plugin gives the same hooks plus "
               "/lore:review, /lore:approve … inside the session. To switch: lore uninstall, "
               "then `claude plugin marketplace add <Lore's repository>` and "
               f"`claude plugin install lore@lore` ({PLUGIN_DOCS}).")


NEXT_STEPS = """
Next:
  Start a new Claude Code session and work as usual: Lore notices your corrections.
  lore status     what was learned and what waits for you
  lore review     approve or reject the rules Lore proposes
  lore apply      write the approved rules into CLAUDE.md
  lore doctor     check hooks, worker, MCP server and model if something seems off"""


@click.command("install", cls=LoreCommand)
@SCOPE
@DRY
@click.option("--judge", type=click.Choice(["claude-cli", "anthropic", "openai", "none"]),
              help="The language model that decides what a session teaches (asked on a terminal): "
                   "your own `claude -p`, the Anthropic API, an OpenAI-compatible server such as "
                   "Ollama, or none (the detector alone).")
@click.option("--judge-model", help="The judge's model (default: haiku, claude-haiku-4-5 or "
              "llama3.1:8b).")
@click.option("--judge-url", help="The OpenAI-compatible server's URL (default: Ollama's "
              "http://localhost:11434/v1).")
@click.option("--judge-budget", type=click.IntRange(min=0), default=None,
              help="Tokens a day the judge may spend (default 200000).")
@click.pass_context
def install(ctx: click.Context, scope: str, dry_run: bool, judge: str | None, judge_model: str | None,
            judge_url: str | None, judge_budget: int | None) -> None:
    """Add Lore's hooks and MCP server to Claude Code's settings (keeps everything else),
    and set up the judge.

    The judge is a language model that reads each finished session's candidate
    messages (one request a session, secrets redacted) and decides what is a lesson
    and how its rule reads. On a terminal Lore asks which one to use; otherwise give
    --judge. It writes the llm: section of Lore's config.yaml (backed up first).

    \b
    Examples:
      lore install --dry-run
      lore install --scope project
      lore install --judge claude-cli
      lore install --judge openai --judge-model qwen2.5:7b
    """
    from lore.install import JUDGE_BUDGET

    chosen = judge or _ask_judge(dry_run)
    if chosen in (None, "none"):
        configured = _configured_judge(ctx)
        if configured:
            notice(f"the judge stays {configured}, as {settings(ctx).config_path} sets it"
                   + ("; to turn it off, remove the llm: section" if chosen == "none" else
                      "; change it with `lore install --judge claude-cli|anthropic|openai`"))
        elif chosen is None:
            notice("the judge is not set up: the detector decides alone; add one with "
                   "`lore install --judge claude-cli|anthropic|openai`")
        _run(scope, dry_run, remove=False)
        return
    target = settings(ctx).config_path

    def change() -> Any:
        from lore.install import judge_block, judge_change

        return judge_change(target, judge_block(chosen, model=judge_model, base_url=judge_url,
                                                budget=JUDGE_BUDGET if judge_budget is None
                                                else judge_budget))

    _run(scope, dry_run, remove=False, judge=change)
    if not dry_run:
        notice("check the judge with `lore llm check`; a running worker uses it from its next "
               "event")


def _configured_judge(ctx: click.Context) -> str | None:
    """The judge config.yaml already sets (``claude-cli (haiku)``), or None; a config that
    does not load is left to the steps that read it."""
    from lore.doctor import model_name
    from lore.errors import LoreError

    try:
        s = settings(ctx)
        llm = s.config.llm
    except LoreError:
        return None
    if not llm.provider:
        return None
    return model_name(llm.provider, llm.model) + ("" if s.config.learning.judge else
                                                  " (learning.judge off: second opinions only)")


def _interactive() -> bool:
    return sys.stdin.isatty()


def _ask_judge(dry_run: bool) -> str | None:
    """On a terminal: which judge, with what it costs. Elsewhere: None (not asked)."""
    import shutil

    from lore.install import JUDGE_BUDGET, JUDGE_TOKENS, JUDGES

    if dry_run or not _interactive():
        return None
    median, p90 = JUDGE_TOKENS
    click.echo("Lore can have a language model judge what each session teaches (one request per "
               f"finished session: about {median:,} tokens, {p90:,} at the p90; secrets are "
               f"redacted first; at most {JUDGE_BUDGET:,} tokens a day).")
    names = [*JUDGES, "none"]
    for name in names:
        about = JUDGES[name][4] if name in JUDGES else "no model: the detector decides alone"
        click.echo(f"  {name:<11} {about}")
    default = "claude-cli" if shutil.which("claude") else "none"
    return str(click.prompt("judge", type=click.Choice(names), default=default))


@click.command("uninstall", cls=LoreCommand)
@SCOPE
@DRY
@click.pass_context
def uninstall(ctx: click.Context, scope: str, dry_run: bool) -> None:
    """Remove exactly what `lore install` added, stop the worker, and say what stays.

    What stays is yours: Lore's block in CLAUDE.md files, the home (database, config, logs),
    the model's cache and the lore command itself; each is listed with how to remove it.
    Claude Code's plugin is removed with `claude plugin uninstall lore@lore`.

    \b
    Example:
      lore uninstall --scope project
    """
    _run(scope, dry_run, remove=True)
    if dry_run:
        return
    from lore.embed.packaged import graph_cache
    from lore.install import leftovers
    from lore.worker import stop_background

    s = settings(ctx)
    if stop_background(s):
        notice("worker stopped")
    cache_dir = None
    try:
        cache_dir = s.config.embedding.cache_dir
    except Exception:  # noqa: BLE001 - a broken config still uninstalls; the default cache is named
        cache_dir = None
    stays = leftovers(Path.home(), s.home, Path.cwd().resolve(), graph_cache(cache_dir))
    notice("What stays (remove what you do not want):")
    for what, how in stays:
        notice(f"  {what}: {how}")
