"""`lore mcp`: the core API as MCP tools over stdio (official MCP SDK 2.x).

A canonical tool set (``lore_*``) covers everything the store can do. ``--profile``
adds the tool names and argument shapes of each design seed as thin aliases over
the same functions (``ai-lessons``: seed 001, ``self-learning``: seed 000).

Every tool runs its core call under one lock on one connection, so calls that the
SDK runs on worker threads never share the connection at the same time. Core
errors become tool errors (``is_error``) whose text tells the model what to do.

A request holding a lone UTF-16 surrogate escape ("\\ud800", written by JavaScript
clients that cut a string inside an emoji) is valid JSON to Python but not to the SDK's
stdio reader, which drops it without a reply. ``LoreMCPServer`` reads stdin itself and
turns such escapes into U+FFFD before the SDK parses the line; every tool's string
arguments are made storable (no lone surrogates, no NULs) before the tool runs.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
import sys
import threading
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.types import ToolAnnotations
from pydantic import Field

from lore.errors import LoreError, StoreBusy, os_error_message
from lore.models import Filters
from lore.normalize import storable_json
from lore.store.db import storage_error

if TYPE_CHECKING:
    from lore.api import Lore
    from lore.config import Settings

PROFILES = ("canonical", "ai-lessons", "self-learning", "self-reflect", "reinforcement", "all")
GLOBAL = ("global", "none", "")
EVERY_PROJECT = ("all", "*")

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                       open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                        open_world_hint=False)
UPDATE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                         open_world_hint=False)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                         open_world_hint=False)
# Searching bumps usage statistics, but changes nothing a user would call data.
SEARCH = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False,
                         open_world_hint=False)

INSTRUCTIONS = """\
Lore is the user's learning memory: corrections, preferences and lessons from earlier sessions.
Search it (lore_search) before choosing an approach the user may have an opinion on, and save a
lesson (lore_add) when the user corrects you, states a lasting preference, or when something took
debugging to learn. Search results are short; fetch a whole lesson with lore_get."""

StrList = list[str] | None


class LoreTools:
    """The tool implementations: argument handling, project scope, error translation."""

    def __init__(self, settings: Settings, lore: Lore | None = None) -> None:
        self.settings = settings
        self._lore = lore
        self._lock = threading.Lock()
        self._roots: str | None = None
        self._roots_checked = False
        self._warm_started = False

    @property
    def lore(self) -> Lore:
        if self._lore is None:
            # Imported here: numpy and the store are not needed to answer `initialize`.
            from lore.api import Lore

            self._lore = Lore.open(self.settings)
        return self._lore

    def start_warm(self) -> None:
        """Load the database, the model and the vectors on a background thread, once."""
        with self._lock:
            if self._warm_started:
                return
            self._warm_started = True
        threading.Thread(target=self._warm, name="lore-warm", daemon=True).start()

    def _warm(self) -> None:
        try:
            with self._lock:
                self.lore.warm()
        except Exception:  # noqa: BLE001 - a failed warm-up shows up on the first real call
            pass

    def close(self) -> None:
        with self._lock:
            if self._lore is not None:
                self._lore.close()

    async def run(self, fn: Callable[[Lore], Any]) -> Any:
        """Run a core call on a worker thread under the lock; LoreError -> tool error."""

        def call() -> Any:
            for attempt in range(3):
                try:
                    with self._lock:
                        return fn(self.lore)
                except StoreBusy:
                    if attempt == 2:
                        raise
            return None  # pragma: no cover

        self.start_warm()
        try:
            return await anyio.to_thread.run_sync(call)
        except StoreBusy as exc:
            raise ToolError(f"{exc} (retried 3 times)") from None
        except LoreError as exc:
            raise ToolError(str(exc)) from None
        except OSError as exc:  # a home that is a file, unreadable, read-only, full
            raise ToolError("; ".join(os_error_message(exc))) from None
        except Exception as exc:
            found = storage_error(exc, self.settings.db_path)  # SQLite: read-only, full disk
            if found is None:
                raise
            raise ToolError(str(found)) from None

    async def project(self, ctx: Context | None, given: str | None) -> str | None:
        """The project a call is about: the argument, else the client's root, else our cwd.

        Returns None for "every project" ('all' or '*'); '' for global lessons.
        """
        if given is not None:
            value = given.strip()
            if value.lower() in EVERY_PROJECT:
                return None
            if value.lower() in GLOBAL:
                return ""
            return str(Path(value).expanduser().resolve()) if os.path.isdir(value) else value
        if not self._roots_checked and ctx is not None:
            self._roots_checked = True
            self._roots = await _first_root(ctx)
        return self._roots or str(Path.cwd().resolve())


async def _first_root(ctx: Context) -> str | None:
    try:
        caps = ctx.client_capabilities
        if caps is None or caps.roots is None:
            return None
        with warnings.catch_warnings():
            # Deprecated in protocol 2026-07-28, but it is how today's clients say where they are.
            warnings.simplefilter("ignore")
            result = await ctx.session.list_roots()
    except Exception:  # noqa: BLE001 - roots are optional; any failure means "use the cwd"
        return None
    for root in result.roots:
        uri = str(root.uri)
        if uri.startswith("file://"):
            from urllib.parse import unquote, urlparse

            return str(Path(unquote(urlparse(uri).path)).resolve())
    return None


def _search_payload(query: str, hits: list[Any], explain: bool = False) -> dict[str, Any]:
    return {"query": query, "count": len(hits),
            "results": [h.to_dict(explain=explain) for h in hits]}


def _lesson_fields(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


def build_server(settings: Settings, profile: str = "canonical",
                 lore: Lore | None = None) -> tuple[MCPServer, LoreTools]:
    if profile not in PROFILES:
        raise LoreError(f"unknown profile '{profile}'; valid: {', '.join(PROFILES)}")
    tools = LoreTools(settings, lore)
    server = LoreMCPServer("lore", instructions=INSTRUCTIONS)
    _warm_after_handshake(server, tools)
    if profile in ("canonical", "all"):
        _register_canonical(server, tools)
    if profile in ("ai-lessons", "all"):
        _register_ai_lessons(server, tools)
    if profile in ("self-learning", "all"):
        _register_self_learning(server, tools)
    if profile in ("self-reflect", "all"):
        _register_self_reflect(server, tools)
    if profile in ("canonical", "all"):
        _register_learning(server, tools)
    if profile in ("reinforcement", "all"):
        _register_reinforcement(server, tools, with_conversations=profile != "all")
    return server, tools


class LoreMCPServer(MCPServer):
    """The SDK's server, reading stdin through ``_storable_stdin``."""

    async def run_stdio_async(self) -> None:
        async with _storable_stdin() as stdin, stdio_server(stdin=stdin) as (read, write):
            lowlevel = self._lowlevel_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())


# A JSON escape of a UTF-16 surrogate: a line with one may hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def storable_line(line: str) -> str:
    """A JSON-RPC line with every lone surrogate escape turned into U+FFFD (others untouched)."""
    if not _SURROGATE_ESCAPE.search(line):
        return line
    try:
        value = json.loads(line)
    except ValueError:
        return line  # not JSON: the SDK answers it as a parse error
    return json.dumps(storable_json(value), ensure_ascii=False) + "\n"


class _StorableLines:
    """stdin as the SDK's reader iterates it: text lines, each through ``storable_line``."""

    def __init__(self, binary: Any) -> None:
        import anyio

        self._file = anyio.wrap_file(binary)

    def __aiter__(self) -> _StorableLines:
        return self

    async def __anext__(self) -> str:
        raw = await self._file.readline()
        if not raw:
            raise StopAsyncIteration
        return storable_line(raw.decode("utf-8", "replace"))


@asynccontextmanager
async def _storable_stdin() -> AsyncIterator[Any]:
    """The wire's stdin, read through ``_StorableLines``. While serving, fd 0 points at the
    null device (as the SDK does), so a child process cannot read the client's requests."""
    try:
        wire = os.dup(sys.stdin.fileno())
        null = os.open(os.devnull, os.O_RDONLY)
    except (OSError, ValueError, AttributeError):  # no real stdin (embedded, tests): in place
        yield _StorableLines(sys.stdin.buffer)
        return
    os.dup2(null, 0)
    os.close(null)
    try:
        # closefd=False: a reader thread may still block on it after the server stops.
        yield _StorableLines(os.fdopen(wire, "rb", buffering=0, closefd=False))
    finally:
        os.dup2(wire, 0)


def _tool(server: MCPServer, name: str, annotations: ToolAnnotations) -> Callable[[Any], Any]:
    """Register a tool whose description is its docstring, dedented, and whose string
    arguments are made storable (lone surrogates and NULs become U+FFFD) before it runs."""

    def register(fn: Any) -> Any:
        @functools.wraps(fn)
        async def storable_call(*args: Any, **kwargs: Any) -> Any:
            return await fn(*args, **{k: storable_json(v) for k, v in kwargs.items()})

        return server.tool(name=name, annotations=annotations,
                           description=inspect.cleandoc(fn.__doc__ or ""))(storable_call)

    return register


def _warm_after_handshake(server: MCPServer, tools: LoreTools) -> None:
    """Start loading the model once the client sent `notifications/initialized`.

    Loading earlier would compete with the handshake for the CPU; clients that skip
    the notification still get a warm-up from their first tool call.
    """
    from mcp.types import NotificationParams

    async def initialized(ctx: Any, params: Any) -> None:
        tools.start_warm()

    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is not None and hasattr(lowlevel, "add_notification_handler"):
        lowlevel.add_notification_handler("notifications/initialized", NotificationParams,
                                          initialized)


def _register_canonical(server: MCPServer, t: LoreTools) -> None:  # noqa: C901 - one table of tools
    @_tool(server, "lore_search", SEARCH)
    async def lore_search(
        query: Annotated[str, Field(description="What you are about to do or want to know.")],
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        tags: StrList = None,
        contexts: Annotated[StrList, Field(description="Situations you are in, e.g. "
                                           "'shared team branch'.")] = None,
        min_confidence: str | None = None,
        sources: StrList = None,
        kinds: StrList = None,
        statuses: Annotated[StrList, Field(description="Default ['active']; [] for all.")] = None,
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
        proj = await t.project(ctx, project)
        filters = Filters(
            tags=tuple(tags or ()), contexts=tuple(contexts or ()), min_confidence=min_confidence,
            sources=tuple(sources or ()), kinds=tuple(kinds or ()),
            statuses=tuple(statuses) if statuses is not None else ("active",),
            project=proj if proj != "" else None, file_types=tuple(file_types or ()),
        )
        hits = await t.run(lambda lore: lore.recall(query, filters, limit, interface="mcp"))
        return _search_payload(query, hits, explain)

    @_tool(server, "lore_get", READ)
    async def lore_get(
        id: Annotated[str, Field(description="Lesson id (a ULID from lore_search).")],
    ) -> dict[str, Any]:
        """Get one lesson in full: content, preference, contexts, examples, trade-offs, evidence, links.

        Use after lore_search when a result looks relevant.
        Example: {"id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}
        """
        lesson = await t.run(lambda lore: lore.get_lesson(id.strip()))
        return lesson.to_dict()

    @_tool(server, "lore_add", WRITE)
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
        fields = _lesson_fields(
            kind=kind, tags=tags, contexts=contexts, anti_contexts=anti_contexts,
            confidence=confidence, source=source, source_notes=source_notes, project=proj,
            file_types=file_types, summary=summary, problem_solved=problem_solved,
            when_to_apply=when_to_apply, when_not_to_apply=when_not_to_apply,
            preference=preference, examples=examples, trade_offs=trade_offs, evidence=evidence,
            status=status,
        )
        lesson = await t.run(lambda lore: lore.add_lesson(title, content, **fields))
        return lesson.to_dict()

    @_tool(server, "lore_update", UPDATE)
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
        fields = _lesson_fields(
            title=title, content=content, kind=kind, status=status, confidence=confidence,
            source=source, source_notes=source_notes, project=proj, tags=tags,
            contexts=contexts, anti_contexts=anti_contexts, file_types=file_types,
            summary=summary, problem_solved=problem_solved, when_to_apply=when_to_apply,
            when_not_to_apply=when_not_to_apply, preference=preference, examples=examples,
            trade_offs=trade_offs, evidence=evidence,
        )
        if not fields:
            raise ToolError("nothing to change: give at least one field besides id")
        lesson = await t.run(lambda lore: lore.update_lesson(id.strip(), **fields))
        return lesson.to_dict()

    @_tool(server, "lore_delete", DELETE)
    async def lore_delete(id: str) -> dict[str, Any]:
        """Delete a lesson with its tags, evidence and links. Cannot be undone.

        Prefer lore_update with status "archived" or "superseded" unless the lesson is wrong.
        Example: {"id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}
        """
        lesson = await t.run(lambda lore: lore.delete_lesson(id.strip()))
        return {"deleted": lesson.id, "title": lesson.title}

    @_tool(server, "lore_related", READ)
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
        found = await t.run(lambda lore: lore.related(id.strip(), depth, relations or (),
                                                        direction))
        return {"id": id, "related": [r.to_dict() for r in found]}

    @_tool(server, "lore_link", WRITE)
    async def lore_link(
        from_id: str,
        to_id: str,
        relation: Annotated[str, Field(description="related_to, derived_from, contradicts, "
                                       "supersedes, example_of, … (free-form)")] = "related_to",
    ) -> dict[str, Any]:
        """Link two lessons: from_id --relation--> to_id.

        Example: {"from_id": "01JD…A", "to_id": "01JD…B", "relation": "supersedes"}
        """
        edge = await t.run(lambda lore: lore.link(from_id.strip(), to_id.strip(), relation))
        return edge.to_dict()

    @_tool(server, "lore_unlink", DELETE)
    async def lore_unlink(from_id: str, to_id: str, relation: str | None = None) -> dict[str, Any]:
        """Remove the link(s) from one lesson to another (one relation, or all of them).

        Example: {"from_id": "01JD…A", "to_id": "01JD…B", "relation": "related_to"}
        """
        n = await t.run(lambda lore: lore.unlink(from_id.strip(), to_id.strip(), relation))
        return {"removed": n}

    @_tool(server, "lore_tags", READ)
    async def lore_tags() -> dict[str, Any]:
        """Every tag in use with how many lessons carry it. Example: {}"""
        tags = await t.run(lambda lore: lore.list_tags())
        return {"tags": [{"tag": tag, "count": n} for tag, n in tags]}

    @_tool(server, "lore_sources", READ)
    async def lore_sources() -> dict[str, Any]:
        """Valid sources of a lesson (tested, documented, correction …). Example: {}"""
        items = await t.run(lambda lore: lore.list_sources())
        return {"sources": [i.to_dict() for i in items]}

    @_tool(server, "lore_confidence_levels", READ)
    async def lore_confidence_levels() -> dict[str, Any]:
        """Valid confidence levels, lowest first, with their ordinals. Example: {}"""
        items = await t.run(lambda lore: lore.list_confidence_levels())
        return {"confidence_levels": [i.to_dict() for i in items]}

    @_tool(server, "lore_kinds", READ)
    async def lore_kinds() -> dict[str, Any]:
        """Valid kinds of lesson (preference, project_rule, bug_fix …). Example: {}"""
        items = await t.run(lambda lore: lore.list_kinds())
        return {"kinds": [i.to_dict() for i in items]}

    @_tool(server, "lore_status", READ)
    async def lore_status() -> dict[str, Any]:
        """Counts of lessons by kind, status, confidence and project; database size; embedding model.

        Example: {}
        """
        return await t.run(lambda lore: lore.stats())


def _register_ai_lessons(server: MCPServer, t: LoreTools) -> None:
    """Seed 001 §10 names and arguments."""

    @_tool(server, "learn", WRITE)
    async def learn(
        title: str, content: str, tags: StrList = None, contexts: StrList = None,
        anti_contexts: StrList = None, confidence: str | None = None, source: str | None = None,
        source_notes: str | None = None, ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Add a lesson (seed 001 name for lore_add): when you had to debug or iterate to find a solution.

        Example: {"title": "Jira API rate limit", "content": "Back off on 429 …", "tags": ["jira"],
        "confidence": "medium", "source": "tested"}
        """
        proj = await t.project(ctx, None)
        fields = _lesson_fields(tags=tags, contexts=contexts, anti_contexts=anti_contexts,
                                confidence=confidence, source=source, source_notes=source_notes,
                                project=proj)
        lesson = await t.run(lambda lore: lore.add_lesson(title, content, **fields))
        return {"id": lesson.id, "title": lesson.title}

    @_tool(server, "recall", SEARCH)
    async def recall(
        query: str, tags: StrList = None, contexts: StrList = None,
        min_confidence: str | None = None, source: str | None = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> dict[str, Any]:
        """Search lessons (seed 001 name for lore_search, every project). Example: {"query": "rate limits"}"""
        filters = Filters(tags=tuple(tags or ()), contexts=tuple(contexts or ()),
                          min_confidence=min_confidence, sources=(source,) if source else ())
        hits = await t.run(lambda lore: lore.recall(query, filters, limit, interface="mcp"))
        return _search_payload(query, hits)

    @_tool(server, "get_lesson", READ)
    async def get_lesson(lesson_id: str) -> dict[str, Any]:
        """Get a lesson by id (seed 001). Example: {"lesson_id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}"""
        return (await t.run(lambda lore: lore.get_lesson(lesson_id.strip()))).to_dict()

    @_tool(server, "update_lesson", UPDATE)
    async def update_lesson(
        lesson_id: str, title: str | None = None, content: str | None = None,
        tags: StrList = None, contexts: StrList = None, anti_contexts: StrList = None,
        confidence: str | None = None, source: str | None = None, source_notes: str | None = None,
    ) -> dict[str, Any]:
        """Change a lesson (seed 001). Example: {"lesson_id": "01JD…", "confidence": "high"}"""
        fields = _lesson_fields(title=title, content=content, tags=tags, contexts=contexts,
                                anti_contexts=anti_contexts, confidence=confidence, source=source,
                                source_notes=source_notes)
        if not fields:
            raise ToolError("nothing to change: give at least one field besides lesson_id")
        lesson = await t.run(lambda lore: lore.update_lesson(lesson_id.strip(), **fields))
        return {"updated": True, "id": lesson.id}

    @_tool(server, "delete_lesson", DELETE)
    async def delete_lesson(lesson_id: str) -> dict[str, Any]:
        """Delete a lesson (seed 001). Example: {"lesson_id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}"""
        await t.run(lambda lore: lore.delete_lesson(lesson_id.strip()))
        return {"deleted": True, "id": lesson_id}

    @_tool(server, "related", READ)
    async def related(lesson_id: str, depth: Annotated[int, Field(ge=1, le=10)] = 1,
                      relations: StrList = None) -> dict[str, Any]:
        """Lessons linked to a lesson (seed 001). Example: {"lesson_id": "01JD…", "depth": 2}"""
        found = await t.run(lambda lore: lore.related(lesson_id.strip(), depth, relations or ()))
        return {"related": [r.to_dict() for r in found]}

    @_tool(server, "link", WRITE)
    async def link(from_id: str, to_id: str, relation: str = "related_to") -> dict[str, Any]:
        """Link two lessons (seed 001). Example: {"from_id": "01JD…A", "to_id": "01JD…B",
        "relation": "derived_from"}"""
        edge = await t.run(lambda lore: lore.link(from_id.strip(), to_id.strip(), relation))
        return {"linked": True, **edge.to_dict()}

    @_tool(server, "tags", READ)
    async def tags(with_counts: bool = False) -> dict[str, Any]:
        """Tags in use (seed 001). Example: {"with_counts": true}"""
        found = await t.run(lambda lore: lore.list_tags())
        return {"tags": [{"tag": g, "count": n} for g, n in found] if with_counts
                else [g for g, _ in found]}

    @_tool(server, "sources", READ)
    async def sources() -> dict[str, Any]:
        """Valid sources (seed 001). Example: {}"""
        return {"sources": [i.to_dict() for i in await t.run(lambda lore: lore.list_sources())]}

    @_tool(server, "confidence_levels", READ)
    async def confidence_levels() -> dict[str, Any]:
        """Valid confidence levels (seed 001). Example: {}"""
        items = await t.run(lambda lore: lore.list_confidence_levels())
        return {"confidence_levels": [i.to_dict() for i in items]}


LEARN_TYPES = Literal["code_pattern", "bug_fix", "architecture", "project_rule"]


def _register_self_learning(server: MCPServer, t: LoreTools) -> None:
    """Seed 000 §3 names and arguments."""

    @_tool(server, "learn_search", SEARCH)
    async def learn_search(
        query: str,
        type: LEARN_TYPES | None = None,
        project: str | None = None,
        min_confidence: Annotated[int, Field(ge=1, le=5)] = 3,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Search the knowledge base for patterns, bug fixes and learnings (seed 000); counts usage.

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

    @_tool(server, "learn_get", READ)
    async def learn_get(id: str) -> dict[str, Any]:
        """Full details of one knowledge entry (seed 000). Example: {"id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"}"""
        return (await t.run(lambda lore: lore.get_lesson(id.strip()))).to_dict()

    @_tool(server, "learn_status", READ)
    async def learn_status(project: str | None = None) -> dict[str, Any]:
        """Statistics about learned knowledge (seed 000). Example: {}"""
        stats = await t.run(lambda lore: lore.stats())
        if project:
            stats["project"] = project
            stats["project_lessons"] = stats["by_project"].get(project, 0)
        return stats

    @_tool(server, "learn_trigger", READ)
    async def learn_trigger(scope: Literal["session", "commit", "files"] = "session",
                            target: str | None = None) -> dict[str, Any]:
        """Ask Lore to analyse a session, commit or files for lessons (seed 000). Not available yet.

        Example: {"scope": "commit", "target": "HEAD"}
        """
        return {
            "triggered": False,
            "scope": scope,
            "target": target,
            "message": "Automatic analysis of sessions, commits and files is not available in "
                       "this version of Lore. Save what you learned with lore_add (or learn) "
                       "instead.",
        }


def _register_self_reflect(server: MCPServer, t: LoreTools) -> None:
    """Seed 003 (reflect_on_past, store_reflection) and seed 004 (get_related_conversations)."""

    async def search(ctx: Context | None, query: str, project: str | None, limit: int,
                     min_score: float, use_decay: bool | None) -> dict[str, Any]:
        proj = await t.project(ctx, project)
        hits = await t.run(lambda lore: lore.conversations.search(
            query, project=proj or None, limit=limit, min_score=min_score, decay=use_decay))
        return {"query": query, "project": proj, "count": len(hits),
                "results": [h.to_dict() for h in hits]}

    @_tool(server, "reflect_on_past", READ)
    async def reflect_on_past(
        query: Annotated[str, Field(description="What to look for in past conversations.")],
        project: Annotated[str | None, Field(description="Default: the current project; "
                                             "'all' for every project.")] = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
        min_score: Annotated[float, Field(ge=0)] = 0.0,
        use_decay: Annotated[bool | None, Field(description="Favour recent conversations "
                                                "(default: on, 90-day scale).")] = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Search past conversations (imported transcripts) for what was said or decided before.

        Use for "have we seen this error before?", "what did we decide about X?". Results carry
        session, date, project and a snippet; read one in context with the CLI's
        `lore recall turns CHUNK`.
        Example: {"query": "ECONNRESET from the payments API", "limit": 5}
        """
        return await search(ctx, query, project, limit, min_score, use_decay)

    @_tool(server, "get_related_conversations", READ)
    async def get_related_conversations(
        query: str, limit: Annotated[int, Field(ge=1, le=50)] = 5, ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Past conversations related to a topic, across every project (seed 004).

        Example: {"query": "database migration rollback", "limit": 5}
        """
        return await search(ctx, query, "all", limit, 0.0, None)

    @_tool(server, "store_reflection", WRITE)
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
        title = content.strip().split("\n")[0][:80] or "Reflection"
        lesson = await t.run(lambda lore: lore.add_lesson(
            title, content, kind="reflection", tags=tags or [], project=proj, source="conversation"))
        return {"stored": True, "id": lesson.id, "title": lesson.title}


# ---- learning from corrections -------------------------------------------------------------
async def _record(t: LoreTools, ctx: Context | None, text: str, previous: str | None,
                  assistant_msg_id: str | None, project: str | None,
                  files: list[str] | None) -> dict[str, Any]:
    proj = await t.project(ctx, project)

    def call(lore: Lore) -> dict[str, Any]:
        from lore.errors import InvalidInput
        from lore.learn import Learning
        from lore.store import learning as q

        prev, session_id = previous, None
        if assistant_msg_id:
            msg = q.message(lore.conn, assistant_msg_id.strip())
            if msg is None:
                raise InvalidInput(f"no imported message has the id '{assistant_msg_id}' "
                                   "(pass the agent's words as 'previous' instead)")
            prev, session_id = prev or msg["text"], msg["session_id"]
        outcome = Learning(lore).record(text, prev, project=proj or None, session_id=session_id,
                                        proposal_uuid=assistant_msg_id, files=files or [],
                                        origin="mcp")
        return _outcome_payload(outcome)

    return dict(await t.run(call))


async def _suggest(t: LoreTools, ctx: Context | None, rule: str, reason: str | None,
                   project: str | None, file_types: list[str] | None) -> dict[str, Any]:
    proj = await t.project(ctx, project)

    def call(lore: Lore) -> dict[str, Any]:
        from lore.learn import Learning

        return _outcome_payload(Learning(lore).suggest_rule(
            rule, reason, project=proj or None, file_types=file_types or []))

    return dict(await t.run(call))


def _outcome_payload(outcome: Any) -> dict[str, Any]:
    lesson = outcome.lesson
    return {"action": outcome.action, "detected": outcome.detection.label,
            "type": outcome.detection.type, "related": outcome.related,
            "rule": None if lesson is None else {
                "id": lesson.id, "title": lesson.title, "status": lesson.status,
                "score": lesson.score, "kind": lesson.kind,
                "rejected": lesson.preference.rejected if lesson.preference else None,
                "preferred": lesson.preference.preferred if lesson.preference else None}}


async def _preferences(t: LoreTools, ctx: Context | None, project: str | None,
                       file_type: str | None, statuses: list[str] | None) -> dict[str, Any]:
    proj = await t.project(ctx, project)

    def call(lore: Lore) -> dict[str, Any]:
        from lore.learn import Learning

        found = Learning(lore).preferences(proj or None, all_projects=proj is None,
                                           file_type=file_type,
                                           statuses=tuple(statuses or ("active", "proposed")))
        return {"project": proj, "count": len(found), "preferences": [
            {"id": p.id, "title": p.title, "rule": p.content, "status": p.status, "score": p.score,
             "kind": p.kind, "file_types": list(p.file_types),
             "scope": "global" if p.project is None else p.project,
             "occurrences": (p.metadata.get("learning") or {}).get("occurrences"),
             "conflicts": [e.to_id if e.from_id == p.id else e.from_id for e in p.edges
                           if e.relation == "contradicts"]} for p in found]}

    return dict(await t.run(call))


_TEXT = Annotated[str, Field(description="The user's words, verbatim (secrets are redacted).")]
_PREVIOUS = Annotated[str | None, Field(description="What you (the agent) said or proposed "
                                        "that the user corrected.")]
_PROJECT = Annotated[str | None, Field(description="Default: the current project; 'global' for "
                                       "a rule that holds everywhere.")]


def _register_learning(server: MCPServer, t: LoreTools) -> None:
    @_tool(server, "lore_record_correction", WRITE)
    async def lore_record_correction(
        text: _TEXT, previous: _PREVIOUS = None, project: _PROJECT = None,
        files: Annotated[StrList, Field(description="Files the exchange touched.")] = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Record that the user corrected you, so the next session does not repeat the mistake.

        Call it when the user rejects what you did or proposed and says what they want instead,
        or states a lasting preference ("always…", "never…", "from now on…"). Lore extracts the
        rule (rejected / preferred / why), reinforces it if already known, flags a conflict
        with a known rule, and scores it; active rules are injected into later sessions.
        Example: {"text": "No, don't use Redis, use local file sessions instead",
        "previous": "I'll add Redis for the session store."}
        """
        return await _record(t, ctx, text, previous, None, project, files)

    @_tool(server, "lore_suggest_rule", WRITE)
    async def lore_suggest_rule(
        rule: Annotated[str, Field(description="The rule, as an instruction for a future session.")],
        reason: Annotated[str | None, Field(description="Why you think the user wants it.")] = None,
        project: _PROJECT = None,
        file_types: StrList = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Propose a rule you inferred from the user's behaviour; it waits for their review.

        Use when you noticed a pattern the user did not state outright (they rewrote your code
        the same way twice, they always ask for X). Never becomes active by itself.
        Example: {"rule": "Use httpx instead of requests", "reason": "the user replaced requests
        with httpx in two files", "file_types": ["py"]}
        """
        return await _suggest(t, ctx, rule, reason, project, file_types)

    @_tool(server, "lore_preferences", READ)
    async def lore_preferences(
        project: Annotated[str | None, Field(description="Default: the current project (plus "
                                             "global rules); 'all' for every project.")] = None,
        file_type: Annotated[str | None, Field(description="e.g. 'py': rules for it and "
                                               "general ones.")] = None,
        statuses: Annotated[StrList, Field(description="Default ['active', 'proposed'].")] = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """The user's preferences and rules that apply here, active first, then proposed ones.

        Example: {"file_type": "py"}
        """
        return await _preferences(t, ctx, project, file_type, statuses)


def _register_reinforcement(server: MCPServer, t: LoreTools, with_conversations: bool) -> None:
    """Seed 004's tool names and arguments."""

    @_tool(server, "search_memory", SEARCH)
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
        return _search_payload(query, hits)

    @_tool(server, "get_project_rules", READ)
    async def get_project_rules(project_path: str | None = None,
                                ctx: Context | None = None) -> dict[str, Any]:
        """The active and proposed rules for a project (default: the current one) and global ones.

        Example: {"project_path": "/home/me/shop"}
        """
        return await _preferences(t, ctx, project_path, None, None)

    @_tool(server, "get_preferences", READ)
    async def get_preferences(category: Annotated[str | None, Field(
            description="A file type such as 'py' or 'qmd'; default: every preference.")] = None,
            project_path: str | None = None, ctx: Context | None = None) -> dict[str, Any]:
        """The user's preferences, optionally for one file type.

        Example: {"category": "py"}
        """
        return await _preferences(t, ctx, project_path, category, None)

    @_tool(server, "why_this_rule", READ)
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

    @_tool(server, "record_correction", WRITE)
    async def record_correction(
        user_correction: _TEXT,
        assistant_msg_id: Annotated[str | None, Field(description="Id (uuid) of your message "
                                                      "the user corrected, if imported.")] = None,
        previous: _PREVIOUS = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Record that the user corrected you (seed 004); the rule is extracted and scored.

        Example: {"user_correction": "No, use pnpm, not npm", "previous": "I'll run npm install."}
        """
        return await _record(t, ctx, user_correction, previous, assistant_msg_id, None, None)

    @_tool(server, "suggest_rule", WRITE)
    async def suggest_rule(rule_text: str, reason: str | None = None,
                           ctx: Context | None = None) -> dict[str, Any]:
        """Propose a rule for the user's review (seed 004); never active by itself.

        Example: {"rule_text": "Render the QMD document as the last step", "reason": "asked 3 times"}
        """
        return await _suggest(t, ctx, rule_text, reason, None, None)

    if with_conversations:
        @_tool(server, "get_related_conversations", READ)
        async def get_related_conversations(
            query: str, limit: Annotated[int, Field(ge=1, le=50)] = 5, ctx: Context | None = None,
        ) -> dict[str, Any]:
            """Past conversations related to a topic, across every project.

            Example: {"query": "database migration rollback", "limit": 5}
            """
            hits = await t.run(lambda lore: lore.conversations.search(query, project=None,
                                                                       limit=limit))
            return {"query": query, "count": len(hits), "results": [h.to_dict() for h in hits]}
