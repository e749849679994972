"""The tool names and argument shapes of the interfaces Lore stays compatible with (the
ai-lessons, self-learning and reinforcement profiles), as thin aliases of the canonical tools.

Each of these profiles restates no logic: an alias maps its arguments onto the same core call
as the canonical tool in :data:`SEED_ALIASES` and shapes the answer that interface expects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from lore.mcp import conversations, learning
from lore.mcp.tools import (
    DELETE,
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

if TYPE_CHECKING:
    from lore.api import Lore


# Each compatible profile's tools and the canonical tool each stands for (None: a tool with
# no canonical twin). docs/mcp.md lists them; a test checks this table against the server.
SEED_ALIASES: dict[str, dict[str, str | None]] = {
    "ai-lessons": {
        "learn": "lore_add", "recall": "lore_search", "get_lesson": "lore_get",
        "update_lesson": "lore_update", "delete_lesson": "lore_delete", "related": "lore_related",
        "link": "lore_link", "tags": "lore_tags", "sources": "lore_sources",
        "confidence_levels": "lore_confidence_levels",
    },
    "self-learning": {
        "learn_search": "lore_search", "learn_get": "lore_get", "learn_status": "lore_status",
        "learn_trigger": "lore_analyze",
    },
    "self-reflect": {
        "reflect_on_past": None, "get_related_conversations": None, "store_reflection": "lore_add",
    },
    "reinforcement": {
        "search_memory": "lore_search", "get_project_rules": "lore_preferences",
        "get_preferences": "lore_preferences", "why_this_rule": "lore_get",
        "record_correction": "lore_record_correction", "suggest_rule": "lore_suggest_rule",
        "get_related_conversations": None,
    },
}


def register_ai_lessons(server: MCPServer, t: LoreTools) -> None:
    """The ai-lessons profile: its tool names and arguments."""

    @tool(server, "learn", WRITE)
    async def learn(
        title: str, content: str, tags: StrList = None, contexts: StrList = None,
        anti_contexts: StrList = None, confidence: str | None = None, source: str | None = None,
        source_notes: str | None = None, ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Add a lesson (the same as lore_add): when you had to debug or iterate to find a solution.

        Example: {"title": "Jira API rate limit", "content": "Back off on 429 …", "tags": ["jira"],
        "confidence": "medium", "source": "tested"}
        """
        proj = await t.project(ctx, None)
        fields = lesson_fields(tags=tags, contexts=contexts, anti_contexts=anti_contexts,
                                confidence=confidence, source=source, source_notes=source_notes,
                                project=proj)
        lesson = await t.run(lambda lore: lore.add_lesson(title, content, **fields))
        return {"id": lesson.id, "title": lesson.title}

    @tool(server, "recall", SEARCH)
    async def recall(
        query: str, tags: StrList = None, contexts: StrList = None,
        min_confidence: str | None = None, source: str | None = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> dict[str, Any]:
        """Search lessons (the same as lore_search, every project). Example: {"query": "rate limits"}"""
        filters = Filters(tags=tuple(tags or ()), contexts=tuple(contexts or ()),
                          min_confidence=min_confidence, sources=(source,) if source else ())
        hits = await t.run(lambda lore: lore.recall(query, filters, limit, interface="mcp"))
        return search_payload(query, hits)

    @tool(server, "get_lesson", READ)
    async def get_lesson(lesson_id: str) -> dict[str, Any]:
        """Get a lesson by id. Example: {"lesson_id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}"""
        return (await t.run(lambda lore: lore.get_lesson(lesson_id.strip()))).to_dict()

    @tool(server, "update_lesson", UPDATE)
    async def update_lesson(
        lesson_id: str, title: str | None = None, content: str | None = None,
        tags: StrList = None, contexts: StrList = None, anti_contexts: StrList = None,
        confidence: str | None = None, source: str | None = None, source_notes: str | None = None,
    ) -> dict[str, Any]:
        """Change a lesson. Example: {"lesson_id": "01JD…", "confidence": "high"}"""
        fields = lesson_fields(title=title, content=content, tags=tags, contexts=contexts,
                                anti_contexts=anti_contexts, confidence=confidence, source=source,
                                source_notes=source_notes)
        if not fields:
            raise ToolError("nothing to change: give at least one field besides lesson_id")
        lesson = await t.run(lambda lore: lore.update_lesson(lesson_id.strip(), **fields))
        return {"updated": True, "id": lesson.id}

    @tool(server, "delete_lesson", DELETE)
    async def delete_lesson(lesson_id: str) -> dict[str, Any]:
        """Delete a lesson. Example: {"lesson_id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}"""
        await t.run(lambda lore: lore.delete_lesson(lesson_id.strip()))
        return {"deleted": True, "id": lesson_id}

    @tool(server, "related", READ)
    async def related(lesson_id: str, depth: Annotated[int, Field(ge=1, le=10)] = 1,
                      relations: StrList = None) -> dict[str, Any]:
        """Lessons linked to a lesson. Example: {"lesson_id": "01JD…", "depth": 2}"""
        found = await t.run(lambda lore: lore.related(lesson_id.strip(), depth, relations or ()))
        return {"related": [r.to_dict() for r in found]}

    @tool(server, "link", WRITE)
    async def link(from_id: str, to_id: str, relation: str = "related_to") -> dict[str, Any]:
        """Link two lessons. Example: {"from_id": "01JD…A", "to_id": "01JD…B",
        "relation": "derived_from"}"""
        edge = await t.run(lambda lore: lore.link(from_id.strip(), to_id.strip(), relation))
        return {"linked": True, **edge.to_dict()}

    @tool(server, "tags", READ)
    async def tags(with_counts: bool = False) -> dict[str, Any]:
        """Tags in use. Example: {"with_counts": true}"""
        found = await t.run(lambda lore: lore.list_tags())
        return {"tags": [{"tag": g, "count": n} for g, n in found] if with_counts
                else [g for g, _ in found]}

    @tool(server, "sources", READ)
    async def sources() -> dict[str, Any]:
        """Valid sources. Example: {}"""
        return {"sources": [i.to_dict() for i in await t.run(lambda lore: lore.list_sources())]}

    @tool(server, "confidence_levels", READ)
    async def confidence_levels() -> dict[str, Any]:
        """Valid confidence levels. Example: {}"""
        items = await t.run(lambda lore: lore.list_confidence_levels())
        return {"confidence_levels": [i.to_dict() for i in items]}


LEARN_TYPES = Literal["code_pattern", "bug_fix", "architecture", "project_rule"]


def register_self_learning(server: MCPServer, t: LoreTools) -> None:
    """The self-learning profile: its tool names and arguments."""

    @tool(server, "learn_search", SEARCH)
    async def learn_search(
        query: str,
        type: LEARN_TYPES | None = None,
        project: str | None = None,
        min_confidence: Annotated[int, Field(ge=1, le=5)] = 3,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Search the knowledge base for patterns, bug fixes and learnings; counts usage.

        min_confidence is 1-5 (very-low … very-high). Example: {"query": "retry with backoff",
        "type": "bug_fix", "min_confidence": 3}
        """
        proj = await t.project(ctx, project)

        def run(lore: Lore) -> list[Any]:
            level = next((c.name for c in lore.list_confidence_levels()
                          if c.ordinal == min_confidence), None)
            filters = Filters(kinds=(type,) if type else (), min_confidence=level,
                              project=proj or None)
            return lore.recall(query, filters, limit, interface="mcp")

        hits = await t.run(run)
        return {"results": [h.to_dict() for h in hits], "query": query, "total": len(hits)}

    @tool(server, "learn_get", READ)
    async def learn_get(id: str) -> dict[str, Any]:
        """Full details of one knowledge entry. Example: {"id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}"""
        return (await t.run(lambda lore: lore.get_lesson(id.strip()))).to_dict()

    @tool(server, "learn_status", READ)
    async def learn_status(project: str | None = None) -> dict[str, Any]:
        """Statistics about learned knowledge: lessons by kind, status and project, and
        what analysis did (sessions seen, analysed, skipped with why, entries per kind, today's
        tokens and cost, the last error). Example: {}"""

        def run(lore: Lore) -> dict[str, Any]:
            stats = lore.stats()
            stats["analysis"] = lore.analyzer.status(project or None)
            return stats

        stats = await t.run(run)
        if project:
            stats["project"] = project
            stats["project_lessons"] = stats["by_project"].get(project, 0)
        return stats

    @tool(server, "learn_trigger", WRITE)
    async def learn_trigger(scope: Literal["session", "commit", "files"] = "session",
                            target: str | None = None, ctx: Context | None = None) -> dict[str, Any]:
        """Analyse the current project's work now, whatever its significance score.

        scope 'session': the last commit and the uncommitted work (target: a ref to start from
        instead); 'commit': one commit or a range A..B (target, default HEAD). 'files' is not
        supported. Returns the score, its parts and the proposed lessons.
        Example: {"scope": "commit", "target": "HEAD"}
        """
        if scope == "files":
            raise ToolError("scope 'files' is not supported; use 'session' or 'commit'")
        since, commit = (target, None) if scope == "session" else (None, target or "HEAD")
        result = await learning.trigger(t, ctx, None, since, commit)
        return {"triggered": True, "scope": scope, "target": target, **result}


def register_reinforcement(server: MCPServer, t: LoreTools, with_conversations: bool) -> None:
    """The reinforcement profile: its tool names and arguments."""

    @tool(server, "search_memory", SEARCH)
    async def search_memory(query: str, scope: Annotated[str, Field(
            description="'all', 'project' (this one) or 'global'.")] = "all",
            ctx: Context | None = None) -> dict[str, Any]:
        """Search the user's lessons and rules by meaning and keywords.

        Example: {"query": "how to store sessions", "scope": "project"}
        """
        if scope not in ("all", "project", "global"):
            raise ToolError(f"unknown scope '{scope}'; valid: all, project, global")
        proj = await t.project(ctx, None) if scope == "project" else None
        filters = Filters(project=proj, kinds=())
        hits = await t.run(lambda lore: [
            h for h in lore.recall(query, filters, 10, interface="mcp")
            if scope != "global" or lore.get_lesson(h.id).project is None])
        return search_payload(query, hits)

    @tool(server, "get_project_rules", READ)
    async def get_project_rules(project_path: str | None = None,
                                ctx: Context | None = None) -> dict[str, Any]:
        """The active and proposed rules for a project (default: the current one) and global ones.

        Example: {"project_path": "/home/me/shop"}
        """
        return await learning.preferences(t, ctx, project_path, None, None)

    @tool(server, "get_preferences", READ)
    async def get_preferences(category: Annotated[str | None, Field(
            description="A file type such as 'py' or 'qmd'; default: every preference.")] = None,
            project_path: str | None = None, ctx: Context | None = None) -> dict[str, Any]:
        """The user's preferences, optionally for one file type.

        Example: {"category": "py"}
        """
        return await learning.preferences(t, ctx, project_path, category, None)

    @tool(server, "why_this_rule", READ)
    async def why_this_rule(rule_id: str) -> dict[str, Any]:
        """The evidence behind a rule: the user's words, what they answered, when, how often.

        Example: {"rule_id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}
        """
        lesson = await t.run(lambda lore: lore.get_lesson(rule_id.strip()))
        meta = lesson.metadata.get("learning") or {}
        return {"id": lesson.id, "title": lesson.title, "status": lesson.status,
                "score": lesson.score, "occurrences": meta.get("occurrences"),
                "first_seen": meta.get("first_seen"), "last_seen": meta.get("last_seen"),
                "evidence": [e.to_dict() for e in lesson.evidence],
                "links": [e.to_dict() for e in lesson.edges]}

    @tool(server, "record_correction", WRITE)
    async def record_correction(
        user_correction: learning.TEXT,
        assistant_msg_id: Annotated[str | None, Field(description="Id (uuid) of your message "
                                                      "the user corrected, if imported.")] = None,
        previous: learning.PREVIOUS = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Record that the user corrected you; the rule is extracted and scored.

        Example: {"user_correction": "No, use pnpm, not npm", "previous": "I'll run npm install."}
        """
        return await learning.record(t, ctx, user_correction, previous, assistant_msg_id, None, None)

    @tool(server, "suggest_rule", WRITE)
    async def suggest_rule(rule_text: str, reason: str | None = None,
                           ctx: Context | None = None) -> dict[str, Any]:
        """Propose a rule for the user's review; never active by itself.

        Example: {"rule_text": "Render the QMD document as the last step", "reason": "asked 3 times"}
        """
        return await learning.suggest(t, ctx, rule_text, reason, None, None)

    if with_conversations:
        conversations.register_related(server, t)
