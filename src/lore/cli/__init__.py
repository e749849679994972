"""The `lore` command. Thin: parse options, call one core function, render the result.

Heavy modules (pydantic, numpy, onnxruntime, rich) are imported inside commands,
so `lore --help` and `lore hook …` start fast.
"""

from __future__ import annotations

import click

from lore import __version__
from lore.cli.admin import admin, doctor
from lore.cli.analyze_cmd import analyze
from lore.cli.apply_cmd import apply
from lore.cli.common import LoreGroup
from lore.cli.config_cmd import config_group
from lore.cli.context_cmd import context_group
from lore.cli.demo_cmd import demo
from lore.cli.eval_cmd import eval_group
from lore.cli.guard_cmd import guard
from lore.cli.hook_cmd import hook, statusline
from lore.cli.ingest_cmd import ingest
from lore.cli.install_cmd import install, uninstall
from lore.cli.learn import learn
from lore.cli.llm_cmd import llm_group
from lore.cli.mcp_cmd import mcp
from lore.cli.recall import recall, search
from lore.cli.review import review
from lore.cli.serve_cmd import serve
from lore.cli.skills_cmd import skills_group
from lore.cli.stats_cmd import stats
from lore.cli.status_cmd import status
from lore.cli.sync_cmd import sync
from lore.cli.worker_cmd import worker

# `lore --help` shows the loop first: capture (install), review, apply, then finding things.
SECTIONS = (
    ("The loop", ("install", "status", "review", "apply", "search", "doctor")),
    ("Lessons and memory", ("learn", "recall", "guard", "ingest", "analyze", "skills",
                            "context", "stats")),
    ("Running Lore", ("worker", "mcp", "serve", "sync", "llm", "config", "statusline",
                      "uninstall")),
    ("Administration and measurement", ("admin", "eval", "demo", "hook")),
)


class RootGroup(LoreGroup):
    """The root command: its commands listed in the sections above, in that order."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        listed: set[str] = set()
        limit = formatter.width - 6 - max(len(n) for n in self.commands)
        for title, names in SECTIONS:
            rows = [(n, self.commands[n].get_short_help_str(limit)) for n in names
                    if n in self.commands and not self.commands[n].hidden]
            listed.update(names)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [(n, c.get_short_help_str(limit)) for n, c in sorted(self.commands.items())
                if n not in listed and not c.hidden]
        if rest:
            with formatter.section("Other commands"):
                formatter.write_dl(rest)


@click.group(cls=RootGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="lore")
@click.option("--db", "db_path", type=click.Path(dir_okay=False), envvar="LORE_DB",
              help="Database file (default: $LORE_HOME/lore.db, LORE_HOME defaults to ~/.lore).")
@click.pass_context
def cli(ctx: click.Context, db_path: str | None) -> None:
    """Lore: a local-first learning memory for AI coding agents.

    Lore notices what you teach your coding agent (corrections, preferences, lessons),
    keeps it, and after you review it writes it where the agent reads it.

    \b
    Quick start:
      lore install              # Claude Code's hooks and MCP server; then work as usual
      lore review               # approve the rules Lore learned from your corrections
      lore apply                # write the approved rules into CLAUDE.md
      lore search "where do we keep login state?"
    """
    ctx.ensure_object(dict)
    ctx.obj["db_path"] = db_path


cli.add_command(admin)
cli.add_command(learn)
cli.add_command(recall)
cli.add_command(config_group)
cli.add_command(demo)
cli.add_command(mcp)
cli.add_command(ingest)
cli.add_command(eval_group)
cli.add_command(hook)
cli.add_command(statusline)
cli.add_command(worker)
cli.add_command(llm_group)
cli.add_command(analyze)
cli.add_command(review)
cli.add_command(guard)
cli.add_command(install)
cli.add_command(uninstall)
cli.add_command(apply)
cli.add_command(context_group)
cli.add_command(skills_group)
cli.add_command(stats)
cli.add_command(serve)
cli.add_command(sync)
cli.add_command(status)
cli.add_command(doctor)
cli.add_command(search)


def main() -> None:
    cli(prog_name="lore")


if __name__ == "__main__":  # pragma: no cover
    main()
