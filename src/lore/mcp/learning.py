"""Learning from corrections as MCP tools: record a correction, suggest a rule, read the rules,
review what was learned (list, approve, edit, reject, defer; the markdown review folder's
export and import).

The reinforcement profile's names (``record_correction``, ``suggest_rule``, ``get_preferences`` …) in
:mod:`lore.mcp.aliases` call the same functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from lore.mcp.tools import (
    READ,
    UPDATE,
    WRITE,
    LoreTools,
    StrList,
    tool,
)
from lore.policy import REQUESTS

if TYPE_CHECKING:
    from lore.api import Lore


# ---- learning from corrections -------------------------------------------------------------
async def record(t: LoreTools, ctx: Context | None, text: str, previous: str | None,
                  assistant_msg_id: str | None, project: str | None,
                  files: list[str] | None, force: bool = False) -> dict[str, Any]:
    proj = await t.project(ctx, project)

    def call(lore: Lore) -> dict[str, Any]:
        from lore.errors import InvalidInput

        prev, session_id = previous, None
        if assistant_msg_id:
            msg = lore.learning.imported_message(assistant_msg_id.strip())
            if msg is None:
                raise InvalidInput(f"no imported message has the id '{assistant_msg_id}' "
                                   "(pass the agent's words as 'previous' instead)")
            prev, session_id = prev or msg["text"], msg["session_id"]
        outcome = lore.learning.record(text, prev, project=proj or None, session_id=session_id,
                                        proposal_uuid=assistant_msg_id, files=files or [],
                                        origin="mcp", force=force)
        return outcome_payload(outcome)

    return dict(await t.run(call))


async def suggest(t: LoreTools, ctx: Context | None, rule: str, reason: str | None,
                   project: str | None, file_types: list[str] | None) -> dict[str, Any]:
    proj = await t.project(ctx, project)

    def call(lore: Lore) -> dict[str, Any]:
        return outcome_payload(lore.learning.suggest_rule(
            rule, reason, project=proj or None, file_types=file_types or []))

    return dict(await t.run(call))


def outcome_payload(outcome: Any) -> dict[str, Any]:
    lesson = outcome.lesson
    return {"action": outcome.action, "detected": outcome.detection.label,
            "type": outcome.detection.type, "related": outcome.related,
            "learned": outcome.learned,
            "notice": outcome.notice() or None,
            "rule": None if lesson is None else {
                "id": lesson.id, "title": lesson.title, "status": lesson.status,
                "score": lesson.score, "kind": lesson.kind,
                "rejected": lesson.preference.rejected if lesson.preference else None,
                "preferred": lesson.preference.preferred if lesson.preference else None}}


async def conversations(t: LoreTools, ctx: Context | None, query: str, project: str | None,
                        limit: int, min_score: float = 0.0, use_decay: bool | None = None,
                        rerank: bool | None = None) -> dict[str, Any]:
    """Past conversations that match: lore_search_conversations and the compatible names."""
    proj = (await t.scope(ctx, project, "conversations")).project
    found = await t.run(lambda lore: lore.conversations.find(
        query, project=proj, limit=limit, min_score=min_score, decay=use_decay,
        rerank=rerank))
    return {"query": query, "project": proj, "count": len(found.hits), **found.outcome(),
            "results": [h.to_dict() for h in found.hits]}


async def preferences(t: LoreTools, ctx: Context | None, project: str | None,
                      file_type: str | None, statuses: list[str] | None,
                      limit: int | None = None) -> dict[str, Any]:
    from lore import policy

    scope = await t.scope(ctx, project, "preferences")

    def call(lore: Lore) -> dict[str, Any]:
        found = lore.search.preferences(scope.project, all_projects=scope.every, file_type=file_type,
                                 statuses=policy.statuses(statuses, "preferences"),
                                 limit=policy.limit(limit, "preferences"))
        return {"project": scope.project, "count": len(found), "preferences": [
            {"id": p.id, "title": p.title, "rule": p.content, "status": p.status, "score": p.score,
             "kind": p.kind, "file_types": list(p.file_types),
             "scope": "global" if p.project is None else p.project,
             "occurrences": (p.metadata.get("learning") or {}).get("occurrences"),
             "conflicts": [e.to_id if e.from_id == p.id else e.from_id for e in p.edges
                           if e.relation == "contradicts"]} for p in found]}

    return dict(await t.run(call))


async def review_list(t: LoreTools, ctx: Context | None, project: str | None,
                      limit: int) -> dict[str, Any]:
    scope = await t.scope(ctx, project, "review")

    def call(lore: Lore) -> dict[str, Any]:
        items = lore.review.waiting(scope.project, all_projects=scope.every, limit=limit)
        return {"project": scope.project, "count": len(items), "waiting": items}

    return dict(await t.run(call))


async def review_action(t: LoreTools, lesson_id: str, action: str, **kw: Any) -> dict[str, Any]:
    def call(lore: Lore) -> dict[str, Any]:
        from lore.review.queue import review_meta

        lesson = lore.review.decide(lore.lessons.resolve_id(lesson_id), action, via="mcp", **kw)
        meta = (review_meta(lesson) or ("", {}))[1]
        return {"id": lesson.id, "title": lesson.title, "rule": lesson.content,
                "status": lesson.status, "reviewed": bool(meta.get("reviewed")),
                "review": meta.get("review")}

    return dict(await t.run(call))


async def review_folder(t: LoreTools, folder: str | None, what: str) -> dict[str, Any]:
    from pathlib import Path

    target = Path(folder).expanduser() if folder and folder.strip() else None

    def call(lore: Lore) -> dict[str, Any]:
        if what == "export":
            return dict(lore.review.export_folder(target))
        return dict(lore.review.import_folder(target))

    return dict(await t.run(call))


async def apply_rules(t: LoreTools, ctx: Context | None, project: str | None,
                      dry_run: bool) -> dict[str, Any]:
    import os
    from pathlib import Path

    from lore.errors import InvalidInput

    proj = await t.project(ctx, project)
    if not proj or not os.path.isdir(proj):  # False, not an error, for a name too long
        raise ToolError(str(InvalidInput(f"project must be an existing folder (got {proj!r})")))

    def call(lore: Lore) -> dict[str, Any]:
        plan = lore.apply.plan(proj, Path.home())
        written = [] if dry_run else [str(p) for p in plan.write()]
        return {"project": proj, "dry_run": dry_run, "diff": plan.diff(),
                "changed": [str(c.path) for c in plan.changed], "written": written,
                "skipped": [{"file": str(path), "id": s.rule_id, "reason": s.reason}
                            for path, s in plan.skipped]}

    return dict(await t.run(call))


TEXT = Annotated[str, Field(description="The user's words, verbatim (secrets are redacted).")]
PREVIOUS = Annotated[str | None, Field(description="What you (the agent) said or proposed "
                                        "that the user corrected.")]
RULE_ID = Annotated[str, Field(description="The rule's id (from lore_review_list).")]
PROJECT = Annotated[str | None, Field(description="Default: the current project; 'global' for "
                                       "a rule that holds everywhere.")]
FOLDER = Annotated[str | None, Field(description="The review folder; default: review.folder in "
                                      "the user's config, else review/ in the Lore home.")]


# ---- learning from the work --------------------------------------------------------------
async def trigger(t: LoreTools, ctx: Context | None, project: str | None, since: str | None,
                  commit: str | None) -> dict[str, Any]:
    """Analyse the project's changes whatever their score (a manual trigger), as `lore analyze --force`."""
    folder = await t.project(ctx, project)
    if not folder:
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError("give 'project': the folder of a git repository")
    return dict(await t.run(lambda lore: lore.analysis.analyze(
        folder, since=since, range_=commit, force=True, trigger="mcp").to_dict()))


def register(server: MCPServer, t: LoreTools) -> None:
    @tool(server, "lore_analyze", WRITE)
    async def lore_analyze(
        project: Annotated[str | None, Field(description="The repository folder; default: the "
                                             "current project.")] = None,
        since: Annotated[str | None, Field(description="A commit, branch or tag: its changes to "
                                           "the working tree.")] = None,
        commit: Annotated[str | None, Field(description="One commit, or a range A..B.")] = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Learn from the work: analyse the repository's changes now and propose lessons.

        Use after finishing a piece of work worth remembering (a fix found the hard way, a new
        pattern, a restructuring). Bypasses the significance threshold; without options it reads
        the last commit and the uncommitted work. Returns the score with its parts and the
        proposed lessons (they wait for the user's review; a known one is reinforced).
        Example: {"since": "main"}
        """
        return await trigger(t, ctx, project, since, commit)

    @tool(server, "lore_analysis_status", READ)
    async def lore_analysis_status(project: PROJECT = None, ctx: Context | None = None) -> dict[str, Any]:
        """What learning from the work has done: sessions seen, analysed and skipped (with why),
        lessons learned per kind, today's language-model tokens and cost, the last error.

        Example: {}
        """
        proj = await t.project(ctx, project) if project else None
        return dict(await t.run(lambda lore: lore.analysis.status(proj or None)))

    @tool(server, "lore_record_correction", WRITE)
    async def lore_record_correction(
        text: TEXT, previous: PREVIOUS = None, project: PROJECT = None,
        files: Annotated[StrList, Field(description="Files the exchange touched.")] = None,
        force: Annotated[bool, Field(description="Learn it even if it does not read as a rule: "
                                     "only when the user explicitly asked you to.")] = False,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Record that the user corrected you, so the next session does not repeat the mistake.

        Call it when the user rejects what you did or proposed and says what they want instead,
        or states a lasting preference ("always…", "never…", "from now on…"). Lore extracts the
        rule (rejected / preferred / why), reinforces it if already known, flags a conflict
        with a known rule, and scores it; active rules are injected into later sessions.
        Thanks, questions and pasted text teach nothing, and a rule naming no tool, file type,
        command, path or concrete practice stays a candidate: "notice" says why.
        Example: {"text": "No, don't use Redis, use local file sessions instead",
        "previous": "I'll add Redis for the session store."}
        """
        return await record(t, ctx, text, previous, None, project, files, force)

    @tool(server, "lore_suggest_rule", WRITE)
    async def lore_suggest_rule(
        rule: Annotated[str, Field(description="The rule, as an instruction for a future session.")],
        reason: Annotated[str | None, Field(description="Why you think the user wants it.")] = None,
        project: PROJECT = None,
        file_types: StrList = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Propose a rule you inferred from the user's behaviour; it waits for their review.

        Use when you noticed a pattern the user did not state outright (they rewrote your code
        the same way twice, they always ask for X). Never becomes active by itself.
        Example: {"rule": "Use httpx instead of requests", "reason": "the user replaced requests
        with httpx in two files", "file_types": ["py"]}
        """
        return await suggest(t, ctx, rule, reason, project, file_types)

    @tool(server, "lore_preferences", READ)
    async def lore_preferences(
        project: Annotated[str | None, Field(description="Default: the current project (plus "
                                             "global rules); 'all' for every project.")] = None,
        file_type: Annotated[str | None, Field(description="e.g. 'py': rules for it and "
                                               "general ones.")] = None,
        statuses: Annotated[StrList, Field(description="Default ['active', 'proposed']; "
                                           "['all'] for every status.")] = None,
        limit: Annotated[int, Field(ge=1, le=REQUESTS["preferences"].most)] = REQUESTS[
            "preferences"].limit,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """The user's preferences and rules that apply here, active first, then proposed ones.

        Example: {"file_type": "py"}
        """
        return await preferences(t, ctx, project, file_type, statuses, limit)

    @tool(server, "lore_review_list", READ)
    async def lore_review_list(
        project: Annotated[str | None, Field(description="Default: every project; a path for "
                                             "one project and global rules.")] = None,
        limit: Annotated[int, Field(ge=1, le=REQUESTS["review"].most)] = REQUESTS["review"].limit,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """What Lore learned and waits for the user's review: candidates, proposed rules and
        rules in conflict, each with the user's words verbatim, the agent turn they answered,
        session, date, project, occurrences, score and scope. Show them to the user and act
        only on their answer (lore_review_approve / _edit / _reject / _defer).
        Example: {}
        """
        return await review_list(t, ctx, project, limit)

    @tool(server, "lore_review_approve", UPDATE)
    async def lore_review_approve(lesson_id: RULE_ID) -> dict[str, Any]:
        """The user approved a learned rule: it becomes active and stays so (rescoring never
        demotes it). Only on the user's word. Example: {"lesson_id": "01JD…"}
        """
        return await review_action(t, lesson_id, "approve")

    @tool(server, "lore_review_edit", UPDATE)
    async def lore_review_edit(
        lesson_id: RULE_ID,
        title: Annotated[str | None, Field(description="The new title.")] = None,
        content: Annotated[str | None, Field(description="The new rule text.")] = None,
    ) -> dict[str, Any]:
        """The user reworded a learned rule: new title and/or text, then active.
        Example: {"lesson_id": "01JD…", "title": "Use httpx, not requests"}
        """
        return await review_action(t, lesson_id, "edit", title=title, content=content)

    @tool(server, "lore_review_reject", UPDATE)
    async def lore_review_reject(
        lesson_id: RULE_ID,
        reason: Annotated[str | None, Field(description="Why it is not a rule.")] = None,
    ) -> dict[str, Any]:
        """The user rejected a learned rule; the same correction later stays rejected.
        Example: {"lesson_id": "01JD…", "reason": "a one-off, not a rule"}
        """
        return await review_action(t, lesson_id, "reject", reason=reason)

    @tool(server, "lore_review_defer", UPDATE)
    async def lore_review_defer(lesson_id: RULE_ID) -> dict[str, Any]:
        """Not now: the rule leaves the review list until it is seen again.
        Example: {"lesson_id": "01JD…"}
        """
        return await review_action(t, lesson_id, "defer")

    @tool(server, "lore_review_export", WRITE)
    async def lore_review_export(folder: FOLDER = None) -> dict[str, Any]:
        """Write the markdown review folder (Obsidian-compatible) for the user to review in
        their editor: reviews/ holds one file per waiting rule with its evidence and the boxes
        approve / reject / defer and a reason line; rules/ the approved rules by project;
        archive/ the decided ones; index.md links them all. Files holding a decision not
        imported yet are never overwritten. Returns {folder, waiting, approved, archived,
        written, kept, notes}.
        Example: {}
        """
        return await review_folder(t, folder, "export")

    @tool(server, "lore_review_import", UPDATE)
    async def lore_review_import(folder: FOLDER = None) -> dict[str, Any]:
        """Apply the decisions the user made in the review folder's files: a ticked box
        decides, an edited rule text is approved as edited, the reason line is kept. A
        decision made elsewhere since the export wins, two ticked boxes decide nothing (both
        reported in "warnings"); importing twice changes nothing. Call it when the user says
        they reviewed the folder. Returns {approved, edited, rejected, deferred, undecided,
        unchanged, kept, warnings, applied}.
        Example: {}
        """
        return await review_folder(t, folder, "import")

    @tool(server, "lore_apply", UPDATE)
    async def lore_apply(
        project: Annotated[str | None, Field(description="The project folder; default: the "
                                             "current project.")] = None,
        dry_run: Annotated[bool, Field(description="True (default): return the diff only. "
                                       "False: write the files.")] = True,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Write the user's approved rules into CLAUDE.md, .claude/rules and ~/.claude/CLAUDE.md
        (Lore's own block only), as `lore apply` does with the user's apply settings.

        Call it with dry_run true first and show the user the diff; write (dry_run false) only
        when they agree. Returns {project, dry_run, diff, changed, written, skipped}.
        Example: {"dry_run": true}
        """
        return await apply_rules(t, ctx, project, dry_run)

