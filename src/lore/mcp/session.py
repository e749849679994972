"""The default tool set (profile ``session``): what an agent needs during a session, and no
more, because every tool's schema is sent with every request the agent makes.

Search lessons, search past conversations, get one lesson, the rules that apply here, record a
correction, suggest a rule. Administration (tags, sources, kinds, links, delete, export and
import, review decisions, apply) is in the ``admin`` profile a user opts into; the seed-compatible
names are profiles of their own (:mod:`lore.mcp.server`). Each tool calls the same functions as
its ``canonical`` namesake, with fewer arguments; ``test_mcp_profiles`` holds the total schema
size of this profile to 6 KB.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from lore.mcp import learning
from lore.mcp.tools import READ, SEARCH, WRITE, LoreTools, StrList, search_payload, tool
from lore.policy import REQUESTS

PROJECT = Annotated[str | None, Field(description="Default: this project. 'all' or 'global'.")]


def register(server: MCPServer, t: LoreTools) -> None:
    @tool(server, "lore_search", SEARCH)
    async def lore_search(
        query: Annotated[str, Field(description="What you are about to do or want to know.")],
        limit: Annotated[int, Field(ge=1, le=REQUESTS["search"].most)] = REQUESTS["search"].limit,
        file_types: StrList = None,
        project: PROJECT = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Search the user's lessons: corrections, preferences, project rules, fixes learned
        debugging. Use before choosing a library, pattern or command. Short results; read one
        with lore_get. A superseded lesson ranks below its successor."""
        from lore.models import Filters

        scope = await t.scope(ctx, project, "search")
        filters = Filters(project=scope.filter, file_types=tuple(file_types or ()))
        hits = await t.run(lambda lore: lore.search.query(query, filters, limit, interface="mcp"))
        return search_payload(query, hits)

    register_conversations(server, t)

    @tool(server, "lore_get", READ)
    async def lore_get(id: Annotated[str, Field(description="A lesson id.")]) -> dict[str, Any]:
        """One lesson in full: content, preference, examples, evidence, links."""
        lesson = await t.run(lambda lore: lore.lessons.get(id.strip()))
        return lesson.to_dict()

    @tool(server, "lore_preferences", READ)
    async def lore_preferences(
        file_type: Annotated[str | None, Field(description="e.g. 'py'")] = None,
        project: PROJECT = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """The user's rules and preferences that apply here: active, then proposed."""
        return await learning.preferences(t, ctx, project, file_type, None)

    @tool(server, "lore_record_correction", WRITE)
    async def lore_record_correction(
        text: Annotated[str, Field(description="The user's words, verbatim.")],
        previous: Annotated[str | None, Field(description="What you said or did that they "
                                              "corrected.")] = None,
        files: StrList = None,
        project: PROJECT = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Record that the user corrected you or stated a lasting preference ("no, use X",
        "always…", "never…"), so later sessions follow it. Lore extracts and scores the rule."""
        return await learning.record(t, ctx, text, previous, None, project, files)

    @tool(server, "lore_suggest_rule", WRITE)
    async def lore_suggest_rule(
        rule: Annotated[str, Field(description="The rule, as an instruction.")],
        reason: Annotated[str | None, Field(description="Why you think so.")] = None,
        file_types: StrList = None,
        project: PROJECT = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Propose a rule you inferred from the user's behaviour; it waits for their review."""
        return await learning.suggest(t, ctx, rule, reason, project, file_types)


def register_conversations(server: MCPServer, t: LoreTools) -> None:
    """``lore_search_conversations``: in the session and admin profiles."""

    @tool(server, "lore_search_conversations", READ)
    async def lore_search_conversations(
        query: Annotated[str, Field(description="What was said or decided.")],
        limit: Annotated[int, Field(ge=1, le=REQUESTS["conversations"].most)] = REQUESTS[
            "conversations"].limit,
        project: PROJECT = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Search past sessions' conversations ("have we seen this error?", "what did we decide
        about X?"): session, date and a snippet per hit."""
        return await learning.conversations(t, ctx, query, project, limit)
