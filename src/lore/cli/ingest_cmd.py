"""`lore ingest`: import agent transcripts as searchable conversation memory."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from lore.cli.common import LoreCommand, emit_json, json_option, notice, open_lore, progress_bar

if TYPE_CHECKING:
    from lore.api import Lore

FOREGROUND_CHUNKS = 1000  # about two minutes of the model on two cores: worth waiting for
CHUNKS_PER_SECOND = 9.0  # the int8 model on 2 cores (docs/benchmarks.md), for the estimate


@click.command("ingest", cls=LoreCommand)
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--watch", is_flag=True, help="Keep running and import files as they change.")
@click.option("--no-embed", is_flag=True, help="Store and index keywords only; embed later.")
@click.option("--wait", is_flag=True,
              help="Embed here before returning, however long it takes (by default a large "
                   "backlog is left to the background worker).")
@click.option("--learn", "learn_", is_flag=True,
              help="Also learn from the messages the user typed: corrections become candidates "
                   "for `lore review` (a message seen before is skipped).")
@click.option("--claude-memory", "claude_memory", is_flag=True,
              help="Import Claude Code's auto memory instead (~/.claude/projects/*/memory/), as "
                   "proposed lessons for review.")
@click.option("--claude-home", type=click.Path(file_okay=False),
              help="With --claude-memory: Claude Code's folder (default: $CLAUDE_CONFIG_DIR, "
                   "else ~/.claude).")
@click.option("--dry-run", is_flag=True, help="With --claude-memory: list what would be added; "
                                              "add nothing.")
@json_option
@click.pass_context
def ingest(ctx: click.Context, paths: tuple[str, ...], watch: bool, no_embed: bool, wait: bool,
           learn_: bool, claude_memory: bool, claude_home: str | None, dry_run: bool,
           json_: bool) -> None:
    """Import Claude Code transcripts (and Codex CLI rollouts) incrementally; with
    --claude-memory, Claude Code's auto memory as lessons waiting for review.

    Each file is read on from where the last import stopped; a rewritten file is read
    again; messages are stored once even when a resumed session copies them.

    Keyword search works as soon as the text is in. Embedding (search by meaning) is
    slower: a backlog of more than a few minutes is left to the background worker, which
    is started for it (`lore worker status` shows what is left); --wait embeds here.
    Ctrl-C stops at any point; the next run goes on where this one stopped.

    \b
    Examples:
      lore ingest                                 # ~/.claude/projects
      lore ingest ~/.codex/sessions --json
      lore ingest --watch
      lore ingest --learn ~/.claude/projects      # history into rules to review
      lore ingest --claude-memory --dry-run

    With --claude-memory each auto-memory entry is added once, as a proposed lesson with its
    file and date as evidence; running it again adds only new entries, and an entry you
    rejected or deleted does not come back. Claude Code's files are only read.
    """
    memory_only = [name for name, given in (("--claude-home", claude_home),
                                            ("--dry-run", dry_run)) if given]
    if claude_memory:
        if paths or watch or no_embed or wait or learn_:
            raise click.UsageError("--claude-memory imports the auto memory alone; leave out "
                                   "PATHS, --watch, --no-embed, --wait and --learn", ctx)
        with open_lore(ctx) as lore:
            _claude_memory(lore, claude_home, dry_run, json_)
        return
    if memory_only:
        raise click.UsageError(f"{memory_only[0]} goes with --claude-memory", ctx)
    with open_lore(ctx) as lore:
        _transcripts(lore, paths, watch, no_embed, wait, learn_, json_)


def _claude_memory(lore: Lore, claude_home: str | None, dry_run: bool, json_: bool) -> None:
    import os

    home = Path(claude_home or os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    if not os.path.isdir(home):
        raise click.ClickException(f"no such folder: {home}; give Claude Code's folder with "
                                   "--claude-home")
    report = lore.lessons.import_claude_memory(home, dry_run=dry_run)
    if json_:
        emit_json({"dry_run": dry_run, **report.to_dict()})
        return
    for entry in report.added:
        click.echo(f"{entry.get('id', '(new)')}  {entry['kind']:<10}  {entry['title']}")
    for s in report.skipped:
        notice(f"skipped {s['file']}: {s['reason']}")
    verb = "would add" if dry_run else "added"
    notice(f"{verb} {len(report.added)} entr{'y' if len(report.added) == 1 else 'ies'} for "
           f"review, {report.known} already imported"
           + ("" if dry_run or not report.added else " (status proposed, tag claude-memory)"))


def _transcripts(lore: Lore, paths: tuple[str, ...], watch: bool, no_embed: bool, wait: bool,
                 learn_: bool, json_: bool) -> None:
    from lore.capture.ingest import default_roots

    # Strings, not Paths, until checked: Path('') would be the cwd.
    roots = [Path(p) for p in paths] or default_roots()
    if not any(r.exists() for r in roots):
        raise click.ClickException(f"no such file or folder: {', '.join(map(str, roots))}")
    try:
        report = _run(lore, roots, no_embed, wait, json_)
    except KeyboardInterrupt:
        notice("stopped: what was imported and embedded so far is kept; run `lore ingest` "
               "again to go on")
        raise SystemExit(130) from None
    learned = _learn(lore, roots) if learn_ else None
    if json_:
        emit_json({**report.to_dict(), **({"learned": learned} if learned else {})})
    else:
        _summary(report)
        if learned:
            _learned(learned)
    if watch:
        _watch(lore, [r for r in roots if r.exists()], no_embed)


def _run(lore: Lore, roots: list[Path], no_embed: bool, wait: bool, quiet: bool) -> Any:
    bar, update = progress_bar("importing (KB)")
    with bar:
        report = lore.conversations.ingest(roots, embed=False, progress=update)
    if no_embed:
        return report
    left = lore.conversations.backlog()
    if left > FOREGROUND_CHUNKS and not wait:
        from lore.worker import start_background

        started = start_background(lore.settings)
        report.background = left
        if not quiet:
            notice(f"{left:,} passages to index for search by meaning (about "
                   f"{_duration(left / CHUNKS_PER_SECOND)}): the background worker "
                   f"{'was started and ' if started else ''}indexes them. Keyword search works "
                   "now; search by meaning covers what is indexed so far; `lore worker status` "
                   "shows what is left")
        return report
    if left and not quiet:
        notice(f"indexing {left:,} passages for search by meaning (about "
               f"{_duration(left / CHUNKS_PER_SECOND)}); "
               "Ctrl-C keeps what is done, `lore ingest` goes on later")
    bar, update = progress_bar("embedding")
    with bar:
        report.embedded = lore.conversations.embed_pending(update)
    return report


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    return f"{seconds / 60:.0f} min"


def _learn(lore: Lore, roots: list[Path]) -> dict[str, Any]:
    bar, update = progress_bar("learning")
    with bar:
        return dict(lore.learning.backfill(roots, update))


def _learned(learned: dict[str, Any]) -> None:
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(learned["statuses"].items())) or "none"
    actions = ", ".join(f"{n} {a}" for a, n in sorted(learned["actions"].items()))
    notice(f"learning: {learned['messages']} typed messages ({actions}); {learned['rules']} rules "
           f"({statuses}); see them with `lore review`")
    if learned.get("judge_error"):
        notice(f"the judge is unavailable ({learned['judge_error']}); the messages it has not read "
               "wait for `lore learn judge`")


def _summary(report: Any) -> None:
    for path, reason in report.skipped:
        notice(f"skipped {path}: {reason}")
    notice(f"{report.files} files read ({report.unchanged} unchanged, {report.rewritten} rewritten), "
           f"{report.messages} new messages in {len(report.sessions)} sessions "
           f"({report.duplicates} already known), {report.edits} file edits; {report.chunks} new "
           f"passages, {report.embedded} indexed for search by meaning"
           + (f"; skipped {report.malformed} damaged lines" if report.malformed else "")
           + (f" and {report.unknown} records of kinds Lore does not read" if report.unknown
              else ""))
    if report.own_calls or report.purged:
        notice(f"left out {report.own_calls} transcripts of Lore's own model calls"
               + (f"; removed {report.purged} such sessions imported before" if report.purged else ""))


def _watch(lore: Lore, roots: list[Path], no_embed: bool) -> None:
    """Import on file changes (inotify/FSEvents/ReadDirectoryChanges: idle costs nothing)."""
    import threading

    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    changed: set[Path] = set()
    wake = threading.Event()

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            path = Path(str(getattr(event, "dest_path", "") or event.src_path))
            if path.suffix == ".jsonl":
                changed.add(path)
                wake.set()

    observer = Observer()
    for root in roots:
        observer.schedule(Handler(), str(root if root.is_dir() else root.parent), recursive=True)
    observer.start()
    notice(f"watching {', '.join(map(str, roots))} (Ctrl-C to stop)")
    try:
        while True:
            wake.wait()
            time.sleep(1.0)  # let a burst of writes settle into one import
            wake.clear()
            batch = sorted(changed)
            changed.clear()
            report = lore.conversations.ingest(batch, embed=not no_embed)
            if report.messages:
                _summary(report)
    except KeyboardInterrupt:
        pass
    finally:
        observer.stop()
        observer.join()
