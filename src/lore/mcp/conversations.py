"""Conversation memory as MCP tools: ``reflect_on_past`` and ``store_reflection`` (the
``self-reflect`` profile) and ``get_related_conversations`` (also in ``reinforcement``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from lore.mcp.tools import (
    READ,
    WRITE,
    LoreTools,
    StrList,
    tool,
)
from lore.normalize import clip_words

if TYPE_CHECKING:
    pass


async def search(t: LoreTools, ctx: Context | None, query: str, project: str | None, limit: int,
                 min_score: float, use_decay: bool | None,
                 rerank: bool | None = None) -> dict[str, Any]:
    proj = await t.project(ctx, project)
    found = await t.run(lambda lore: lore.conversations.find(
        query, project=proj or None, limit=limit, min_score=min_score, decay=use_decay,
        rerank=rerank))
    return {"query": query, "project": proj, "count": len(found.hits), **found.outcome(),
            "results": [h.to_dict() for h in found.hits]}


def register(server: MCPServer, t: LoreTools) -> None:
    """The ``self-reflect`` profile."""

    @tool(server, "reflect_on_past", READ)
    async def reflect_on_past(
        query: Annotated[str, Field(description="What to look for in past conversations.")],
        project: Annotated[str | None, Field(description="Default: the current project; "
                                             "'all' for every project.")] = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
        min_score: Annotated[float, Field(ge=0)] = 0.0,
        use_decay: Annotated[bool | None, Field(description="Favour recent conversations "
                                                "(default: on, 90-day scale).")] = None,
        rerank: Annotated[bool | None, Field(description="Have the user's language model "
                                             "re-order the best results (slower; default: "
                                             "the user's conversations.rerank).")] = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Search past conversations (imported transcripts) for what was said or decided before.

        Use for "have we seen this error before?", "what did we decide about X?". Results carry
        session, date, project and a snippet; read one in context with the CLI's
        `lore recall turns CHUNK`.
        Example: {"query": "ECONNRESET from the payments API", "limit": 5}
        """
        return await search(t, ctx, query, project, limit, min_score, use_decay, rerank)

    register_related(server, t)

    @tool(server, "store_reflection", WRITE)
    async def store_reflection(
        content: Annotated[str, Field(description="The insight or decision, in plain sentences.")],
        tags: StrList = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Store an insight or decision from this conversation as a reflection lesson.

        Example: {"content": "We chose SQLite over Postgres for the CLI: no server to run.",
        "tags": ["architecture"]}
        """
        proj = await t.project(ctx, None)
        title = clip_words(content.strip().split("\n")[0], 80) or "Reflection"
        lesson = await t.run(lambda lore: lore.add_lesson(
            title, content, kind="reflection", tags=tags or [], project=proj, source="conversation"))
        return {"stored": True, "id": lesson.id, "title": lesson.title}


def register_related(server: MCPServer, t: LoreTools) -> None:
    """``get_related_conversations``, in the self-reflect and reinforcement profiles."""

    @tool(server, "get_related_conversations", READ)
    async def get_related_conversations(
        query: str, limit: Annotated[int, Field(ge=1, le=50)] = 5, ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Past conversations related to a topic, across every project.

        Example: {"query": "database migration rollback", "limit": 5}
        """
        return await search(t, ctx, query, "all", limit, 0.0, None)
