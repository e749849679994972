"""`lore config`: what Lore is configured to do, and where each value came from."""

from __future__ import annotations

import click

from lore.cli.common import LoreCommand, emit_json, json_option, settings, table


@click.command("config", cls=LoreCommand)
@click.option("--path", "path_", is_flag=True,
              help="Print only the path of the config file (it may not exist yet).")
@click.option("--all", "all_", is_flag=True,
              help="Also every tuning constant: the values benchmarks chose (search and ranking "
                   "weights), where each lives in the code and what chose it.")
@json_option
@click.pass_context
def config_group(ctx: click.Context, path_: bool, all_: bool, json_: bool) -> None:
    """Every effective setting with its origin: default, the config file, or a LORE_* variable.

    \b
    Examples:
      lore config
      LORE_EMBEDDING_MODEL=text-embedding-3-small lore config --json
      lore config --all
      $EDITOR "$(lore config --path)"
    """
    if path_:
        from lore.config import config_file

        click.echo(str(config_file()))
        return
    from lore.config import effective

    s = settings(ctx)
    rows = effective(s)
    tuning: list[dict] = []
    if all_ or s.tuning:
        from lore.api import tuning_constants

        tuning = [r for r in tuning_constants(s) if all_ or r["source"] != "default"]
    if json_:
        emit_json({"config_file": str(s.config_path), "home": str(s.home),
                   "database": s.db_shown,
                   "settings": [{"key": k, "value": v, "source": src} for k, v, src in rows],
                   "tuning": tuning})
        return
    click.echo(f"# home {s.home}\n# config {s.config_path}\n# database {s.db_shown}", err=True)
    table(None, ["key", "value", "source"], [[k, repr(v) if isinstance(v, str) else v, src]
                                             for k, v, src in rows])
    if tuning:
        table("tuning constants (docs/configuration.md#tuning-constants)",
              ["key", "value", "source", "benchmark", "lives in"],
              [[r["key"], repr(r["value"]) if isinstance(r["value"], str) else r["value"],
                r["source"], r["bench"] or "none (set by hand)", r["lives_in"]] for r in tuning])
