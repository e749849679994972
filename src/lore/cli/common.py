"""Shared CLI machinery: error translation, opening the database, output helpers."""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

_EMOJI_CODE = re.compile(r":\S+:")  # rich replaces :name: by the emoji
_MARKUP_TAG = re.compile(r"\[[a-z#/@][^[]*?]")  # what rich reads as a markup tag

if TYPE_CHECKING:
    from lore.api import Lore
    from lore.config import Settings


def check_params(ctx: click.Context) -> None:
    """Refuse what a shell can pass but Lore cannot store: bytes that are not UTF-8 (Python
    hands them over as lone surrogates) and an empty path (which would mean the cwd)."""
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        for text in value if isinstance(value, tuple) else (value,):  # click gives nargs as tuples
            if isinstance(text, Path):
                text = str(text)
            if not isinstance(text, str):
                continue
            if text == "" and isinstance(param.type, click.Path):
                raise click.BadParameter("an empty path; give a file or folder", ctx, param)
            if not is_utf8(text):
                raise click.BadParameter(f"{shown(text)} is not valid UTF-8 text; give UTF-8 "
                                         "(check the terminal's or the file's encoding)",
                                         ctx, param)


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(text: str, limit: int = 60) -> str:
    """The text as typed, undecodable bytes as \\xNN, cut to a readable length."""
    raw = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "'" + (raw if len(raw) <= limit else raw[:limit] + "…") + "'"


# Spellings of earlier versions that users may have scripted: each is refused in one line that
# names the new one. Keys are command paths below `lore`.
MOVED = {
    "recall search": "lore search", "admin doctor": "lore doctor",
    "admin stats": "lore stats --counts",
    **{f"recall {what}": f"lore recall values {what}"
       for what in ("tags", "kinds", "sources", "confidence-levels")},
    "recall path": "lore recall related FROM --to TO",
    "config show": "lore config", "config path": "lore config --path",
    "context show": "lore context",
    "skills propose": "lore skills", "skills write": "lore skills NUMBER|NAME",
    "learn unlink": "lore learn link FROM TO --remove",
    "learn scope": "lore learn update ID --project PATH (or --global)",
    "admin visibility": "lore learn update ID --set visibility=personal|project|team",
    "analyze run": "lore analyze [PATH]", "analyze session": "lore analyze --session SESSION",
    "analyze status": "lore analyze --status",
    "import": "lore ingest --claude-memory",
    "guard approve": "lore review approve CHECK_ID", "guard reject": "lore review reject CHECK_ID",
    "guard remove": "lore review forget CHECK_ID", "guard allow": "lore guard mode CHECK_ID allow",
    "recall turns": "lore recall show CHUNK",
    "review export": "lore review sync [FOLDER] --only export",
    "review import": "lore review sync [FOLDER] --only import",
    "sync status": "lore sync --status",
}
# Options of earlier versions, by command path: the new spelling.
_FIELDS = {"--score": "score", "--source": "source", "--source-notes": "source_notes",
           "--summary": "summary", "--problem": "problem_solved", "--when": "when_to_apply",
           "--when-not": "when_not_to_apply", "--pref-context": "preference.context",
           "--rejected": "preference.rejected", "--preferred": "preference.preferred",
           "--reasoning": "preference.reasoning", "--anti-context": "anti_contexts",
           "--file-type": "file_types", "--pro": "pro", "--con": "con",
           "--evidence": "evidence", "--session-id": "session_id"}
MOVED_OPTIONS: dict[str, dict[str, str]] = {
    "learn add": {opt: f"--set {key}=…" for opt, key in _FIELDS.items()},
    "learn update": {opt: f"--set {key}=…" for opt, key in {
        **_FIELDS, "--kind": "kind", "--confidence": "confidence", "--context": "contexts",
        "--tag": "tags", "-t": "tags"}.items()},
    "search": {opt: f"--filter {key}=…" for opt, key in (
        ("--source", "source"), ("--file-type", "file-type"),
        ("--min-confidence", "min-confidence"))},
}


def moved(ctx: click.Context, word: str) -> None:
    """Refuse an earlier version's spelling (a subcommand ``word`` of this command) in one
    line naming the new one."""
    path = " ".join([*ctx.command_path.split()[1:], word])
    if path in MOVED:
        raise click.UsageError(f"`lore {path}` is now `{MOVED[path]}`", ctx)


class LoreCommand(click.Command):
    """A command whose arguments are checked (UTF-8, non-empty paths) before it runs, and
    that names the new spelling of an earlier version's subcommand or option."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-"):
            moved(ctx, args[0])
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            path = " ".join(ctx.command_path.split()[1:])
            new = MOVED_OPTIONS.get(path, {}).get(exc.option_name)
            if new is None:
                raise
            raise click.UsageError(f"`{exc.option_name}` of `lore {path}` is now `{new}`",
                                   ctx) from None

    def invoke(self, ctx: click.Context) -> Any:
        check_params(ctx)
        return super().invoke(ctx)


class LoreGroup(click.Group):
    """Translates what a user can cause, once: Lore's typed errors and the OS and SQLite
    errors of a home that is a file, read-only, unreadable or full become one line on
    stderr and exit status 1; undecodable input is a usage error (exit status 2).
    Anything else is a bug and keeps its traceback."""

    command_class = LoreCommand

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        if args and args[0] not in self.commands:
            moved(ctx, args[0])
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from lore.errors import LoreError

        try:
            check_params(ctx)
            return super().invoke(ctx)
        except LoreError as exc:
            raise click.ClickException(str(exc)) from None
        except BrokenPipeError:  # `lore … | head` closed the pipe: not an error
            sys.stderr.close()
            ctx.exit(0)
        except OSError as exc:
            from lore.errors import os_error_message

            raise click.ClickException("; ".join(os_error_message(exc))) from None
        except UnicodeDecodeError as exc:  # a file given to the command
            raise click.ClickException(f"a file is not valid UTF-8 text (byte 0x"
                                       f"{exc.object[exc.start]:02x} at offset {exc.start}); "
                                       "save it as UTF-8") from None
        except UnicodeEncodeError as exc:
            if "surrogates not allowed" not in str(exc):
                raise
            raise click.UsageError("an argument or standard input is not valid UTF-8 text; "
                                   "give UTF-8", ctx) from None
        except Exception as exc:
            translated = _storage_error(ctx, exc)
            if translated is None:
                raise
            raise click.ClickException(str(translated)) from None


def _storage_error(ctx: click.Context, exc: Exception) -> Exception | None:
    if type(exc).__module__.split(".")[0] not in ("sqlean", "sqlite3", "psycopg"):
        return None
    from lore.api import storage_error

    path = (ctx.find_root().obj or {}).get("resolved_db") or "the database"
    return storage_error(exc, path)


def settings(ctx: click.Context) -> Settings:
    from lore.config import check_database_path, load_config

    obj = ctx.find_root().obj
    if obj is None:
        obj = ctx.find_root().obj = {}
    s = load_config()
    if obj.get("db_path"):
        s.use_database(obj["db_path"], "--db")
        check_database_path(s)
    obj["resolved_db"] = s.db_location
    s.tuning.update(obj.get("tuning") or {})  # a measurement's (`lore eval --tune`)
    return s


@contextmanager
def open_lore(ctx: click.Context, *, undo_new: bool = False) -> Iterator[Lore]:
    """The database for one command. ``undo_new``: if the command refuses its input (a Lore
    error) in a home that had no database, what opening made is removed again (the database
    file, the device file, the folders), so a refused command leaves nothing behind."""
    from lore.api import Lore
    from lore.errors import LoreError

    s = settings(ctx)
    made = _would_make(s) if undo_new else []
    # ctx.obj may carry an already-loaded embedder (tests share one model across commands).
    lore = Lore.open(s, embedder=(ctx.find_root().obj or {}).get("embedder"))
    closed = False
    try:
        yield lore
    except LoreError:
        if made:
            lore.close()
            closed = True
            _remove(made)
        raise
    finally:
        if not closed:
            lore.close()


def _would_make(s: Settings) -> list[Path]:
    """What opening a home without a database creates: the file with its -wal and -shm, the
    device file, and the folders that do not exist yet (deepest first)."""
    from lore.home import DEVICE_FILE, is_url

    if is_url(s.db_location) or str(s.db_location) == ":memory:":
        return []
    db = Path(s.db_location)
    if db.exists():
        return []
    out = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
    if not (s.home / DEVICE_FILE).exists():
        out.append(s.home / DEVICE_FILE)
    folders = {p for start in (db.parent, s.home) for p in (start, *start.parents) if not p.exists()}
    return out + sorted(folders, key=lambda p: len(p.parts), reverse=True)


def _remove(paths: Sequence[Path]) -> None:
    for p in paths:
        try:
            if p.is_dir():
                p.rmdir()  # only when empty: something else may have put a file there
            else:
                p.unlink(missing_ok=True)
        except OSError:
            pass


def with_lore(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Open the database for the command and pass it as the first argument."""

    @functools.wraps(fn)
    @click.pass_context
    def wrapper(ctx: click.Context, *args: Any, **kwargs: Any) -> Any:
        with open_lore(ctx) as lore:
            return fn(lore, *args, **kwargs)

    return wrapper


def yes_option(action: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--yes/-y for a command that deletes or overwrites. Without a terminal there is no
    one to ask, so the command refuses (before it opens anything) unless --yes is given."""

    def refuse_unattended(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        if not value and not sys.stdin.isatty() and not ctx.resilient_parsing:
            raise click.UsageError(f"refusing to {action} without confirmation: standard input "
                                   "is not a terminal, so Lore cannot ask; add --yes", ctx)
        return value

    return click.option("--yes", "-y", is_flag=True, callback=refuse_unattended,
                        help=f"Do not ask before you {action}; required when standard input "
                             "is not a terminal (scripts, pipes).")


def confirm(yes: bool, question: str) -> None:
    """Ask on the terminal unless --yes was given; 'no' aborts with exit status 1."""
    if not yes:
        click.confirm(question, abort=True, err=True)


def stdin_text(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Callback for an argument where '-' means standard input: read it now, before the
    database is opened, and refuse bytes that are not UTF-8 as a usage error."""
    if value != "-":
        return value
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.BadParameter(f"standard input is not valid UTF-8 text (byte "
                                 f"0x{data[exc.start]:02x} at offset {exc.start}); give UTF-8",
                                 ctx, param) from None


def check_output(ctx: click.Context, value: str | None, yes: bool) -> None:
    """An output path's folder must exist, and an existing file is only overwritten with
    --yes or after asking on a terminal. Called before the database is opened."""
    if value is None or value == "-":
        return
    path = Path(value)
    if not path.parent.is_dir():
        raise click.UsageError(f"cannot write {value}: the folder {path.parent} does not "
                               "exist; create it first or choose another path", ctx)
    if path.is_dir():
        raise click.UsageError(f"cannot write {value}: it is a folder; give a file name", ctx)
    if path.exists() and not yes and not path.is_char_device():
        if not sys.stdin.isatty():
            raise click.UsageError(f"refusing to overwrite {value}: standard input is not a "
                                   "terminal, so Lore cannot ask; add --yes", ctx)
        click.confirm(f"Overwrite {value}?", abort=True, err=True)


def json_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "json_", is_flag=True,
                        help="Print JSON (shape documented in docs/json.md).")(fn)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def notice(message: str) -> None:
    """Notices go to stderr so stdout carries data only."""
    click.echo(message, err=True)


def console() -> Any:
    from rich.console import Console

    # Piped output is not squeezed into 80 columns: tables stay one row per line.
    width = None if sys.stdout.isatty() else 200
    return Console(soft_wrap=False, highlight=False, width=width)


TABLE_WIDTH = 200  # a piped table's width (console())
CELL_MAX = 80  # a column's widest text; longer text folds


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    if not sys.stdout.isatty():
        plain = plain_table(title, list(columns), cells)
        if plain is not None:
            click.echo(plain)
            return
    from rich.table import Table

    t = Table(title=title, show_lines=False, header_style="bold", show_header=any(columns))
    for col in columns:
        t.add_column(col, overflow="fold", max_width=CELL_MAX)
    for row in cells:
        t.add_row(*row)
    console().print(t)


def _plain(text: str) -> bool:
    """Text rich prints as it is: printable ASCII without markup tags (``[bold]``; a ``[``
    that opens none, as in ``[]`` or ``['a']``, is printed, unless a backslash escapes it) or
    emoji codes."""
    return text.isascii() and text.isprintable() and not (
        "[" in text and ("\\" in text or _MARKUP_TAG.search(text))) and not (
        text.count(":") > 1 and _EMOJI_CODE.search(text))


def plain_table(title: str | None, columns: list[str], rows: list[list[str]]) -> str | None:
    """The table rich prints to a pipe, drawn without rich (a hundred rows cost rich a tenth of
    a second): for plain text in columns that need no folding; None for anything else."""
    if not columns or not rows:
        return None
    texts = [*columns, *(c for row in rows for c in row)]
    if title is not None:
        texts.append(title)
        if title != title.strip():  # rich centres a title's text, not its spaces
            return None
    if any(not _plain(t) for t in texts) or any(len(row) != len(columns) for row in rows):
        return None
    widths = [max(len(col), *(len(row[i]) for row in rows)) for i, col in enumerate(columns)]
    total = sum(widths) + 3 * len(widths) + 1
    if max(widths) > CELL_MAX or total > TABLE_WIDTH or (title and len(title) > total):
        return None

    def line(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def row(values: list[str], bar: str) -> str:
        return bar + bar.join(f" {v.ljust(w)} " for v, w in zip(values, widths, strict=True)) + bar

    out = []
    if title:
        left = (total - len(title)) // 2
        out.append(" " * left + title + " " * (total - len(title) - left))
    if any(columns):
        out += [line("┏", "━", "┳", "┓"), row(columns, "┃"), line("┡", "━", "╇", "┩")]
    else:  # no header
        out.append(line("┌", "─", "┬", "┐"))
    out.extend(row(r, "│") for r in rows)
    out.append(line("└", "─", "┴", "┘"))
    return "\n".join(out)


class LazyProgress:
    """A rich progress bar on stderr (done/total, items a second, time left) that appears only
    once there is progress to show, so a command refused before any work prints its one error
    line and nothing else, and only on a terminal: a pipe, a log or a script stays quiet."""

    def __init__(self, label: str, unit: str = "") -> None:
        self.label = label
        self.unit = unit
        self.bar: Any = None
        self.task: Any = None
        self.shown = _on_terminal(sys.stderr)

    def __enter__(self) -> LazyProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, done: int, total: int) -> None:
        if not self.shown:
            return
        if self.bar is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress("[progress.description]{task.description}", BarColumn(),
                                MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                                TimeRemainingColumn(),
                                console=Console(stderr=True))
            self.task = self.bar.add_task(self.label, total=total, rate="")
            self.bar.start()
        speed = self.bar.tasks[0].speed if self.bar.tasks else None
        self.bar.update(self.task, completed=done, total=total,
                        rate=f"{speed:,.0f}{self.unit}/s" if speed else "")


def _on_terminal(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):  # a replaced or closed stream
        return False


def progress_bar(label: str, unit: str = "") -> tuple[LazyProgress, LazyProgress]:
    """(context manager, callback(done, total)) for bulk work; ``unit`` names the rate's."""
    bar = LazyProgress(label, unit)
    return bar, bar


def read_content(value: str | None, path: str | None) -> str | None:
    """Content from an argument ('-' was read from stdin by `stdin_text`) or a file."""
    if value is not None and path is not None:
        raise click.UsageError("give the content as an argument or with --content-file, not both")
    if path is not None:
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(f"cannot read {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise click.ClickException(f"{path} is not UTF-8 text") from None
    return value


def split_multi(values: Sequence[str]) -> list[str]:
    """Repeated options, each of which may also hold a comma-separated list."""
    out: list[str] = []
    for v in values:
        out += [p.strip() for p in v.split(",") if p.strip()]
    return out


def scope_label(project: str | None, many: bool) -> str:
    """A list's scope column: "global", else "project", or the project's folder (``~`` for the
    home folder) when the list holds rules of more than one project."""
    if project is None:
        return "global"
    if not many:
        return "project"
    home = str(Path.home())
    return "~" + project[len(home):] if project.startswith(home + os.sep) else project


def here() -> str:
    """Where the caller is, for the request policy (lore.policy): the working folder."""
    return str(Path.cwd())


def resolve_project(value: str | None) -> str | None:
    """'.' means the current project; a folder means its project: the git top level of the
    folder, else the folder (``normalize.project_root``, as every face resolves it). Any other
    value (a project recorded on another machine) is kept as given."""
    from lore.normalize import project_root

    if value is None:
        return None
    if value in (".", "here"):
        return project_root(str(Path.cwd()))
    if os.path.isdir(os.path.expanduser(value)):
        return project_root(value)
    return value
