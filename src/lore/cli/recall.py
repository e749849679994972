"""`lore search` and `lore recall`: search lessons, read them, walk the graph, list the values."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from lore.cli.common import (
    LoreCommand,
    LoreGroup,
    console,
    emit_json,
    here,
    json_option,
    notice,
    open_lore,
    scope_label,
    split_multi,
    table,
    with_lore,
)
from lore.policy import REQUESTS

if TYPE_CHECKING:
    from lore.api import Lore


@click.group(cls=LoreGroup)
def recall() -> None:
    """Read what Lore knows: a lesson, its links, the rules, past conversations, the values.

    \b
    Examples:
      lore recall show 01JD8X3Q5M…
      lore recall related 01JD… --depth 2
      lore recall conversations "have we seen this error before?"
      lore recall values kinds
    """


FILTER_KEYS = {"source": "sources", "file-type": "file_types", "file_type": "file_types",
               "min-confidence": "min_confidence", "min_confidence": "min_confidence"}


def _filters(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Any]:
    """--filter KEY=VALUE: the rarer filters of a search (source, file-type, min-confidence)."""
    out: dict[str, Any] = {}
    for item in values:
        key, sep, value = item.partition("=")
        name = FILTER_KEYS.get(key.strip().lower())
        if not sep or name is None:
            raise click.BadParameter(f"'{item}' is not KEY=VALUE with KEY one of source, "
                                     "file-type, min-confidence", ctx, param)
        if name == "min_confidence":
            out[name] = value.strip()
        else:
            out[name] = (*out.get(name, ()), *split_multi([value]))
    return out


@click.command("search", cls=LoreCommand)
@click.argument("query")
@click.option("--limit", "-n", type=click.IntRange(1, REQUESTS["search"].most),
              help="How many results (default: search.default_limit, 10).")
@click.option("--tag", "-t", multiple=True, help="Only lessons with one of these tags.")
@click.option("--kind", multiple=True, help="Only these kinds.")
@click.option("--context", multiple=True,
              help="The situation you are in: lessons scoped elsewhere, or with it as an "
                   "anti-context, are left out.")
@click.option("--status", multiple=True,
              help="Only these statuses (default: active; 'all' for every status).")
@click.option("--project", help="This project's lessons and the global ones (default: the "
              "current project; 'all' or '*': every project; 'global': the global ones).")
@click.option("--filter", "filters_", multiple=True, metavar="KEY=VALUE", callback=_filters,
              help="A rarer filter: source=S, file-type=T (lessons for it and general ones), "
                   "min-confidence=LEVEL; repeatable.")
@click.option("--mode", type=click.Choice(["hybrid", "keyword", "vector"]), default="hybrid",
              show_default=True, help="Ranking: both signals, or one alone for comparison.")
@click.option("--explain", is_flag=True, help="Show every component of each score.")
@click.option("--no-track", is_flag=True, help="Do not count this search in usage stats.")
@json_option
@with_lore
def search(lore: Lore, query: str, limit: int | None, tag: tuple[str, ...], kind: tuple[str, ...],
           context: tuple[str, ...], status: tuple[str, ...], project: str | None,
           filters_: dict[str, Any], mode: str, explain: bool, no_track: bool,
           json_: bool) -> None:
    """Hybrid search (meaning + keywords) over lessons; lightweight results.

    Which project, which statuses and how many follow the request policy (docs/mcp.md#project-scope).

    \b
    Examples:
      lore search "session storage" --tag auth --filter min-confidence=medium
      lore search "force push" --context "personal feature branch" --explain
      lore search "retries" --project all --status all --json
    """
    from lore import policy
    from lore.models import Filters

    filters = Filters(
        tags=tuple(split_multi(tag)), contexts=context, kinds=tuple(split_multi(kind)),
        statuses=policy.statuses(status, "search"),
        project=policy.scope(project, "search", here=here()).filter, **filters_,
    )
    # A read-only database (its home is not writable) still answers; usage is not counted.
    track = not no_track and not lore.admin.read_only
    results = lore.search.query(query, filters, limit, mode=mode, track=track,  # type: ignore[arg-type]
                          interface="cli")
    if json_:
        emit_json({"query": query, "results": [r.to_dict(explain=explain) for r in results]})
        return
    if not results:
        notice("no lessons found")
        return
    if explain:
        rows = []
        for r in results:
            p = r.parts
            if p is None:  # explained searches carry their parts; nothing to show otherwise
                continue
            rows.append([
                r.id, r.title, f"{r.score:.3f}",
                f"#{p.vector_rank} ({p.similarity:.2f})" if p.vector_rank else "-",
                f"#{p.keyword_rank} ({p.bm25:.2f})" if p.keyword_rank else "-",
                f"{p.relevance:.3f}", f"{p.confidence_bonus:.3f}", f"{p.usage_bonus:.3f}",
                f"{p.recency_bonus:.3f}", f"×{p.context_factor:g}",
            ])
        table(None, ["id", "title", "score", "vector", "keyword", "rrf/max", "conf", "usage",
                     "recency", "ctx"], rows)
        return
    table(None, ["id", "title", "snippet", "score"],
          [[r.id, r.title, r.snippet, f"{r.score:.3f}"] for r in results])


@recall.command("show")
@click.argument("lesson_id", metavar="ID|CHUNK")
@click.option("--before", type=click.IntRange(0, 1000),
              help="A conversation hit: messages to show before it (default 3).")
@click.option("--after", type=click.IntRange(0, 1000),
              help="A conversation hit: messages to show after it (default 3).")
@json_option
@with_lore
def recall_show(lore: Lore, lesson_id: str, before: int | None, after: int | None,
                json_: bool) -> None:
    """Show one lesson in full; or a conversation hit (its CHUNK number, from `lore recall
    conversations`) with the turns around it.

    \b
    Examples:
      lore recall show 01JD8X3Q5M…
      lore recall show 42 --before 5
    """
    if lesson_id.strip().isdigit():
        _turns(lore, int(lesson_id), 3 if before is None else before,
               3 if after is None else after, json_)
        return
    if before is not None or after is not None:
        raise click.UsageError("--before and --after go with a conversation hit (a CHUNK number)")
    lesson = lore.lessons.get(lesson_id)
    if json_:
        emit_json(lesson.to_dict())
        return
    print_lesson(lesson, lore.lessons.titles([e.to_id if e.from_id == lesson.id else e.from_id
                                            for e in lesson.edges]))


def print_lesson(lesson: Any, titles: dict[str, tuple[str, str]]) -> None:
    from rich.markup import escape

    c = console()
    c.print(f"[bold]{escape(lesson.title)}[/bold]  [dim]{lesson.id}[/dim]")
    meta = [f"kind {lesson.kind}", f"status {lesson.status}", f"confidence {lesson.confidence}"]
    if lesson.score is not None:
        meta.append(f"score {lesson.score:.2f}")
    if lesson.source:
        meta.append(f"source {lesson.source}")
    meta.append(f"used {lesson.usage_count}×")
    c.print("[dim]" + " · ".join(meta) + "[/dim]")
    if lesson.project:
        c.print(f"[dim]project {escape(lesson.project)}[/dim]")
    c.print()
    c.print(escape(lesson.content))
    sections = [
        ("Summary", lesson.summary), ("Problem solved", lesson.problem_solved),
        ("When to apply", lesson.when_to_apply), ("When not to apply", lesson.when_not_to_apply),
        ("Source notes", lesson.source_notes),
    ]
    for label, text in sections:
        if text:
            c.print(f"\n[bold]{label}[/bold]\n{escape(text)}")
    if lesson.preference:
        p = lesson.preference
        c.print("\n[bold]Preference[/bold]")
        for label, text in (("context", p.context), ("rejected", p.rejected),
                            ("preferred", p.preferred), ("reasoning", p.reasoning)):
            if text:
                c.print(f"  {label}: {escape(text)}")
    lists = [("Tags", lesson.tags), ("Contexts", lesson.contexts),
             ("Anti-contexts", lesson.anti_contexts), ("File types", lesson.file_types)]
    for label, values in lists:
        if values:
            c.print(f"\n[bold]{label}[/bold]: {escape(', '.join(values))}")
    for t in lesson.trade_offs:
        c.print(f"  {'+' if t.type == 'pro' else '-'} {escape(t.description)}")
    for e in lesson.examples:
        c.print(f"\n[bold]Example[/bold] {escape(e.context)} ({e.language or 'text'})")
        c.print(escape(e.code))
    for ev in lesson.evidence:
        where = f" [dim](session {ev.session_id})[/dim]" if ev.session_id else ""
        c.print(f"\n> {escape(ev.quote)}{where}")
    if lesson.edges:
        c.print("\n[bold]Links[/bold]")
        for e in lesson.edges:
            if e.from_id == lesson.id:
                other = titles.get(e.to_id, ("?", ""))[0]
                c.print(escape(f"  -[{e.relation}]-> {other} ") + f"[dim]{e.to_id}[/dim]")
            else:
                other = titles.get(e.from_id, ("?", ""))[0]
                c.print(escape(f"  <-[{e.relation}]- {other} ") + f"[dim]{e.from_id}[/dim]")


@recall.command("related")
@click.argument("lesson_id")
@click.option("--to", "to_id", metavar="ID",
              help="The shortest chain of links from LESSON_ID to this lesson instead.")
@click.option("--depth", "-d", default=1, show_default=True, type=int,
              help="Hops to follow (1-10); with --to, the longest chain tried (default 6).")
@click.option("--relation", "-r", multiple=True, help="Only edges with these relations.")
@click.option("--direction", type=click.Choice(["out", "in", "both"]), default="both",
              show_default=True, help="Follow edges outward, inward, or both ways (with --to: "
                                      "out follows them only in their direction).")
@click.option("--export", "export_", type=click.Choice(["json", "mermaid"]),
              help="Print the subgraph (lessons and every edge among them) instead.")
@json_option
@click.pass_context
def recall_related(ctx: click.Context, lesson_id: str, to_id: str | None, depth: int,
                   relation: tuple[str, ...], direction: str, export_: str | None,
                   json_: bool) -> None:
    """Lessons linked to one lesson, up to N hops away; or, with --to, the shortest chain of
    links between two lessons.

    \b
    Examples:
      lore recall related 01JD… --depth 2 --relation supersedes
      lore recall related 01JD… --depth 2 --export mermaid > graph.mmd
      lore recall related 01JD…A --to 01JD…B
    """
    relations = split_multi(relation)
    if to_id is not None:
        if export_:
            raise click.UsageError("--export draws the neighbourhood; leave out --to", ctx)
        depth = depth if ctx.get_parameter_source("depth") is not ParameterSource.DEFAULT else 6
        with open_lore(ctx) as lore:
            _path(lore, lesson_id, to_id, depth, relations, direction == "out", json_)
        return
    with open_lore(ctx) as lore:
        if export_:
            sub = lore.search.subgraph(lesson_id, depth, relations, direction)
            if export_ == "mermaid":
                click.echo(sub.to_mermaid(), nl=False)
            else:
                emit_json(sub.to_dict())
            return
        found = lore.search.related(lesson_id, depth, relations, direction)
    if json_:
        emit_json([r.to_dict() for r in found])
        return
    if not found:
        notice("no related lessons")
        return
    table(None, ["depth", "relation", "id", "title", "kind"],
          [[r.depth, ("->" if r.direction == "out" else "<-") + r.relation, r.id, r.title, r.kind]
           for r in found])


def _path(lore: Lore, from_id: str, to_id: str, max_depth: int, relations: list[str],
          directed: bool, json_: bool) -> None:
    steps = lore.search.path(from_id, to_id, max_depth, relations, directed)
    if json_:
        emit_json({"from": from_id, "to": to_id, "steps": [s.to_dict() for s in steps]})
        return
    if not steps:
        raise click.ClickException(f"no path from {from_id} to {to_id} within {max_depth} hops")
    for i, s in enumerate(steps):
        if i:
            arrow = f"-[{s.relation}]->" if s.direction == "out" else f"<-[{s.relation}]-"
            click.echo(f"  {arrow}")
        click.echo(f"{s.title}  ({s.id})")


@recall.command("preferences")
@click.option("--project", help="Project (default: the current one; 'all' for every project).")
@click.option("--file-type", help="Only rules for this file type and general ones, e.g. py.")
@click.option("--status", multiple=True,
              help="Statuses to list (default: active and proposed; candidate for the evidence).")
@click.option("--limit", "-n", type=click.IntRange(1, REQUESTS["preferences"].most),
              default=REQUESTS["preferences"].limit, show_default=True)
@json_option
@with_lore
def recall_preferences(lore: Lore, project: str | None, file_type: str | None,
                       status: tuple[str, ...], limit: int, json_: bool) -> None:
    """Preferences and rules learned or written for this project, and the global ones.

    Active rules first, then the proposed ones waiting for review, each with its score,
    how often it was seen and any rule it conflicts with.

    \b
    Examples:
      lore recall preferences
      lore recall preferences --file-type py --json
      lore recall preferences --project all --status candidate
    """
    from lore import policy

    where = policy.scope(project, "preferences", here=here())
    scope = where.project
    lessons = lore.search.preferences(scope, all_projects=where.every, file_type=file_type,
                               statuses=policy.statuses(status, "preferences"), limit=limit)
    if json_:
        emit_json({"project": scope, "preferences": [p.to_dict() for p in lessons]})
        return
    if not lessons:
        notice("no preferences yet" + (f" for {scope}" if scope else ""))
        return
    many = len({p.project for p in lessons if p.project is not None}) > 1
    rows = []
    for p in lessons:
        meta = p.metadata.get("learning") or {}
        conflicts = [e.to_id if e.from_id == p.id else e.from_id for e in p.edges
                     if e.relation == "contradicts"]
        rows.append([p.id, p.status, f"{p.score:.2f}" if p.score is not None else "-",
                     meta.get("occurrences", "-"), p.title,
                     ", ".join(p.file_types) or "-", scope_label(p.project, many),
                     ", ".join(c[-6:] for c in conflicts) or ""])
    table(None, ["id", "status", "score", "seen", "rule", "files", "scope", "conflicts"], rows)


@recall.command("conversations")
@click.argument("query")
@click.option("--limit", "-n", type=click.IntRange(1, REQUESTS["conversations"].most),
              default=REQUESTS["conversations"].limit, show_default=True)
@click.option("--project", help="Project to search (default: the current one; 'all' for every).")
@click.option("--min-score", type=float, default=0.0, show_default=True,
              help="Leave out results scoring below this.")
@click.option("--no-decay", is_flag=True, help="Rank old and recent conversations alike.")
@click.option("--mode", type=click.Choice(["hybrid", "keyword", "vector"]), default="hybrid",
              show_default=True)
@click.option("--explain", is_flag=True, help="Show the parts of each score.")
@click.option("--rerank/--no-rerank", default=None,
              help="Have the configured language model re-order the best results (one call; "
                   "default: conversations.rerank).")
@json_option
@with_lore
def recall_conversations(lore: Lore, query: str, limit: int, project: str | None,
                         min_score: float, no_decay: bool, mode: str, explain: bool,
                         rerank: bool | None, json_: bool) -> None:
    """Search past sessions: "have we seen this before?" (import them with `lore ingest`).

    
    Examples:
      lore recall conversations "ECONNRESET from the payments API"
      lore recall conversations "why did we drop redis" --project all --json
      lore recall conversations "which ORM did we pick and why" --rerank

    With --rerank (or conversations.rerank: true), the language model of llm.provider reads
    the best 40 results and puts those that answer first: slower (one model call) and
    better at questions phrased far from the words used. If the model fails, the search's
    own order is shown, with a notice.
    """
    from lore import policy

    scope = policy.scope(project, "conversations", here=here()).project

    def search(where: str | None) -> Any:
        return lore.conversations.find(query, project=where, limit=limit, min_score=min_score,
                                       decay=False if no_decay else None, mode=mode,
                                       rerank=rerank)

    found = search(scope)
    hits = found.hits
    elsewhere = bool(scope and not hits and not lore.conversations.has_project(scope))
    if elsewhere:  # nothing was ever imported here: what every project holds is the next best
        found = search(None)
        hits = found.hits
    if json_:
        emit_json({"query": query, "project": None if elsewhere else scope,
                   **({"no_conversations_in": scope} if elsewhere else {}),
                   **found.outcome(),
                   "results": [h.to_dict(explain=explain) for h in hits]})
        return
    if found.rerank_error:
        notice(f"not re-ranked, the search's order is shown: {found.rerank_error}")
    elif found.reranked_by:
        notice(f"re-ranked by {found.reranked_by}")
    if elsewhere:
        notice(f"no past conversations of {scope} were imported (lore ingest imports them); "
               "results from every project:")
    if not hits:
        notice("no conversations found" + (f" in {scope} (try --project all)" if scope and
                                           not elsewhere else ""))
        return
    table(None, ["chunk", "date", "session", "snippet", "score"],
          [[h.chunk_id, (h.date or "")[:10], h.session_id[:8], h.snippet, f"{h.score:.3f}"]
           for h in hits])
    if explain:
        for h in hits:
            notice(f"chunk {h.chunk_id}: " + ", ".join(
                f"{k} {v}" for k, v in h.parts.items() if v is not None))
    notice("read a hit in its conversation: lore recall show CHUNK")


def _turns(lore: Lore, chunk_id: int, before: int, after: int, json_: bool) -> None:
    ctx = lore.conversations.turns(chunk_id, before, after)
    if json_:
        emit_json(ctx)
        return
    from rich.markup import escape

    c = console()
    session = ctx["session"] or {}
    c.print(f"[bold]session {escape(ctx['session_id'])}[/bold] [dim]{escape(str(ctx['project']))} "
            f"{escape(str(session.get('started_at') or ''))}[/dim]")
    for m in ctx["messages"]:
        style = "bold" if m["in_chunk"] else "dim"
        text = m["text"] if len(m["text"]) < 2000 else m["text"][:2000] + " …"
        c.print(f"[{style}]{escape(m['speaker'] or m['role'])}:[/{style}] {escape(text)}")


VALUES = {"kinds": "kind", "sources": "source", "confidence-levels": "confidence",
          "statuses": "status", "relations": "relation"}


@recall.command("values")
@click.argument("what", type=click.Choice(["tags", *VALUES]))
@click.option("--counts", is_flag=True, help="With tags: how many lessons carry each.")
@json_option
@with_lore
def recall_values(lore: Lore, what: str, counts: bool, json_: bool) -> None:
    """The values a lesson's fields take: the tags in use, or the valid kinds, sources,
    confidence levels (lowest first), statuses or relations.

    \b
    Examples:
      lore recall values tags --counts
      lore recall values confidence-levels --json
    """
    if what == "tags":
        tags = lore.lessons.tags()
        if json_:
            emit_json([{"tag": t, "count": n} for t, n in tags] if counts else [t for t, _ in tags])
        elif counts:
            table(None, ["tag", "lessons"], tags)
        else:
            for t, _ in tags:
                click.echo(t)
        return
    items = lore.lessons.reference(VALUES[what])
    if json_:
        emit_json([i.to_dict() for i in items])
        return
    extra = []
    if items and items[0].ordinal is not None:
        extra = ["ordinal"]
    if items and items[0].typical_confidence is not None:
        extra = ["typical confidence"]
    rows = []
    for i in items:
        row: list[Any] = [i.name]
        if extra == ["ordinal"]:
            row.append(i.ordinal)
        elif extra:
            row.append(i.typical_confidence)
        rows.append([*row, i.description])
    table(None, ["name", *extra, "description"], rows)
