"""The tool names and argument shapes of the interfaces Lore stays compatible with (the
ai-lessons, self-learning, self-reflect and reinforcement profiles), generated from one table.

Each row of :data:`ALIASES` names a compatible tool, the canonical tool it stands for, its
arguments (their types are :data:`TYPES`, by name: one name means one thing in every profile)
and how it calls the core and shapes the answer that interface expects. No row restates logic:
each calls the same core functions as its canonical twin.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from lore.mcp import learning
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
from lore.normalize import clip_words

if TYPE_CHECKING:
    from lore.api import Lore

Args = dict[str, Any]
Run = Callable[[LoreTools, "Context | None", Args], Awaitable[dict[str, Any]]]
REQUIRED = inspect.Parameter.empty
LEARN_TYPES = Literal["code_pattern", "bug_fix", "architecture", "project_rule"]

# Every argument a compatible tool takes, by name: (type, default).
TYPES: dict[str, tuple[Any, Any]] = {
    **{name: (str, REQUIRED) for name in (
        "title", "content", "query", "lesson_id", "id", "rule_id", "from_id", "to_id",
        "rule_text")},
    **{name: (StrList, None) for name in ("tags", "contexts", "anti_contexts", "relations")},
    **{name: (str | None, None) for name in (
        "confidence", "min_confidence", "source", "source_notes", "project", "project_path",
        "target", "reason")},
    "assistant_msg_id": (Annotated[str | None, Field(description="Id (uuid) of your message "
                                                     "the user corrected, if imported.")], None),
    "previous": (learning.PREVIOUS, None),
    "limit": (Annotated[int, Field(ge=1, le=50)], 10),
    "depth": (Annotated[int, Field(ge=1, le=10)], 1),
    "relation": (str, "related_to"),
    "with_counts": (bool, False),
    "type": (LEARN_TYPES | None, None),
    "min_level": (Annotated[int, Field(ge=1, le=5)], 3),
    "scope": (Literal["session", "commit", "files"], "session"),
    "search_scope": (Annotated[str, Field(description="'all', 'project' (this one) or "
                                          "'global'.")], "all"),
    "category": (Annotated[str | None, Field(description="A file type such as 'py' or 'qmd'; "
                                             "default: every preference.")], None),
    "user_correction": (learning.TEXT, REQUIRED),
    "min_score": (Annotated[float, Field(ge=0)], 0.0),
    "past": (Annotated[str, Field(description="What to look for in past conversations.")],
             REQUIRED),
    "past_project": (Annotated[str | None, Field(description="Default: the current project; "
                                                 "'all' for every project.")], None),
    "reflection": (Annotated[str, Field(description="The insight or decision, in plain "
                                        "sentences.")], REQUIRED),
    "use_decay": (Annotated[bool | None, Field(description="Favour recent conversations "
                                               "(default: on, 90-day scale).")], None),
    "rerank": (Annotated[bool | None, Field(description="Have the user's language model "
                                            "re-order the best results (slower; default: the "
                                            "user's conversations.rerank).")], None),
}
# The name a tool's argument has in its interface, where it differs from TYPES' name.
SPELLED = {"min_level": "min_confidence", "search_scope": "scope", "past": "query",
           "past_project": "project", "reflection": "content"}


@dataclass(frozen=True)
class Alias:
    profiles: tuple[str, ...]
    name: str
    canonical: str | None  # the canonical tool it stands for (None: it has no twin)
    hints: ToolAnnotations
    args: str  # its arguments, names of TYPES, "name=default" to change the default
    run: Run
    doc: str


# ---- what the rows call ----------------------------------------------------------------------
def call(fn: Callable[[Lore, Args], Any], shape: Callable[[Any, Args], dict[str, Any]]) -> Run:
    """A row that runs one core call and shapes its result."""

    async def run(t: LoreTools, ctx: Context | None, a: Args) -> dict[str, Any]:
        return shape(await t.run(lambda lore: fn(lore, a)), a)

    return run


LESSON_FIELDS = ("tags", "contexts", "anti_contexts", "confidence", "source", "source_notes")


def fields_of(a: Args, *names: str) -> dict[str, Any]:
    return lesson_fields(**{n: a.get(n) for n in names})


async def learn(t: LoreTools, ctx: Context | None, a: Args) -> dict[str, Any]:
    proj = await t.project(ctx, None)
    fields = lesson_fields(project=proj, **fields_of(a, *LESSON_FIELDS))
    lesson = await t.run(lambda lore: lore.lessons.add(a["title"], a["content"], **fields))
    return {"id": lesson.id, "title": lesson.title}


async def update(t: LoreTools, ctx: Context | None, a: Args) -> dict[str, Any]:
    fields = fields_of(a, "title", "content", *LESSON_FIELDS)
    if not fields:
        raise ToolError("nothing to change: give at least one field besides lesson_id")
    lesson = await t.run(lambda lore: lore.lessons.update(a["lesson_id"].strip(), **fields))
    return {"updated": True, "id": lesson.id}


def recall(lore: Lore, a: Args) -> list[Any]:
    source = a["source"]
    filters = Filters(tags=tuple(a["tags"] or ()), contexts=tuple(a["contexts"] or ()),
                      min_confidence=a["min_confidence"], sources=(source,) if source else ())
    return lore.search.query(a["query"], filters, a["limit"], interface="mcp")


async def learn_search(t: LoreTools, ctx: Context | None, a: Args) -> dict[str, Any]:
    proj = await t.project(ctx, a["project"])

    def run(lore: Lore) -> list[Any]:
        level = next((c.name for c in lore.lessons.reference("confidence")
                      if c.ordinal == a["min_level"]), None)
        filters = Filters(kinds=(a["type"],) if a["type"] else (), min_confidence=level,
                          project=proj or None)
        return lore.search.query(a["query"], filters, a["limit"], interface="mcp")

    hits = await t.run(run)
    return {"results": [h.to_dict() for h in hits], "query": a["query"], "total": len(hits)}


def learn_status(lore: Lore, a: Args) -> dict[str, Any]:
    stats = lore.admin.stats()
    stats["analysis"] = lore.analysis.status(a["project"] or None)
    if a["project"]:
        stats["project"] = a["project"]
        stats["project_lessons"] = stats["by_project"].get(a["project"], 0)
    return stats


async def learn_trigger(t: LoreTools, ctx: Context | None, a: Args) -> dict[str, Any]:
    scope, target = a["scope"], a["target"]
    if scope == "files":
        raise ToolError("scope 'files' is not supported; use 'session' or 'commit'")
    since, commit = (target, None) if scope == "session" else (None, target or "HEAD")
    result = await learning.trigger(t, ctx, None, since, commit)
    return {"triggered": True, "scope": scope, "target": target, **result}


async def search_memory(t: LoreTools, ctx: Context | None, a: Args) -> dict[str, Any]:
    scope = a["search_scope"]
    if scope not in ("all", "project", "global"):
        raise ToolError(f"unknown scope '{scope}'; valid: all, project, global")
    proj = await t.project(ctx, None) if scope == "project" else None
    hits = await t.run(lambda lore: [
        h for h in lore.search.query(a["query"], Filters(project=proj), 10, interface="mcp")
        if scope != "global" or lore.lessons.get(h.id).project is None])
    return search_payload(a["query"], hits)


def why(lesson: Any, a: Args) -> dict[str, Any]:
    meta = lesson.metadata.get("learning") or {}
    return {"id": lesson.id, "title": lesson.title, "status": lesson.status,
            "score": lesson.score, "occurrences": meta.get("occurrences"),
            "first_seen": meta.get("first_seen"), "last_seen": meta.get("last_seen"),
            "evidence": [e.to_dict() for e in lesson.evidence],
            "links": [e.to_dict() for e in lesson.edges]}


async def store_reflection(t: LoreTools, ctx: Context | None, a: Args) -> dict[str, Any]:
    proj = await t.project(ctx, None)
    content = a["reflection"]
    title = clip_words(content.strip().split("\n")[0], 80) or "Reflection"
    lesson = await t.run(lambda lore: lore.lessons.add(
        title, content, kind="reflection", tags=a["tags"] or [], project=proj,
        source="conversation"))
    return {"stored": True, "id": lesson.id, "title": lesson.title}


def listed(key: str, table: str) -> Run:
    """A row answering one reference table's values (lore.lessons.reference) under ``key``."""
    return call(lambda lore, a: lore.lessons.reference(table),
                lambda items, a: {key: [i.to_dict() for i in items]})


def lesson_id(a: Args) -> str:
    return str(a.get("lesson_id") or a.get("id") or a.get("rule_id")).strip()


FULL = call(lambda lore, a: lore.lessons.get(lesson_id(a)), lambda lesson, a: lesson.to_dict())
SEED = ("ai-lessons", "self-learning", "self-reflect", "reinforcement")

# ---- the table -------------------------------------------------------------------------------
ALIASES: tuple[Alias, ...] = (
    # ai-lessons
    Alias(("ai-lessons",), "learn", "lore_add", WRITE,
          "title content tags contexts anti_contexts confidence source source_notes", learn,
          """Add a lesson (the same as lore_add): when you had to debug or iterate to find a solution.

          Example: {"title": "Jira API rate limit", "content": "Back off on 429 …", "tags": ["jira"],
          "confidence": "medium", "source": "tested"}"""),
    Alias(("ai-lessons",), "recall", "lore_search", SEARCH,
          "query tags contexts min_confidence source limit",
          call(recall, lambda hits, a: search_payload(a["query"], hits)),
          """Search lessons (the same as lore_search, every project). Example: {"query": "rate limits"}"""),
    Alias(("ai-lessons",), "get_lesson", "lore_get", READ, "lesson_id", FULL,
          """Get a lesson by id. Example: {"lesson_id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}"""),
    Alias(("ai-lessons",), "update_lesson", "lore_update", UPDATE,
          "lesson_id title=None content=None tags contexts anti_contexts confidence source "
          "source_notes", update,
          """Change a lesson. Example: {"lesson_id": "01JD…", "confidence": "high"}"""),
    Alias(("ai-lessons",), "delete_lesson", "lore_delete", DELETE, "lesson_id",
          call(lambda lore, a: lore.lessons.delete(lesson_id(a)),
               lambda _, a: {"deleted": True, "id": a["lesson_id"]}),
          """Delete a lesson. Example: {"lesson_id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}"""),
    Alias(("ai-lessons",), "related", "lore_related", READ, "lesson_id depth relations",
          call(lambda lore, a: lore.search.related(lesson_id(a), a["depth"], a["relations"] or ()),
               lambda found, a: {"related": [r.to_dict() for r in found]}),
          """Lessons linked to a lesson. Example: {"lesson_id": "01JD…", "depth": 2}"""),
    Alias(("ai-lessons",), "link", "lore_link", WRITE, "from_id to_id relation",
          call(lambda lore, a: lore.lessons.link(a["from_id"].strip(), a["to_id"].strip(), a["relation"]),
               lambda edge, a: {"linked": True, **edge.to_dict()}),
          """Link two lessons. Example: {"from_id": "01JD…A", "to_id": "01JD…B",
          "relation": "derived_from"}"""),
    Alias(("ai-lessons",), "tags", "lore_values", READ, "with_counts",
          call(lambda lore, a: lore.lessons.tags(),
               lambda found, a: {"tags": [{"tag": g, "count": n} for g, n in found]
                                 if a["with_counts"] else [g for g, _ in found]}),
          """Tags in use. Example: {"with_counts": true}"""),
    Alias(("ai-lessons",), "sources", "lore_values", READ, "", listed("sources", "source"),
          """Valid sources. Example: {}"""),
    Alias(("ai-lessons",), "confidence_levels", "lore_values", READ, "",
          listed("confidence_levels", "confidence"),
          """Valid confidence levels. Example: {}"""),
    # self-learning
    Alias(("self-learning",), "learn_search", "lore_search", SEARCH,
          "query type project min_level limit", learn_search,
          """Search the knowledge base for patterns, bug fixes and learnings; counts usage.

          min_confidence is 1-5 (very-low … very-high). Example: {"query": "retry with backoff",
          "type": "bug_fix", "min_confidence": 3}"""),
    Alias(("self-learning",), "learn_get", "lore_get", READ, "id", FULL,
          """Full details of one knowledge entry. Example: {"id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}"""),
    Alias(("self-learning",), "learn_status", "lore_status", READ, "project",
          call(learn_status, lambda stats, a: stats),
          """Statistics about learned knowledge: lessons by kind, status and project, and
          what analysis did (sessions seen, analysed, skipped with why, entries per kind, today's
          tokens and cost, the last error). Example: {}"""),
    Alias(("self-learning",), "learn_trigger", "lore_analyze", WRITE, "scope target",
          learn_trigger,
          """Analyse the current project's work now, whatever its significance score.

          scope 'session': the last commit and the uncommitted work (target: a ref to start from
          instead); 'commit': one commit or a range A..B (target, default HEAD). 'files' is not
          supported. Returns the score, its parts and the proposed lessons.
          Example: {"scope": "commit", "target": "HEAD"}"""),
    # self-reflect
    Alias(("self-reflect",), "reflect_on_past", None, READ,
          "past past_project limit=5 min_score use_decay rerank",
          lambda t, ctx, a: learning.conversations(t, ctx, a["past"], a["past_project"], a["limit"],
                                                   a["min_score"], a["use_decay"], a["rerank"]),
          """Search past conversations (imported transcripts) for what was said or decided before.

          Use for "have we seen this error before?", "what did we decide about X?". Results carry
          session, date, project and a snippet; read one in context with the CLI's
          `lore recall show CHUNK`.
          Example: {"query": "ECONNRESET from the payments API", "limit": 5}"""),
    Alias(("self-reflect", "reinforcement"), "get_related_conversations", None, READ,
          "query limit=5",
          lambda t, ctx, a: learning.conversations(t, ctx, a["query"], "all", a["limit"]),
          """Past conversations related to a topic, across every project.

          Example: {"query": "database migration rollback", "limit": 5}"""),
    Alias(("self-reflect",), "store_reflection", "lore_add", WRITE, "reflection tags",
          store_reflection,
          """Store an insight or decision from this conversation as a reflection lesson.

          Example: {"content": "We chose SQLite over Postgres for the CLI: no server to run.",
          "tags": ["architecture"]}"""),
    # reinforcement
    Alias(("reinforcement",), "search_memory", "lore_search", SEARCH, "query search_scope",
          search_memory,
          """Search the user's lessons and rules by meaning and keywords.

          Example: {"query": "how to store sessions", "scope": "project"}"""),
    Alias(("reinforcement",), "get_project_rules", "lore_preferences", READ, "project_path",
          lambda t, ctx, a: learning.preferences(t, ctx, a["project_path"], None, None),
          """The active and proposed rules for a project (default: the current one) and global ones.

          Example: {"project_path": "/home/me/shop"}"""),
    Alias(("reinforcement",), "get_preferences", "lore_preferences", READ,
          "category project_path",
          lambda t, ctx, a: learning.preferences(t, ctx, a["project_path"], a["category"], None),
          """The user's preferences, optionally for one file type.

          Example: {"category": "py"}"""),
    Alias(("reinforcement",), "why_this_rule", "lore_get", READ, "rule_id",
          call(lambda lore, a: lore.lessons.get(lesson_id(a)), why),
          """The evidence behind a rule: the user's words, what they answered, when, how often.

          Example: {"rule_id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}"""),
    Alias(("reinforcement",), "record_correction", "lore_record_correction", WRITE,
          "user_correction assistant_msg_id previous",
          lambda t, ctx, a: learning.record(t, ctx, a["user_correction"], a["previous"],
                                            a["assistant_msg_id"], None, None),
          """Record that the user corrected you; the rule is extracted and scored.

          Example: {"user_correction": "No, use pnpm, not npm", "previous": "I'll run npm install."}"""),
    Alias(("reinforcement",), "suggest_rule", "lore_suggest_rule", WRITE, "rule_text reason",
          lambda t, ctx, a: learning.suggest(t, ctx, a["rule_text"], a["reason"], None, None),
          """Propose a rule for the user's review; never active by itself.

          Example: {"rule_text": "Render the QMD document as the last step", "reason": "asked 3 times"}"""),
)

# Each compatible profile's tools and the canonical tool each stands for (None: a tool with
# no canonical twin). docs/mcp.md lists them; a test checks this table against the server.
SEED_ALIASES: dict[str, dict[str, str | None]] = {
    profile: {a.name: a.canonical for a in ALIASES if profile in a.profiles} for profile in SEED}


def signature(args: str) -> inspect.Signature:
    """The tool's parameters from its row's ``args`` (names of TYPES, "name=default"), then the
    MCP context."""
    params = []
    for word in args.split():
        name, _, default = word.partition("=")
        kind, value = TYPES[name]
        if default == "None":
            kind, value = kind | None, None
        elif default:
            value = int(default)
        params.append(inspect.Parameter(SPELLED.get(name, name),
                                        inspect.Parameter.KEYWORD_ONLY, annotation=kind,
                                        default=value))
    params.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY,
                                    annotation=Context | None, default=None))
    return inspect.Signature(params, return_annotation=dict[str, Any])


def make(alias: Alias, t: LoreTools) -> Callable[..., Awaitable[dict[str, Any]]]:
    sig = signature(alias.args)
    back = {SPELLED.get(n, n): n for n in (w.partition("=")[0] for w in alias.args.split())}

    async def tool_call(ctx: Context | None = None, **given: Any) -> dict[str, Any]:
        args = {back[k]: v for k, v in given.items()}
        return await alias.run(t, ctx, args)

    tool_call.__name__ = tool_call.__qualname__ = alias.name.replace("-", "_")
    tool_call.__doc__ = alias.doc
    tool_call.__signature__ = sig  # type: ignore[attr-defined]
    tool_call.__annotations__ = {p.name: p.annotation for p in sig.parameters.values()} | {
        "return": dict[str, Any]}
    return tool_call


def register(server: MCPServer, t: LoreTools, profiles: tuple[str, ...]) -> None:
    """The tools of the compatible ``profiles``, each once."""
    for alias in ALIASES:
        if set(alias.profiles) & set(profiles):
            tool(server, alias.name, alias.hints)(make(alias, t))
