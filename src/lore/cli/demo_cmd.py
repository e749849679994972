"""`lore demo`: seed a throwaway home with demo lessons, show what recall finds and what Lore learns."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from lore.cli.common import LoreCommand, console
from lore.normalize import clip_words

if TYPE_CHECKING:
    from lore.api import Lore


@click.command("demo", cls=LoreCommand)
@click.option("--home", type=click.Path(file_okay=False),
              help="Folder for the demo database (default: a new temporary folder).")
def demo(home: str | None) -> None:
    """Seed a temporary home (never yours) with demo lessons and run searches on it.

    Shows hybrid ranking finding what keyword search misses, a filter by context,
    a walk over related lessons, a path between two lessons, and a few user replies
    turned into scored rules and the context the next session would start with.

    \b
    Example:
      lore demo
    """
    from rich.markup import escape

    from lore.api import Lore
    from lore.config import default_settings
    from lore.demo.data import QUERIES
    from lore.demo.runner import seed
    from lore.errors import LoreError
    from lore.models import Filters

    folder = Path(home) if home else Path(tempfile.mkdtemp(prefix="lore-demo-"))
    if (folder / "lore.db").exists():
        raise click.ClickException(f"{folder} already holds a database; give an empty folder")
    c = console()
    s = default_settings(folder)  # defaults only: the user's config and database stay untouched
    try:
        with Lore.open(s) as lore:
            started = time.perf_counter()
            ids = seed(lore)
            took = time.perf_counter() - started
            c.rule("[bold]Lore demo[/bold]")
            c.print(f"Seeded {len(ids)} lessons and {lore.lessons.edge_count()} links "
                    f"into {folder} in {took:.1f} s (model load included).\n")

            for q in QUERIES:
                filters = Filters(contexts=tuple(q.get("filters", {}).get("contexts", ())))
                hybrid = lore.search.query(q["query"], filters, 3, track=False)
                keyword = lore.search.query(q["query"], filters, 3, mode="keyword", track=False)
                c.print(f"[bold cyan]search[/bold cyan] {escape(q['query'])!s}"
                        + (f"  [dim]{q['filters']}[/dim]" if q.get("filters") else ""))
                c.print(f"  [dim]{escape(q['note'])}[/dim]")
                expected = ids.get(q.get("expect_key", ""))
                for label, hits in (("hybrid ", hybrid), ("keyword", keyword)):
                    line = "; ".join(
                        ("[green]" if h.id == expected else "") + escape(h.title)
                        + ("[/green]" if h.id == expected else "") for h in hits
                    ) or "[red](nothing)[/red]"
                    c.print(f"  {label}: {line}")
                c.print()

            hub = _most_linked(lore, ids)
            c.rule("related lessons, 2 hops")
            c.print(f"from [bold]{escape(lore.lessons.get(hub).title)}[/bold]")
            titles = {i: lore.lessons.get(i).title for i in ids.values()}
            for r in lore.search.related(hub, depth=2):
                arrow = f"-[{r.relation}]->" if r.direction == "out" else f"<-[{r.relation}]-"
                via = "" if r.via == hub else f"   (via {titles[r.via]})"
                c.print(escape(f"  {r.depth} hop{'s' if r.depth > 1 else ''} {arrow} {r.title}")
                        + f"[dim]{escape(via)}[/dim]")

            far = _farthest(lore, hub)
            if far:
                c.rule("shortest path")
                for i, step in enumerate(lore.search.path(hub, far)):
                    if i:
                        arrow = "↓" if step.direction == "out" else "↑"
                        c.print(escape(f"    {arrow} [{step.relation}]"))
                    c.print(f"  {escape(step.title)}")

            c.rule("filter: kind=preference, min confidence high")
            for h in lore.search.query("how does this team want things done",
                                 Filters(kinds=("preference",), min_confidence="high"), 5,
                                 track=False):
                c.print(f"  {escape(h.title)} [dim]({h.confidence})[/dim]")
            c.print()
            _learning(c, lore)
            exe = "lore" if shutil.which("lore") else sys.argv[0]
            c.print(f"Try it: [bold]LORE_HOME={folder} {exe} search \"...\" --explain[/bold]")
    except LoreError as exc:
        raise click.ClickException(str(exc)) from None


DEMO_PROJECT = "/demo/shop"
EXCHANGES = [  # (the agent's turn, what the user typed back)
    ("I'll add Redis as the session store and wire it into the login flow.",
     "No, don't use Redis, use local file sessions instead, we deploy on one box"),
    ("Done: the login flow now works. Would you like me to add a logout button too?", "no"),
    ("I'll add Redis to cache the session lookups.", "use file sessions instead of Redis!"),
    ("Tests pass. Shall I push the branch?", "from now on, always run ruff before pushing"),
    ("I'll start a Redis container for the sessions in docker-compose.",
     "No, I told you: no Redis, use local file sessions"),
]


def _learning(c: Any, lore: Lore) -> None:
    """What the worker does with the messages the hooks queue, shown on a few exchanges."""
    from rich.markup import escape


    c.rule("learning from corrections")
    learning = lore.learning
    for i, (agent, user) in enumerate(EXCHANGES):
        out = learning.record(user, agent, project=DEMO_PROJECT, session_id=f"demo-{i}",
                              asserted=False, origin="hook")  # as the hooks capture it
        what = out.action
        if out.lesson is not None:
            what += f" -> {out.lesson.title} [{out.lesson.status}, score {out.lesson.score:.2f}]"
        c.print(f"  [dim]agent:[/dim] {escape(clip_words(agent, 72))}")
        c.print(f"  [bold]user:[/bold]  {escape(user)}")
        c.print(f"         [cyan]{escape(what)}[/cyan]")
    c.print("\nThe next session in that project starts with:")
    c.print(lore.apply.session_context(DEMO_PROJECT), markup=False, highlight=False)
    c.print()


def _most_linked(lore: Lore, ids: dict[str, str]) -> str:
    return max(ids.values(), key=lambda i: (len(lore.lessons.get(i).edges), i))


def _farthest(lore: Lore, start: str) -> str | None:
    found = lore.search.related(start, depth=6)
    return max(found, key=lambda r: (r.depth, r.id)).id if found else None
