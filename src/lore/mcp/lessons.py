"""The canonical lesson tools (``lore_*``): search, read, write, link, reference lists, status."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from lore import policy
from lore.mcp.tools import (
    DELETE,
    GLOBAL,
    READ,
    SEARCH,
    UPDATE,
    WRITE,
    LoreTools,
    StrList,
    lesson_fields,
    search_payload,
    tool,
)
from lore.models import Filters
from lore.policy import REQUESTS


def register(server: MCPServer, t: LoreTools) -> None:  # noqa: C901 - one table of tools
    @tool(server, "lore_search", SEARCH)
    async def lore_search(
        query: Annotated[str, Field(description="What you are about to do or want to know.")],
        limit: Annotated[int, Field(ge=1, le=REQUESTS["search"].most)] = REQUESTS["search"].limit,
        tags: StrList = None,
        contexts: Annotated[StrList, Field(description="Situations you are in, e.g. "
                                           "'shared team branch'.")] = None,
        min_confidence: str | None = None,
        sources: StrList = None,
        kinds: StrList = None,
        statuses: Annotated[StrList, Field(description="Default ['active']; ['all'] for "
                                           "every status.")] = None,
        project: Annotated[str | None, Field(description="Default: the current project "
                                             "(plus global lessons); 'all' for every project.")] = None,
        file_types: StrList = None,
        explain: bool = False,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Search Lore's lessons by meaning and keywords; returns short results (id, title, snippet, score).

        Use before starting a task or choosing a library, pattern or command, so you follow
        what the user already taught: their corrections, preferences, project rules and
        lessons learned debugging. Filters apply before ranking. Lessons scoped to another
        context, or with your context as an anti-context, are left out.
        Then read a whole lesson with lore_get.

        Example: {"query": "how should sessions be stored", "tags": ["auth"], "limit": 5}
        """
        scope = await t.scope(ctx, project, "search")
        filters = Filters(
            tags=tuple(tags or ()), contexts=tuple(contexts or ()), min_confidence=min_confidence,
            sources=tuple(sources or ()), kinds=tuple(kinds or ()),
            statuses=policy.statuses(statuses, "search"), project=scope.filter,
            file_types=tuple(file_types or ()),
        )
        hits = await t.run(lambda lore: lore.search.query(query, filters, limit, interface="mcp"))
        return search_payload(query, hits, explain)

    @tool(server, "lore_get", READ)
    async def lore_get(
        id: Annotated[str, Field(description="Lesson id (a ULID from lore_search).")],
    ) -> dict[str, Any]:
        """Get one lesson in full: content, preference, contexts, examples, trade-offs, evidence, links.

        Use after lore_search when a result looks relevant.
        Example: {"id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}
        """
        lesson = await t.run(lambda lore: lore.lessons.get(id.strip()))
        return lesson.to_dict()

    @tool(server, "lore_add", WRITE)
    async def lore_add(
        title: Annotated[str, Field(description="5-12 words that name the lesson.")],
        content: Annotated[str, Field(description="What to do and why, in plain sentences.")],
        kind: Annotated[str | None, Field(description="preference, project_rule, bug_fix, "
                                          "code_pattern, architecture, decision, pattern, "
                                          "anti_pattern, learning … (lore_kinds)")] = None,
        tags: StrList = None,
        contexts: StrList = None,
        anti_contexts: StrList = None,
        confidence: Annotated[str | None, Field(description="very-low … very-high")] = None,
        source: Annotated[str | None, Field(description="e.g. correction, tested, documented "
                                            "(lore_sources)")] = None,
        source_notes: str | None = None,
        project: Annotated[str | None, Field(description="Default: the current project; "
                                             "'global' for every project.")] = None,
        file_types: StrList = None,
        summary: str | None = None,
        problem_solved: str | None = None,
        when_to_apply: str | None = None,
        when_not_to_apply: str | None = None,
        preference: Annotated[dict[str, str] | None, Field(description="For corrections: "
                              "{context, rejected, preferred, reasoning}.")] = None,
        examples: Annotated[list[dict[str, str]] | None, Field(description="[{code, language, "
                            "context}]")] = None,
        trade_offs: Annotated[list[dict[str, str]] | None, Field(description="[{type: pro|con, "
                              "description}]")] = None,
        evidence: Annotated[list[dict[str, str]] | None, Field(description="[{quote, "
                            "session_id, message_id}]: the user's own words")] = None,
        status: str | None = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Save a lesson: a correction, a lasting preference, a project rule, or a hard-won fix.

        Use when the user corrects your approach ("no, use X instead"), states how they want
        things done, or when a problem took debugging to solve. One lesson = one idea; quote
        the user in evidence. Returns the stored lesson with its id.
        Example: {"title": "Use local file sessions, not Redis", "content": "The user rejected
        Redis for session storage; sessions live in var/sessions.", "kind": "preference",
        "tags": ["auth"], "preference": {"rejected": "Redis", "preferred": "file sessions"}}
        """
        proj = await t.project(ctx, project)
        fields = lesson_fields(
            kind=kind, tags=tags, contexts=contexts, anti_contexts=anti_contexts,
            confidence=confidence, source=source, source_notes=source_notes, project=proj,
            file_types=file_types, summary=summary, problem_solved=problem_solved,
            when_to_apply=when_to_apply, when_not_to_apply=when_not_to_apply,
            preference=preference, examples=examples, trade_offs=trade_offs, evidence=evidence,
            status=status,
        )
        lesson = await t.run(lambda lore: lore.lessons.add(title, content, **fields))
        return lesson.to_dict()

    @tool(server, "lore_update", UPDATE)
    async def lore_update(
        id: str,
        title: str | None = None,
        content: str | None = None,
        kind: str | None = None,
        status: Annotated[str | None, Field(description="proposed, active, rejected, "
                                            "superseded, archived")] = None,
        confidence: str | None = None,
        source: str | None = None,
        source_notes: str | None = None,
        project: Annotated[str | None, Field(description="'global' clears the scope.")] = None,
        tags: Annotated[StrList, Field(description="Replaces the tags.")] = None,
        contexts: StrList = None,
        anti_contexts: StrList = None,
        file_types: StrList = None,
        summary: str | None = None,
        problem_solved: str | None = None,
        when_to_apply: str | None = None,
        when_not_to_apply: str | None = None,
        preference: dict[str, str] | None = None,
        examples: list[dict[str, str]] | None = None,
        trade_offs: list[dict[str, str]] | None = None,
        evidence: list[dict[str, str]] | None = None,
    ) -> dict[str, Any]:
        """Change some fields of a lesson; list fields replace the old list. Returns the lesson.

        Use when a lesson is wrong, outdated or too narrow, e.g. raise its confidence after
        it proved right again, or mark it superseded.
        Example: {"id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J", "confidence": "high"}
        """
        proj = None if project is None else ("" if project.strip().lower() in GLOBAL else project)
        fields = lesson_fields(
            title=title, content=content, kind=kind, status=status, confidence=confidence,
            source=source, source_notes=source_notes, project=proj, tags=tags,
            contexts=contexts, anti_contexts=anti_contexts, file_types=file_types,
            summary=summary, problem_solved=problem_solved, when_to_apply=when_to_apply,
            when_not_to_apply=when_not_to_apply, preference=preference, examples=examples,
            trade_offs=trade_offs, evidence=evidence,
        )
        if not fields:
            raise ToolError("nothing to change: give at least one field besides id")
        lesson = await t.run(lambda lore: lore.lessons.update(id.strip(), **fields))
        return lesson.to_dict()

    @tool(server, "lore_delete", DELETE)
    async def lore_delete(id: str) -> dict[str, Any]:
        """Delete a lesson with its tags, evidence and links. Cannot be undone.

        Prefer lore_update with status "archived" or "superseded" unless the lesson is wrong.
        Example: {"id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}
        """
        lesson = await t.run(lambda lore: lore.lessons.delete(id.strip()))
        return {"deleted": lesson.id, "title": lesson.title}

    @tool(server, "lore_related", READ)
    async def lore_related(
        id: str,
        depth: Annotated[int, Field(ge=1, le=10)] = 1,
        relations: StrList = None,
        direction: Literal["out", "in", "both"] = "both",
    ) -> dict[str, Any]:
        """Lessons linked to one lesson, up to `depth` hops, nearest first.

        Use to see what supersedes, contradicts or explains a lesson.
        Example: {"id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J", "depth": 2, "relations": ["supersedes"]}
        """
        found = await t.run(lambda lore: lore.search.related(id.strip(), depth, relations or (),
                                                        direction))
        return {"id": id, "related": [r.to_dict() for r in found]}

    @tool(server, "lore_link", WRITE)
    async def lore_link(
        from_id: str,
        to_id: str,
        relation: Annotated[str, Field(description="related_to, derived_from, contradicts, "
                                       "supersedes, example_of, … (free-form)")] = "related_to",
    ) -> dict[str, Any]:
        """Link two lessons: from_id --relation--> to_id.

        Example: {"from_id": "01JD…A", "to_id": "01JD…B", "relation": "supersedes"}
        """
        edge = await t.run(lambda lore: lore.lessons.link(from_id.strip(), to_id.strip(), relation))
        return edge.to_dict()

    @tool(server, "lore_unlink", DELETE)
    async def lore_unlink(from_id: str, to_id: str, relation: str | None = None) -> dict[str, Any]:
        """Remove the link(s) from one lesson to another (one relation, or all of them).

        Example: {"from_id": "01JD…A", "to_id": "01JD…B", "relation": "related_to"}
        """
        n = await t.run(lambda lore: lore.lessons.unlink(from_id.strip(), to_id.strip(), relation))
        return {"removed": n}

    @tool(server, "lore_values", READ)
    async def lore_values(
        what: Literal["tags", "kinds", "sources", "confidence_levels", "statuses", "relations"],
    ) -> dict[str, Any]:
        """The values a lesson's fields take: the tags in use with how many lessons carry each,
        or the valid kinds (preference, project_rule, bug_fix …), sources (tested, documented,
        correction …), confidence levels (lowest first, with their ordinals), statuses or
        relations. Example: {"what": "kinds"}
        """
        if what == "tags":
            tags = await t.run(lambda lore: lore.lessons.tags())
            return {"tags": [{"tag": tag, "count": n} for tag, n in tags]}
        table = {"kinds": "kind", "sources": "source", "confidence_levels": "confidence",
                 "statuses": "status", "relations": "relation"}[what]
        items = await t.run(lambda lore: lore.lessons.reference(table))
        return {what: [i.to_dict() for i in items]}

    @tool(server, "lore_status", READ)
    async def lore_status() -> dict[str, Any]:
        """Counts of lessons by kind, status, confidence and project; database size; embedding model.

        Example: {}
        """
        return await t.run(lambda lore: lore.admin.stats())

