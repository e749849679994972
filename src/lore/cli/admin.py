"""`lore admin`: the database as a whole."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import click

from lore.cli.common import (
    LoreCommand,
    LoreGroup,
    check_output,
    confirm,
    emit_json,
    json_option,
    notice,
    open_lore,
    progress_bar,
    settings,
    table,
    with_lore,
    yes_option,
)
from lore.private import open_private, private_dir

if TYPE_CHECKING:
    from lore.api import Lore

CONFIG_TEMPLATE = """\
# Lore configuration. Every key is optional and every one here is commented out, showing its
# default: uncomment a key (and its section) to change it. `lore config` prints the
# effective values. ${VAR} and ${VAR:-default} are replaced by environment variables.

# embedding:
#   backend: fastembed          # fastembed | sentence-transformers | openai
#   model: all-MiniLM-L6-v2     # changing it needs `lore admin reembed`
#   api_key: ${OPENAI_API_KEY}

# search:
#   default_limit: 10
#   anti_context: exclude       # exclude | demote

# llm:                          # a language model judges what is a lesson (docs/llm.md)
#   provider: claude-cli        # anthropic | openai | claude-cli

# conversations:
#   rerank: false               # with llm: the model re-orders conversation search (slower)

# Search and ranking weights and the like are tuning constants, kept in the code beside what
# uses them, not settings: `lore config --all` lists them
# (docs/configuration.md#tuning-constants).

# tag_aliases:                  # default: none
#   js: javascript

# known_tags: []
"""


@click.group(cls=LoreGroup)
def admin() -> None:
    """Create, back up, copy and repair the database.

    \b
    Example:
      lore admin export -o lessons.jsonl
    """


@admin.command("init")
@json_option
@click.pass_context
def admin_init(ctx: click.Context, json_: bool) -> None:
    """Create the database (and a commented config.yaml if there is none).

    \b
    Example:
      LORE_HOME=~/work/.lore lore admin init
    """
    from lore.api import Lore

    s = settings(ctx)
    existed = s.db_is_url or s.db_path.exists()
    wrote_config = False
    if not s.config_path.exists():
        private_dir(s.config_path.parent)
        with open(open_private(s.config_path), "w", encoding="utf-8") as fh:
            fh.write(CONFIG_TEMPLATE)
        wrote_config = True
    with Lore.open(s) as lore:
        count = lore.lessons.count()
    result = {"database": s.db_shown, "created": not existed, "lessons": count,
              "config": str(s.config_path), "config_created": wrote_config}
    if json_:
        emit_json(result)
        return
    click.echo(s.db_shown)
    notice(("created" if not existed else "already initialised") + f": {s.db_shown} "
           f"({count} lessons)")
    if wrote_config:
        notice(f"wrote a commented config to {s.config_path}")


@admin.command("export")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="File (default: stdout).")
@click.option("--yes", "-y", is_flag=True,
              help="Overwrite an existing --output file without asking (required when standard "
                   "input is not a terminal).")
@click.pass_context
def admin_export(ctx: click.Context, output: str | None, yes: bool) -> None:
    """Write every lesson as JSON Lines (tags, contexts, edges, examples, evidence …).

    An existing --output file is overwritten only after asking on a terminal, or with --yes.

    \b
    Example:
      lore admin export -o lessons.jsonl
    """
    check_output(ctx, output, yes)
    n = 0
    with open_lore(ctx) as lore:
        try:
            # An export quotes every lesson: private (0600) like the database it comes from.
            with (open(open_private(Path(output)), "w", encoding="utf-8") if output
                  else nullcontext(sys.stdout)) as out:
                for record in lore.lessons.export():
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    n += 1
        except OSError as exc:  # a full disk: name the file, not "a file"
            exc.filename = exc.filename or output or "standard output"
            raise
    notice(f"exported {n} lessons" + (f" to {output}" if output else ""))


@admin.command("import")
@click.argument("lines", metavar="FILE", type=click.Path(dir_okay=False, allow_dash=True),
                callback=lambda ctx, param, value: _read_lines(ctx, param, value))
@click.option("--skip-invalid", is_flag=True,
              help="Import the valid lines and report each invalid one by number.")
@json_option
@click.pass_context
def admin_import(ctx: click.Context, lines: list[str], skip_invalid: bool, json_: bool) -> None:
    """Import a JSON Lines export; idempotent by id, all-or-nothing unless --skip-invalid.

    \b
    Examples:
      lore admin import laptop.jsonl
      cat desktop.jsonl | lore admin import - --skip-invalid
    """
    from lore.core.transfer import parse_lines, refuse
    from lore.models import ImportReport

    # Lines that are not lessons are refused before the database is opened; a refusal after
    # it (an unknown kind, a link to a missing lesson) in a new home leaves no database.
    parsed, errors = parse_lines(lines)
    if not skip_invalid:
        refuse(errors)
    if not parsed:  # nothing to write: the database is not even opened
        report = ImportReport(skipped=errors)
    else:
        bar, update = progress_bar("embedding")
        with open_lore(ctx, undo_new=True) as lore, bar:
            report = lore.lessons.import_lines(lines, skip_invalid=skip_invalid, progress=update)
    for number, reason in report.skipped:
        notice(f"skipped line {number}: {reason}")
    if json_:
        emit_json(report.to_dict())
    else:
        notice(f"imported: {report.added} added, {report.updated} updated, "
               f"{report.unchanged} unchanged, {report.edges} links, "
               f"{len(report.skipped)} skipped")


@admin.command("migrate-to")
@click.argument("target")
@click.option("--force", is_flag=True,
              help="Replace what the target holds (its lessons, conversations and history are "
                   "deleted first); without it a target holding Lore data is refused.")
@json_option
@with_lore
def admin_migrate_to(lore: Lore, target: str, force: bool, json_: bool) -> None:
    """Copy the whole database to another one: a Postgres server or an SQLite file.

    Everything travels: lessons with their tags, contexts, examples, evidence and vectors,
    links, conversations, corrections, sessions, usage, searches and access tokens. The
    target rebuilds its keyword and vector indexes. The database in use is not changed;
    point `database:` (or LORE_DATABASE_URL) at the target afterwards.

    \b
    Examples:
      lore admin migrate-to postgresql://me@db.example/lore
      LORE_DATABASE_URL=postgresql://me@db.example/lore lore admin migrate-to ~/lore-copy.db
    """
    from lore.home import mask_url

    bar, update = progress_bar("copying rows")
    with bar:
        copied = lore.admin.migrate_to(target, force=force, progress=update)
    if json_:
        emit_json({"target": mask_url(target), "rows": copied})
        return
    notice(f"copied {sum(copied.values())} rows in {len(copied)} tables to {mask_url(target)} "
           f"({copied.get('lessons', 0)} lessons, {copied.get('chunks', 0)} conversation chunks)")


def _read_lines(ctx: click.Context, param: click.Parameter, file: str) -> list[str]:
    """Read the whole file (or stdin) while parsing, before the database is opened. Bytes
    that are not UTF-8 become U+FFFD in their line, so one bad byte costs one line at most."""
    from lore.core.transfer import read_lines

    if file == "-":
        return read_lines(sys.stdin.buffer.read())
    if file == "":
        raise click.BadParameter("an empty path; give a file or '-'", ctx, param)
    path = Path(file)
    try:
        return read_lines(path.read_bytes())
    except FileNotFoundError:
        raise click.ClickException(f"no such file: {file}") from None
    except OSError as exc:
        raise click.ClickException(f"cannot read {file}: {exc.strerror or exc}") from None


@admin.command("merge-tags")
@click.argument("old")
@click.argument("new")
@yes_option("retag lessons")
@json_option
@with_lore
def admin_merge_tags(lore: Lore, old: str, new: str, yes: bool, json_: bool) -> None:
    """Retag every lesson tagged OLD as NEW, and remember OLD as an alias of NEW.

    It cannot be undone (NEW may already be on other lessons): asks first on a terminal; in a
    script or pipe it refuses unless --yes is given.

    \b
    Example:
      lore admin merge-tags js javascript --yes
    """
    confirm(yes, f"Retag every lesson tagged '{old}' as '{new}'?")
    n = lore.lessons.merge_tags(old, new)
    if json_:
        emit_json({"from": old, "to": new, "lessons": n})
    else:
        notice(f"merged '{old}' into '{new}' on {n} lessons")


@admin.command("reembed")
@click.option("--force", is_flag=True,
              help="Re-embed everything from scratch, not only missing or stale vectors.")
@json_option
@with_lore
def admin_reembed(lore: Lore, force: bool, json_: bool) -> None:
    """Rebuild vectors with the configured model (after changing embedding.model).

    Lessons and conversation chunks are embedded a batch at a time, each batch stored as it
    is done: an interrupted run (Ctrl-C, SIGTERM, a closed terminal) is continued by the next
    one. Until it completes, searches find the re-embedded rows by meaning and the others by
    keywords; vectors of two models are never compared. A progress bar (done, rate, time
    left) shows on a terminal only.

    \b
    Example:
      lore admin reembed
    """
    import signal

    def stop(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    bar, update = progress_bar("embedding", " texts")
    done = [0, 0]

    def progress(n: int, total: int) -> None:
        done[:] = [n, total]
        update(n, total)

    try:
        with bar:
            report = lore.admin.reembed(force=force, progress=progress)
    except KeyboardInterrupt:
        signal.signal(signal.SIGTERM, previous)
        notice(f"interrupted after {done[0]} of {done[1]}: what was embedded is kept; "
               "run `lore admin reembed` again to continue")
        sys.exit(130)
    finally:
        signal.signal(signal.SIGTERM, previous)
    model, dims = lore.admin.stored_model()
    if json_:
        emit_json({"embedded": report.total, "lessons": report.lessons, "chunks": report.chunks,
                   "restarted": report.restarted, "resumed": report.resumed,
                   "complete": report.complete, "model": model, "dimensions": dims})
    else:
        verb = "continued: embedded" if report.resumed else "embedded"
        notice(f"{verb} {report.lessons} lessons and {report.chunks} conversation chunks "
               f"with {model or lore.admin.configured_model()}")


@click.command("doctor", cls=LoreCommand)
@json_option
@click.pass_context
def doctor(ctx: click.Context, json_: bool) -> None:
    """Check every moving part: database, model, Claude Code hooks and MCP, worker, model provider.

    Each line is ok, a note (works; a suggestion beside it) or FAIL with the fix; the exit
    status is 1 when anything failed.

    \b
    Example:
      lore doctor
    """
    from lore.doctor import run_checks

    checks = run_checks(lambda: settings(ctx))
    if json_:
        emit_json([c.to_dict() for c in checks])
    else:
        table(None, ["", "check", "detail", "fix"],
              [[c.label, c.name, c.detail, c.fix] for c in checks])
    if not all(c.ok for c in checks):
        ctx.exit(1)
