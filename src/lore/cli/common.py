"""Shared CLI machinery: error translation, opening the database, output helpers."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from lore.api import Lore
    from lore.config import Settings


class LoreGroup(click.Group):
    """Translates Lore's typed errors once: one line on stderr, exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        from lore.errors import LoreError

        try:
            return super().invoke(ctx)
        except LoreError as exc:
            raise click.ClickException(str(exc)) from None
        except BrokenPipeError:  # `lore … | head` closed the pipe: not an error
            sys.stderr.close()
            ctx.exit(0)


def settings(ctx: click.Context) -> Settings:
    from lore.config import load_config

    obj = ctx.find_root().obj or {}
    s = load_config()
    if obj.get("db_path"):
        s.config.database = obj["db_path"]
        s.sources["database"] = "--db"
    return s


@contextmanager
def open_lore(ctx: click.Context) -> Iterator[Lore]:
    from lore.api import Lore

    # ctx.obj may carry an already-loaded embedder (tests share one model across commands).
    lore = Lore.open(settings(ctx), embedder=(ctx.find_root().obj or {}).get("embedder"))
    try:
        yield lore
    finally:
        lore.close()


def with_lore(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Open the database for the command and pass it as the first argument."""

    @functools.wraps(fn)
    @click.pass_context
    def wrapper(ctx: click.Context, *args: Any, **kwargs: Any) -> Any:
        with open_lore(ctx) as lore:
            return fn(lore, *args, **kwargs)

    return wrapper


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


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from rich.table import Table

    t = Table(title=title, show_lines=False, header_style="bold")
    for col in columns:
        t.add_column(col, overflow="fold", max_width=80)
    for row in rows:
        t.add_row(*("" if v is None else str(v) for v in row))
    console().print(t)


class LazyProgress:
    """A rich progress bar on stderr that appears only once there is progress to show,
    so a command refused before any work prints its one error line and nothing else."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> LazyProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

            self.bar = Progress("[progress.description]{task.description}", BarColumn(),
                                MofNCompleteColumn(), TimeRemainingColumn(),
                                console=Console(stderr=True))
            self.task = self.bar.add_task(self.label, total=total)
            self.bar.start()
        self.bar.update(self.task, completed=done, total=total)


def progress_bar(label: str) -> tuple[LazyProgress, LazyProgress]:
    """(context manager, callback(done, total)) for bulk work."""
    bar = LazyProgress(label)
    return bar, bar


def read_content(value: str | None, path: str | None) -> str | None:
    """Content from an argument, a file (--content-file) or stdin ('-')."""
    if value is not None and path is not None:
        raise click.UsageError("give the content as an argument or with --content-file, not both")
    if path is not None:
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(f"cannot read {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise click.ClickException(f"{path} is not UTF-8 text") from None
    if value == "-":
        return sys.stdin.read()
    return value


def split_multi(values: Sequence[str]) -> list[str]:
    """Repeated options, each of which may also hold a comma-separated list."""
    out: list[str] = []
    for v in values:
        out += [p.strip() for p in v.split(",") if p.strip()]
    return out


def resolve_project(value: str | None) -> str | None:
    """'.' means the current project: the git top level of the cwd, else the cwd."""
    if value is None:
        return None
    if value in (".", "here"):
        try:
            top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                                 text=True, timeout=5, check=False)
            if top.returncode == 0 and top.stdout.strip():
                return str(Path(top.stdout.strip()).resolve())
        except (OSError, subprocess.SubprocessError):
            pass
        return str(Path.cwd().resolve())
    if os.path.isdir(value):
        return str(Path(value).resolve())
    return value
