"""`lore recall`: search lessons, read them, walk the graph, list reference values."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from lore.cli.common import (
    LoreGroup,
    console,
    emit_json,
    here,
    json_option,
    notice,
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
    """Search and read what Lore knows.

    \b
    Example:
      lore recall search "why do websocket connections drop?" --explain
    """


@recall.command("search")
@click.argument("query")
@click.option("--limit", "-n", type=click.IntRange(1, REQUESTS["search"].most),
              help="How many results (default: search.default_limit, 10).")
@click.option("--tag", "-t", multiple=True, help="Only lessons with one of these tags.")
@click.option("--context", multiple=True,
              help="The situation you are in: lessons scoped elsewhere, or with it as an "
                   "anti-context, are left out.")
@click.option("--min-confidence", help="Only lessons at least this confident.")
@click.option("--source", multiple=True, help="Only lessons from these sources.")
@click.option("--kind", multiple=True, help="Only these kinds.")
@click.option("--status", multiple=True,
              help="Only these statuses (default: active; 'all' for every status).")
@click.option("--project", help="This project's lessons and the global ones ('.' = current; "
              "'all' or none: every project).")
@click.option("--file-type", multiple=True, help="Lessons for this file type and general ones.")
@click.option("--mode", type=click.Choice(["hybrid", "keyword", "vector"]), default="hybrid",
              show_default=True, help="Ranking: both signals, or one alone for comparison.")
@click.option("--explain", is_flag=True, help="Show every component of each score.")
@click.option("--no-track", is_flag=True, help="Do not count this search in usage stats.")
@json_option
@with_lore
def recall_search(lore: Lore, query: str, limit: int | None, tag: tuple[str, ...],
                  context: tuple[str, ...], min_confidence: str | None, source: tuple[str, ...],
                  kind: tuple[str, ...], status: tuple[str, ...], project: str | None,
                  file_type: tuple[str, ...], mode: str, explain: bool, no_track: bool,
                  json_: bool) -> None:
    """Hybrid search (meaning + keywords) over lessons; lightweight results.

    \b
    Examples:
      lore recall search "session storage" --tag auth --min-confidence medium
      lore recall search "force push" --context "personal feature branch" --explain
    """
    from lore import policy
    from lore.models import Filters

    filters = Filters(
        tags=tuple(split_multi(tag)), contexts=context, min_confidence=min_confidence,
        sources=tuple(split_multi(source)), kinds=tuple(split_multi(kind)),
        statuses=policy.statuses(status, "search"),
        project=policy.scope(project, "search", here=here()).filter,
        file_types=tuple(split_multi(file_type)),
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
@click.argument("lesson_id")
@json_option
@with_lore
def recall_show(lore: Lore, lesson_id: str, json_: bool) -> None:
    """Show one lesson in full.

    \b
    Example:
      lore recall show 01JD8X3Q5M…
    """
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
@click.option("--depth", "-d", default=1, show_default=True, type=int, help="Hops to follow (1-10).")
@click.option("--relation", "-r", multiple=True, help="Only edges with these relations.")
@click.option("--direction", type=click.Choice(["out", "in", "both"]), default="both",
              show_default=True, help="Follow edges outward, inward, or both ways.")
@click.option("--export", "export_", type=click.Choice(["json", "mermaid"]),
              help="Print the subgraph (lessons and every edge among them) instead.")
@json_option
@with_lore
def recall_related(lore: Lore, lesson_id: str, depth: int, relation: tuple[str, ...],
                   direction: str, export_: str | None, json_: bool) -> None:
    """Lessons linked to one lesson, up to N hops away.

    \b
    Examples:
      lore recall related 01JD… --depth 2 --relation supersedes
      lore recall related 01JD… --depth 2 --export mermaid > graph.mmd
    """
    relations = split_multi(relation)
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


@recall.command("path")
@click.argument("from_id")
@click.argument("to_id")
@click.option("--max-depth", default=6, show_default=True, type=int, help="Longest path to try.")
@click.option("--relation", "-r", multiple=True, help="Only edges with these relations.")
@click.option("--directed", is_flag=True, help="Follow edges only in their direction.")
@json_option
@with_lore
def recall_path(lore: Lore, from_id: str, to_id: str, max_depth: int, relation: tuple[str, ...],
                directed: bool, json_: bool) -> None:
    """The shortest chain of links between two lessons.

    \b
    Example:
      lore recall path 01JD…A 01JD…B
    """
    steps = lore.search.path(from_id, to_id, max_depth, split_multi(relation), directed)
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


@recall.command("tags")
@click.option("--counts", is_flag=True, help="Show how many lessons carry each tag.")
@json_option
@with_lore
def recall_tags(lore: Lore, counts: bool, json_: bool) -> None:
    """Every tag in use.

    \b
    Example:
      lore recall tags --counts
    """
    tags = lore.lessons.tags()
    if json_:
        emit_json([{"tag": t, "count": n} for t, n in tags] if counts else [t for t, _ in tags])
    elif counts:
        table(None, ["tag", "lessons"], tags)
    else:
        for t, _ in tags:
            click.echo(t)


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
    notice("read a hit in its conversation: lore recall turns CHUNK")


@recall.command("turns")
@click.argument("chunk_id", type=int)
@click.option("--before", default=3, show_default=True, help="Messages to show before it.")
@click.option("--after", default=3, show_default=True, help="Messages to show after it.")
@json_option
@with_lore
def recall_turns(lore: Lore, chunk_id: int, before: int, after: int, json_: bool) -> None:
    """Show a conversation hit with the turns around it.

    
    Example:
      lore recall turns 42 --before 5
    """
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


def _reference_command(name: str, ref: str, doc: str) -> None:
    @recall.command(name, help=doc)
    @json_option
    @with_lore
    def command(lore: Lore, json_: bool) -> None:
        items = lore.lessons.reference(ref)
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



_reference_command("sources", "source",
                   "Valid sources of a lesson.\n\n\b\nExample:\n  lore recall sources --json")
_reference_command("confidence-levels", "confidence",
                   "Valid confidence levels, lowest first.\n\n\b\nExample:\n"
                   "  lore recall confidence-levels")
_reference_command("kinds", "kind",
                   "Valid kinds of lesson.\n\n\b\nExample:\n  lore recall kinds")
