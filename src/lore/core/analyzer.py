"""Learning from the work itself: a repository's changes (and a session's transcript) become
proposed lessons.

One run reads the changes with git (``capture.git``), scores them (``extract.significance``),
and when the score passes the project's threshold (or the run is forced) asks the language model
for knowledge entries (``extract.analysis``), or, with no model configured or a model that failed,
writes the summary without one. At the end of a session the pattern pass over its transcript
(``extract.session_learnings``) adds its findings. Every candidate is proposed (never active
until reviewed) and deduplicated against the lessons already known: the same title or an
embedding as close as a restated rule reinforces the known lesson with the new evidence. Each run
is recorded for ``lore analyze --status`` and ``learn_status``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lore import normalize
from lore.capture.git import (
    GitChanges,
    changes_in_range,
    changes_since_ref,
    changes_since_time,
    session_changes,
)
from lore.config import Settings
from lore.core.embedding import Embedding
from lore.core.learner import LEARNING, LearningTuning
from lore.core.lessons import Lessons
from lore.errors import BudgetExceeded, ConfigError, InvalidInput, MissingRef, NotFound, ProviderError
from lore.extract.analysis import KnowledgeEntry, analyze_changes
from lore.extract.session_learnings import (
    SessionLearning,
    SessionMessage,
    llm_session_learnings,
    messages_from_turns,
    session_learnings,
)
from lore.extract.significance import Correction, ProposedLesson, Significance, score, summarize
from lore.ids import now
from lore.models import Evidence, Filters
from lore.store import Store
from lore.store.rows import SessionStart
from lore.tuning import Bench, constant

TRIGGERS = ("command", "session_end", "mcp")
SOURCES = ("git", "conversation")  # what analysis and the session pass write as a lesson's source
MAX_EVIDENCE = 20
MAX_RELATED = 5  # related patterns looked up per lesson
MAX_EDGES = 5  # edges added per lesson
RELATION = "related_to"  # the edge kind (relation_types) for a related pattern
TITLE_CHARS = 90
GIT_STATES = ("commit", "no-commits", "no-git", "unreadable")  # what the SessionStart hook read
UNAVAILABLE = {"not-a-repository": "no git repository", "git-missing": "git is not installed",
               "git-failed": "git failed"}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A lesson to propose: its fields as ``Lessons.add`` takes them."""

    title: str
    content: str
    fields: dict[str, Any]


@dataclass(slots=True)
class Proposed:
    id: str | None
    title: str
    kind: str
    action: str  # created | reinforced | duplicate | would-propose (a dry run)
    related: list[str] = field(default_factory=list)  # lessons linked as related_to

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "kind": self.kind, "action": self.action,
                "related": self.related}


@dataclass(slots=True)
class Report:
    """What one run read, decided and stored."""

    trigger: str
    outcome: str  # analysed | summarised | skipped | failed
    reason: str = ""
    project: str | None = None
    session_id: str | None = None
    significance: Significance | None = None
    changes: GitChanges | None = None
    lessons: list[Proposed] = field(default_factory=list)
    error: str | None = None
    dry_run: bool = False
    start: dict[str, Any] | None = None  # where a session's diff began (session_end only)
    session_pass: dict[str, Any] | None = None  # which pass read the transcript, what it kept

    @property
    def created(self) -> int:
        return sum(p.action == "created" for p in self.lessons)

    @property
    def reinforced(self) -> int:
        return sum(p.action == "reinforced" for p in self.lessons)

    def to_dict(self) -> dict[str, Any]:
        c, s = self.changes, self.significance
        return {
            "trigger": self.trigger, "outcome": self.outcome, "reason": self.reason,
            "project": self.project, "session_id": self.session_id, "dry_run": self.dry_run,
            "changes": None if c is None or c.unavailable else {
                "base": c.base, "head": c.head, "branch": c.branch, "commits": [x.sha for x in c.commits],
                "files": len(c.files), "lines_added": c.added, "lines_removed": c.removed,
                "skipped": [{"path": f.path, "reason": f.reason} for f in c.skipped]},
            "significance": None if s is None else {
                "score": s.score, "threshold": s.threshold, "significant": s.significant, "forced": s.forced,
                "parts": [{"name": p.name, "points": p.points, "max_points": p.max_points, "detail": p.detail}
                          for p in s.parts]},
            "lessons": [p.to_dict() for p in self.lessons],
            "created": self.created, "reinforced": self.reinforced, "error": self.error,
            "start": self.start, "session_pass": self.session_pass,
        }


@dataclass(frozen=True)
class AnalysisTuning:
    """The analysis's constants (lore.tuning), by their former config keys."""

    # A learned lesson's related patterns become graph edges to lessons at least this close
    # (cosine of the pattern's name as a query with the lesson), besides those whose title names
    # it. Not chosen by a benchmark: set between the cosines measured on that page.
    related_similarity: float = constant(0.45, ge=0, le=1,
                                         by=Bench("", "docs/analysis.md#What is stored"))


ANALYSIS = AnalysisTuning()


class Analyzer:
    """Runs analyses for the facade's faces and the worker, and keeps their bookkeeping."""

    def __init__(self, store: Store, lessons: Lessons, embedding: Embedding, settings: Settings,
                 tuning: AnalysisTuning = ANALYSIS, learning: LearningTuning = LEARNING) -> None:
        self.store = store
        self.lessons = lessons
        self.embedding = embedding
        self.settings = settings
        self.cfg = settings.config.analysis
        self.tuning = tuning
        self.same_rule_similarity = learning.same_rule_similarity  # the learner's restatement test

    # ---- runs ------------------------------------------------------------------------------
    def analyze(self, path: str | Path, *, since: str | None = None, range_: str | None = None,
                force: bool = False, dry_run: bool = False, trigger: str = "command",
                session_id: str | None = None) -> Report:
        """Read ``path``'s changes (since ``since``, in ``range_`` A..B, or the last commit with
        the work in progress), score them and propose what they teach. Git errors raise."""
        if since and range_:
            raise InvalidInput("give --since or --range, not both")
        folder = Path(path).expanduser()
        if range_:
            changes = changes_in_range(folder, range_)
        elif since:
            changes = changes_since_ref(folder, since, worktree=True)
        else:  # the last commit and the work in progress (everything, in a young repository)
            try:
                changes = changes_since_ref(folder, "HEAD~1", worktree=True)
            except MissingRef:
                changes = changes_since_time(folder, "1970-01-01T00:00:00+00:00")
        return self._run(changes, trigger=trigger, force=force, dry_run=dry_run, session_id=session_id)

    def session_started(self, session_id: str, project: str | None, at: str,
                        git: dict[str, Any] | None = None) -> bool:
        """Remember when a session began and the commit it began from (``git``: what the
        SessionStart hook read, ``capture.githead.read_head``); the first SessionStart wins."""
        git = git if isinstance(git, dict) else {}
        state = git.get("state") if git.get("state") in GIT_STATES else None
        commit = git.get("commit") if state == "commit" and isinstance(git.get("commit"), str) else None
        branch = git.get("branch") if isinstance(git.get("branch"), str) else None
        return self.store.analysis.record_start(session_id, project, at, commit, branch, state)

    def session_ended(self, session_id: str, project: str | None, transcript: str | None, at: str,
                      *, event_id: str | None = None, model_called: bool = False) -> Report:
        """The worker's SessionEnd: the session's changes since it started, scored with its
        corrections, analysed above the threshold; its transcript's learnings proposed too. A
        folder without git is recorded as skipped, with the reason.

        The language model reads the transcript only when nothing else asked it about this
        session (``model_called``: the judge did; or the analysis of its changes did) and the
        pattern pass finds something in it to weigh: a session end is one reading of the
        session by the model at most, and none for a session with nothing to learn."""
        if event_id and self.store.analysis.has_run(event_id):
            return Report("session_end", "skipped", "already handled", project, session_id)
        corrections = [Correction(text, message_id)
                       for text, message_id in self.store.analysis.session_corrections(session_id)]
        messages = _transcript_messages(transcript)
        session_text = "\n".join(f"{m.role}: {m.text[:600]}" for m in messages
                                 if m.role in ("user", "assistant"))
        started = self.store.analysis.started_at(session_id) or at
        start = self.store.analysis.session_start(session_id)
        if not self.cfg.session_end or not project:
            report = Report("session_end", "skipped", "no project folder" if not project else
                            "analysis at session end is off", project, session_id)
        else:
            # A repository with no commit when the session began: all of its history is the session's.
            no_commits = start is not None and start["start_git"] == "no-commits"
            since = "1970-01-01T00:00:00+00:00" if no_commits else started
            changes = session_changes(project, since,
                                      start_commit=start["start_commit"] if start else None)
            if changes.unavailable:
                report = Report("session_end", "skipped", UNAVAILABLE[changes.unavailable], project,
                                session_id, changes=changes)
                if changes.unavailable == "git-failed":
                    report.error = changes.detail
            else:
                report = self._run(changes, trigger="session_end", session_id=session_id,
                                   corrections=corrections, session_text=session_text, record=False)
        if report.project is None:
            report.project = project
        report.start = _start_note(start, report.changes)
        if self.cfg.session_learnings and messages:
            self._session_pass(report, messages, session_id,
                               model=_why_no_model(model_called, report, messages, session_id))
        self._record(report, event_id=event_id)
        return report

    def learn_from_session(self, session: str, *, dry_run: bool = False, trigger: str = "command"
                           ) -> Report:
        """The session pass alone over one session's transcript: ``session`` is a transcript file
        or the id of an imported session. Proposed like SessionEnd's; no git is read."""
        path = Path(session).expanduser()
        session_id: str | None = None
        project: str | None = None
        if not path.is_file():
            row = self.store.conversations.session(session)
            if row is None:
                raise NotFound(f"no transcript file or imported session {session!r}; give a transcript "
                               "path or the id of a session imported with `lore ingest`")
            source = row["source_file"]
            if not source or not os.path.isfile(source):
                raise NotFound(f"session {session!r} has no transcript file on this machine any more")
            path, session_id, project = Path(source), session, row["project"]
        messages = _transcript_messages(str(path))
        if not messages:
            raise InvalidInput(f"{path} holds no messages Lore can read; give a Claude Code or Codex "
                               "transcript (.jsonl)")
        if session_id is None:  # a file: its name is the session id; an import knows the project
            session_id = path.stem
            known = self.store.conversations.session(session_id)
            project = known["project"] if known else None
        report = Report(trigger, "analysed", "session pass", project, session_id, dry_run=dry_run)
        self._session_pass(report, messages, session_id, dry_run=dry_run)
        if (report.session_pass or {}).get("by") != "llm":  # no model read it
            report.outcome = "summarised"
        if not dry_run:
            self._record(report)
        return report

    def _session_pass(self, report: Report, messages: Sequence[SessionMessage], session_id: str | None,
                      *, dry_run: bool = False, model: str | None = None) -> None:
        """The language model's pass over the session when a provider is configured; the pattern
        pass without one, or when the model fails (the error is reported). ``model``: why the
        model is not asked this time (the pattern pass reads the session alone, and the note
        says why), or None to ask it."""
        found: list[SessionLearning] | None = None
        note: dict[str, Any] = {"by": "patterns"}
        if self.settings.config.llm.provider and model is not None:
            note["llm_skipped"] = model
        elif self.settings.config.llm.provider:
            from lore.llm import open_provider

            try:
                provider = open_provider(self.settings.config.llm, self.settings.home)
                result = llm_session_learnings(provider, messages, session_id=session_id,
                                               max_input_tokens=self.settings.config.llm.max_input_tokens)
                found = list(result.learnings)
                note = {"by": "llm", "in_reply": result.proposed, "kept": len(found),
                        "dropped_without_quote": result.dropped_unquoted,
                        "quotes_not_in_transcript": result.quotes_dropped,
                        "messages_sent": result.messages_sent, "messages_left_out": result.messages_left_out}
            except (ProviderError, BudgetExceeded, ConfigError) as exc:
                note = {"by": "patterns", "llm_error": f"{type(exc).__name__}: {exc}"}
                report.error = report.error or note["llm_error"]
        if found is None:
            found = session_learnings(messages, session_id=session_id)
            note["kept"] = len(found)
        report.session_pass = note
        for learning in found:
            cand = _from_learning(learning, report.project)
            report.lessons.append(Proposed(None, cand.title, cand.fields["kind"], "would-propose")
                                  if dry_run else self.propose(cand))

    def _run(self, changes: GitChanges, *, trigger: str, force: bool = False, dry_run: bool = False,
             session_id: str | None = None, corrections: Sequence[Correction] = (),
             session_text: str = "", record: bool = True) -> Report:
        project = changes.root
        sig = score(changes, corrections=len(corrections), threshold=self.cfg.threshold_for(project),
                    force=force)
        report = Report(trigger, "skipped", "", project, session_id, sig, changes, dry_run=dry_run)
        if not changes.files and not changes.commits and not changes.submodules:
            report.reason = "no changes"
        elif not sig.significant:
            report.reason = f"score {sig.score} below threshold {sig.threshold}"
        else:
            candidates, report.outcome, report.error = self._candidates(
                changes, sig, corrections, session_id, session_text, project)
            report.reason = "manual trigger" if sig.forced and sig.score < sig.threshold else \
                f"score {sig.score} at or above threshold {sig.threshold}"
            for cand in candidates:
                report.lessons.append(Proposed(None, cand.title, cand.fields["kind"], "would-propose")
                                      if dry_run else self.propose(cand))
        if record and not dry_run:
            self._record(report)
        return report

    def _candidates(self, changes: GitChanges, sig: Significance, corrections: Sequence[Correction],
                    session_id: str | None, session_text: str, project: str | None
                    ) -> tuple[list[Candidate], str, str | None]:
        """The model's knowledge entries, or the summary without a model (also when it failed)."""
        error = None
        if self.settings.config.llm.provider:
            from lore.llm import open_provider

            try:
                provider = open_provider(self.settings.config.llm, self.settings.home)
                analysis = analyze_changes(provider, changes, session_text=session_text,
                                           corrections=corrections, session_id=session_id,
                                           max_input_tokens=self.settings.config.llm.max_input_tokens)
                if analysis.entries:
                    return ([_from_entry(e, changes, sig, session_id, project, self._levels())
                             for e in analysis.entries], "analysed", None)
                error = "the model proposed no knowledge entry"
            # UnusableReply is a ProviderError; ConfigError: a key or provider that is missing
            except (ProviderError, BudgetExceeded, ConfigError) as exc:
                error = f"{type(exc).__name__}: {exc}"
        lesson = summarize(changes, sig, corrections=corrections, session_id=session_id)
        return [_from_summary(lesson, project)], "summarised", error

    def _levels(self) -> dict[int, str]:
        return {r.ordinal: r.name for r in self.store.reference("confidence") if r.ordinal is not None}

    # ---- proposing -------------------------------------------------------------------------
    def propose(self, cand: Candidate) -> Proposed:
        """Store ``cand`` as a proposed lesson, or reinforce the known lesson it restates; its
        related patterns become edges to the lessons they name or resemble."""
        proposed = self._propose(cand)
        related = cand.fields.get("metadata", {}).get("analysis", {}).get("related_patterns") or []
        if proposed.id and proposed.action != "duplicate" and related:
            proposed.related = self.link_related(proposed.id, related, cand.fields.get("project"))
        return proposed

    def _propose(self, cand: Candidate) -> Proposed:
        same = self.known(cand)
        if same is None:
            lesson = self.lessons.add(cand.title, cand.content, **cand.fields)
            return Proposed(lesson.id, lesson.title, lesson.kind, "created")
        existing = self.lessons.get(same)
        seen = {(e.quote, e.source, e.session_id) for e in existing.evidence}
        new = [e for e in cand.fields.get("evidence", ())
               if (e["quote"], e.get("source"), e.get("session_id")) not in seen]
        if not new:
            return Proposed(existing.id, existing.title, existing.kind, "duplicate")
        meta = dict(existing.metadata.get("analysis") or {})
        meta["occurrences"] = int(meta.get("occurrences", 1)) + 1
        meta["last_seen"] = now()
        evidence = [e.to_dict() for e in existing.evidence] + new
        lesson = self.lessons.update(
            existing.id, evidence=evidence[-MAX_EVIDENCE:],
            metadata={**existing.metadata, "analysis": meta},
            tags=sorted({*existing.tags, *cand.fields.get("tags", ())}))
        return Proposed(lesson.id, lesson.title, lesson.kind, "reinforced")

    def known(self, cand: Candidate) -> str | None:
        """The id of a proposed or active lesson of this project (or global) that ``cand``
        restates: the same title, or an embedding at least ``learning.same_rule_similarity`` close."""
        seqs = self.store.allowed_seqs(
            Filters(statuses=("proposed", "active"), project=cand.fields.get("project")))
        if not seqs:
            return None
        brief = self.store.brief(seqs)
        title = normalize.context(cand.title)
        for row in brief.values():
            if normalize.context(row["title"]) == title:
                return str(row["id"])
        found = self.embedding.closest(cand.title, cand.content, seqs)
        if found is not None and found[1] >= self.same_rule_similarity:
            return str(brief[found[0]]["id"])
        return None

    def link_related(self, lesson_id: str, names: Sequence[str], project: str | None) -> list[str]:
        """``related_to`` edges from a learned lesson to the proposed or active lessons (of its
        project, and global ones) that its related patterns name (the pattern's words in the
        title) or resemble (the pattern as a query at least ``analysis.related_similarity``
        close to the lesson). Returns the ids linked."""
        names = list(dict.fromkeys(" ".join(n.split()) for n in names if n and n.strip()))[:MAX_RELATED]
        if not names:
            return []
        brief = self.store.brief(self.store.allowed_seqs(
            Filters(statuses=("proposed", "active"), project=project)))
        others = {seq: str(row["id"]) for seq, row in brief.items() if row["id"] != lesson_id}
        found: dict[str, str] = {}
        for name in names:
            words = re.compile(rf"(?<!\w){re.escape(normalize.context(name))}(?!\w)")
            for seq, lid in others.items():
                if len(name) >= 4 and words.search(normalize.context(brief[seq]["title"])):
                    found.setdefault(lid, name)
        rows = self.store.vectors_for(list(others)) if others else []
        if rows:
            self.embedding.check_model()
            matrix = np.stack([np.frombuffer(b, dtype=np.float32) for _, b in rows])
            for name in names:
                sims = matrix @ np.asarray(self.embedding.embedder.embed_query(name), dtype=np.float32)
                for (seq, _), sim in sorted(zip(rows, sims, strict=True), key=lambda x: -float(x[1])):
                    if float(sim) < self.tuning.related_similarity:
                        break
                    found.setdefault(others[seq], name)
        linked = list(found)[:MAX_EDGES]
        for target in linked:
            self.lessons.link(lesson_id, target, RELATION)
        return linked

    # ---- bookkeeping -----------------------------------------------------------------------
    def _record(self, report: Report, *, event_id: str | None = None) -> None:
        c, s = report.changes, report.significance
        self.store.analysis.record_run({
            "event_id": event_id, "at": now(), "trigger": report.trigger, "session_id": report.session_id,
            "project": report.project, "outcome": report.outcome, "reason": report.reason,
            "score": s.score if s else None, "threshold": s.threshold if s else None,
            "base": c.base if c else None, "head": c.head if c else None,
            "created": report.created, "reinforced": report.reinforced,
            "lesson_ids": [p.id for p in report.lessons if p.id], "error": report.error})

    def status(self, project: str | None = None) -> dict[str, Any]:
        """The monitoring figures of the analysis: sessions seen, analysed and skipped (with why),
        entries per kind, today's tokens and cost, the last error."""
        from lore.llm import usage_today

        summary = self.store.analysis.run_summary(project)
        outcomes = summary["outcomes"]
        usage = usage_today(self.settings.home).values()
        llm = self.settings.config.llm
        return {
            "project": project, **{k: summary[k] for k in ("sessions_seen",)},
            "analysed": outcomes.get("analysed", 0), "summarised": outcomes.get("summarised", 0),
            "skipped": outcomes.get("skipped", 0), "failed": outcomes.get("failed", 0),
            "skipped_by_reason": summary["skipped_by_reason"],
            "lessons_created": summary["created"], "lessons_reinforced": summary["reinforced"],
            "entries_by_kind": self.store.analysis.learned_by_kind(SOURCES, project),
            "llm": {"provider": llm.provider, "calls_today": sum(u.calls for u in usage),
                    "tokens_today": sum(u.tokens for u in usage),
                    "cost_today_usd": round(sum(u.cost_usd for u in usage), 6)},
            "threshold": self.cfg.threshold_for(project),
            "last_run": summary["last_run"], "last_error": summary["last_error"],
            "last_session_start": _session_start_view(summary["last_session_start"]),
        }


# ---- candidates ---------------------------------------------------------------------------------
def _evidence(items: Sequence[Evidence]) -> list[dict[str, Any]]:
    return [e.to_dict() for e in items]


def _clip(text: str, limit: int = TITLE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _from_entry(e: KnowledgeEntry, changes: GitChanges, sig: Significance, session_id: str | None,
                project: str | None, levels: dict[int, str]) -> Candidate:
    content = e.solution or e.summary
    related = list(e.related_patterns)
    if related:
        content += "\n\nRelated patterns: " + "; ".join(related)
    fields: dict[str, Any] = {
        "kind": e.kind, "status": "proposed", "source": "git", "project": project,
        "summary": e.summary or None, "problem_solved": e.problem or None,
        "when_to_apply": e.when_to_apply or None, "when_not_to_apply": e.when_not_to_apply or None,
        "examples": [{"code": x.code, "language": x.language, "context": x.context} for x in e.examples],
        "trade_offs": [{"type": t.type, "description": t.description} for t in e.trade_offs],
        "tags": [*e.tags, "analysis"], "evidence": _evidence(e.evidence),
        "source_notes": "analysed from git changes by the language model",
        "metadata": {"analysis": {"analysed": True, "occurrences": 1, "related_patterns": related,
                                  "commits": [c.sha for c in changes.commits], "session_id": session_id,
                                  "significance": sig.score, "lines_changed": changes.lines_changed}},
    }
    if e.confidence in levels:
        fields["confidence"] = levels[e.confidence]
    return Candidate(e.title, content, fields)


def _from_summary(lesson: ProposedLesson, project: str | None) -> Candidate:
    return Candidate(lesson.title, lesson.content, {
        "kind": lesson.kind, "status": "proposed", "source": "git", "project": project,
        "tags": [*lesson.tags, "analysis"], "evidence": _evidence(lesson.evidence),
        "source_notes": "summarised from git changes without a language model (not analysed)",
        "metadata": {"analysis": {"analysed": False, "occurrences": 1, **lesson.metadata}}})


def _from_learning(learning: SessionLearning, project: str | None) -> Candidate:
    by_model = learning.rule.startswith("llm:")
    content = learning.statement
    if learning.related:
        content += "\n\nRelated patterns: " + "; ".join(learning.related)
    return Candidate(_clip(learning.statement), content, {
        "kind": learning.kind, "status": "proposed", "source": "conversation", "project": project,
        "score": round(min(max(learning.confidence, 0.0), 1.0), 3), "tags": ["session"],
        "evidence": _evidence(learning.evidence),
        "source_notes": ("found in the session by the language model, its quotes checked against the "
                         "transcript" if by_model else
                         f"found in the session by the pattern pass ({learning.rule})"),
        "metadata": {"analysis": {"analysed": by_model, "occurrences": 1, "category": learning.category,
                                  "rule": learning.rule, "related_patterns": list(learning.related)}}})


START_WORDS = {"commit": "at a commit", "no-commits": "in a repository with no commit yet",
               "no-git": "without git (no repository)",
               "unreadable": "in a repository whose HEAD could not be read",
               None: "start commit not recorded"}


def _session_start_view(row: SessionStart | None) -> dict[str, Any] | None:
    """The latest recorded session start for the status: when, from which commit, or no git."""
    if row is None:
        return None
    return {"session_id": row["session_id"], "project": row["project"], "started_at": row["started_at"],
            "commit": row["start_commit"], "branch": row["start_branch"], "git": row["start_git"],
            "says": START_WORDS.get(row["start_git"], START_WORDS[None])}


def _start_note(start: SessionStart | None, changes: GitChanges | None) -> dict[str, Any]:
    """Where the session's diff began, in words for the status and the report (``start``:
    None when the session's start was not recorded)."""
    commit = start["start_commit"] if start else None
    state = start["start_git"] if start else None
    if changes is not None and commit and changes.base == commit:
        basis = "the commit the session started from"
    elif state == "no-git":
        basis = "no git repository when the session started"
    elif state == "no-commits":
        basis = "no commit yet when the session started: everything"
    elif changes is not None and changes.unavailable:
        basis = UNAVAILABLE[changes.unavailable]
    elif commit:
        basis = "the start commit is gone from the repository: the last commit before the start time"
    else:
        basis = "the last commit before the start time (no start commit recorded)"
    return {"commit": commit, "branch": start["start_branch"] if start else None, "git": state,
            "started_at": start["started_at"] if start else None, "diff_from": basis,
            "base": changes.base if changes is not None else None}


def _transcript_messages(transcript: str | None) -> list[Any]:
    if not transcript or not os.path.isfile(transcript):
        return []
    from lore.capture.readers import reader_for

    reader = reader_for(Path(transcript))
    if reader is None:
        return []
    return messages_from_turns(reader.read(Path(transcript)))


def _why_no_model(judged: bool, report: Report, messages: Sequence[SessionMessage],
                  session_id: str | None) -> str | None:
    """Why the model's session pass is skipped at a session end, or None to run it."""
    if judged:
        return "the judge already asked the model about this session"
    if report.outcome in ("analysed", "summarised"):  # a model configured is always tried there
        return "the analysis of its changes already asked the model"
    if not session_learnings(messages, session_id=session_id):
        return "the pattern pass finds nothing to weigh in it"
    return None
