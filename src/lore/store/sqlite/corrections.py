"""SQL for learning from corrections: captured messages, their verdicts, rule candidates and
the agent's file edits waiting for a silent-fix check."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from lore.models import RULE_KINDS
from lore.store.rows import (
    Correction,
    ImportedMessage,
    LearnedCorrection,
    RuleCandidate,
    SessionSpan,
    UncheckedEdit,
)
from lore.store.sqlite.db import Tables

LEARNING_STATUSES = ("candidate", "proposed", "active")


class CorrectionTables(Tables):
    """Captured messages and their verdicts, learned-rule lookups, the agent's edits to check."""

    # Each session's first correction (its project and time); SQLite returns the project of the
    # row that holds min(at), a backend without that rule says so its own way.
    FIRST_CORRECTIONS = ("SELECT session_id, project, min(at) AS at FROM corrections "
                         "WHERE session_id IS NOT NULL GROUP BY session_id")

    def add_correction(self, *, event_id: str, session_id: str | None, project: str | None,
                       user_message: str, proposal: str | None, files: Sequence[str], at: str,
                       origin: str, message_uuid: str | None = None, proposal_uuid: str | None = None,
                       diff: str | None = None, correction_type: str | None = None) -> int | None:
        """Store one captured message; None when this session already holds the same message."""
        rows = self.conn.execute(
            "INSERT INTO corrections (event_id, session_id, project, user_message, "
            "assistant_proposal, files, at, origin, message_uuid, proposal_uuid, diff, correction_type, "
            "author, device) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING RETURNING id",
            (event_id, session_id, project, user_message, proposal, json.dumps(list(files)), at, origin,
             message_uuid, proposal_uuid, diff, correction_type, *self.who)).fetchall()
        return int(rows[0][0]) if rows else None


    def correction(self, correction_id: int) -> Correction | None:
        row = self.conn.execute("SELECT * FROM corrections WHERE id = ?", (correction_id,)).fetchone()
        return cast(Correction, dict(row)) if row else None


    def pending(self, limit: int) -> list[Correction]:
        """Captured messages the detector has not looked at yet, oldest first."""
        return [cast(Correction, dict(r)) for r in self.conn.execute(
            "SELECT * FROM corrections WHERE status = 'new' ORDER BY id LIMIT ?", (limit,))]


    def judging(self, *, session_id: str | None = None, since: str | None = None,
                limit: int = 2000, given_up: bool = False) -> list[Correction]:
        """Captured messages waiting for the judge (status 'judging'; with ``given_up``, also
        those it left unanswered too often, 'unjudged'), oldest first; of one session, or
        captured at or after ``since``."""
        where: list[str] = ["status IN ('judging', 'unjudged')" if given_up else "status = 'judging'"]
        params: list[Any] = []
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        if since is not None:
            where.append("at >= ?")
            params.append(since)
        return [cast(Correction, dict(r)) for r in self.conn.execute(
            f"SELECT * FROM corrections WHERE {' AND '.join(where)} ORDER BY id LIMIT ?",
            (*params, limit))]

    def judging_count(self) -> tuple[int, int]:
        """Messages waiting for the judge, and the sessions they belong to."""
        row = self.conn.execute("SELECT count(*), count(DISTINCT coalesce(session_id, '')) FROM "
                                "corrections WHERE status = 'judging'").fetchone()
        return int(row[0]), int(row[1]) if row[0] else 0

    def unjudged(self) -> tuple[int, str | None]:
        """Messages the judge was asked about too often without an answer, and the reason
        recorded on the latest of them."""
        row = self.conn.execute("SELECT count(*) FROM corrections WHERE status = 'unjudged'").fetchone()
        if not row[0]:
            return 0, None
        last = self.conn.execute("SELECT action FROM corrections WHERE status = 'unjudged' "
                                 "ORDER BY id DESC LIMIT 1").fetchone()
        return int(row[0]), last[0] if last else None

    def drop_unsettled(self, session_ids: Sequence[str]) -> int:
        """Remove the captured messages of these sessions that no verdict has settled yet (new,
        waiting for the judge or given up by it); returns how many."""
        removed = 0
        for sid in session_ids:
            removed += self.conn.execute(
                "DELETE FROM corrections WHERE session_id = ? AND status IN ('new', 'judging', "
                "'unjudged')", (sid,)).rowcount
        return removed

    def set_judge_attempt(self, correction_id: int, status: str, action: str) -> None:
        """A judge's attempt that gave no verdict: the message's status and what happened."""
        self.conn.execute("UPDATE corrections SET status = ?, action = ? WHERE id = ?",
                          (status, action, correction_id))

    def set_verdict(self, correction_id: int, *, status: str, label: str | None,
                    correction_type: str | None, durable: bool | None, probability: float | None,
                    cues: Sequence[str], lesson_id: str | None, action: str | None) -> None:
        self.conn.execute(
            "UPDATE corrections SET status = ?, label = ?, correction_type = coalesce(?, correction_type), "
            "durable = ?, probability = ?, cues = ?, lesson_id = ?, action = ? WHERE id = ?",
            (status, label, correction_type, None if durable is None else int(durable), probability,
             json.dumps(list(cues)), lesson_id, action, correction_id))


    def list_corrections(self, project: str | None, limit: int, *, all_projects: bool = False,
                         labels: Sequence[str] = ()) -> list[Correction]:
        where, params = ["TRUE"], []
        if not all_projects:
            where.append("project IS ?")
            params.append(project)
        if labels:
            where.append(f"label IN ({','.join('?' * len(labels))})")
            params += list(labels)
        return [cast(Correction, dict(r)) for r in self.conn.execute(
            f"SELECT * FROM corrections WHERE {' AND '.join(where)} ORDER BY at DESC, id DESC LIMIT ?",
            (*params, limit))]


    def rule_candidates(self, project: str | None,
                        statuses: Sequence[str] = LEARNING_STATUSES) -> list[RuleCandidate]:
        """Rules a new one may restate or contradict: this project's and global ones."""
        marks_k = ",".join("?" * len(RULE_KINDS))
        marks_s = ",".join("?" * len(statuses))
        return [cast(RuleCandidate, dict(r)) for r in self.conn.execute(
            f"SELECT seq, id, title, content, kind, status, project, pref_rejected, pref_preferred, "
            f"metadata FROM lessons WHERE kind IN ({marks_k}) AND status IN ({marks_s}) "
            f"AND (project IS NULL OR project IS ?)",
            (*RULE_KINDS, *statuses, project))]


    WORK_SOURCES = ("git", "conversation")  # lessons the analysis of the work proposes

    def work_lesson_ids(self, project: str | None, *, all_projects: bool, limit: int) -> list[str]:
        """Ids of proposed lessons from the analysis of the work (git changes, session
        transcripts), newest first; another user's personal lessons are not among them."""
        where = ["l.status = 'proposed'", f"l.source IN ({','.join('?' * len(self.WORK_SOURCES))})"]
        params: list[Any] = [*self.WORK_SOURCES]
        if not all_projects:
            where.append("(l.project IS NULL OR l.project IS ?)")
            params.append(project)
        visible, who = self.visible()
        if visible:
            where.append(visible)
            params += who
        return [r[0] for r in self.conn.execute(
            f"SELECT l.id FROM lessons l WHERE {' AND '.join(where)} ORDER BY l.updated_at DESC "
            "LIMIT ?", (*params, limit))]

    def learned_rule_ids(self) -> list[str]:
        """Every lesson the learning pipeline scores (its metadata has a 'learning' entry)."""
        return [r[0] for r in self.conn.execute(
            "SELECT id FROM lessons WHERE json_extract(metadata, '$.learning') IS NOT NULL")]


    def preferences(self, project: str | None, *, all_projects: bool, file_type: str | None,
                    statuses: Sequence[str], limit: int) -> list[str]:
        """Ids of rules that apply: project (and global) scope, a file type or none, by status
        and score; another user's personal rules are not among them."""
        where = [f"l.kind IN ({','.join('?' * len(RULE_KINDS))})",
                 f"l.status IN ({','.join('?' * len(statuses))})"]
        params: list[Any] = [*RULE_KINDS, *statuses]
        if not all_projects:
            where.append("(l.project IS NULL OR l.project IS ?)")
            params.append(project)
        if file_type:
            where.append("(EXISTS (SELECT 1 FROM lesson_file_types f WHERE f.lesson_id = l.id AND "
                         "f.file_type = ?) OR NOT EXISTS (SELECT 1 FROM lesson_file_types f "
                         "WHERE f.lesson_id = l.id))")
            params.append(file_type)
        visible, who = self.visible()
        if visible:
            where.append(visible)
            params += who
        order = "CASE l.status WHEN 'active' THEN 0 WHEN 'proposed' THEN 1 ELSE 2 END"
        return [r[0] for r in self.conn.execute(
            f"SELECT l.id FROM lessons l WHERE {' AND '.join(where)} "
            f"ORDER BY {order}, coalesce(l.score, 0) DESC, l.updated_at DESC LIMIT ?", (*params, limit))]


    def unchecked_edits(self, *, session_id: str | None = None, project: str | None = None,
                        before: str | None = None, limit: int = 500) -> list[UncheckedEdit]:
        """The agent's successful edits not compared with the files yet, oldest first."""
        where, params = ["e.checked_at IS NULL", "coalesce(e.succeeded, 1) = 1"], []
        if session_id is not None:
            where.append("e.session_id = ?")
            params.append(session_id)
        if project is not None:
            where.append("s.project IS ?")
            params.append(project)
        if before is not None:
            where.append("coalesce(e.timestamp, '') <= ?")
            params.append(before)
        return [cast(UncheckedEdit, dict(r)) for r in self.conn.execute(
            "SELECT e.id, e.session_id, e.message_uuid, e.tool, e.file_path, e.file_type, e.old_text, "
            "e.new_text, e.timestamp, s.project FROM file_edits e JOIN sessions s ON s.id = e.session_id "
            f"WHERE {' AND '.join(where)} ORDER BY e.id LIMIT ?", (*params, limit))]


    def mark_edits_checked(self, ids: Sequence[int], at: str) -> None:
        self.conn.executemany("UPDATE file_edits SET checked_at = ? WHERE id = ?", [(at, i) for i in ids])


    def message(self, uuid: str) -> ImportedMessage | None:
        """One imported transcript message by its uuid, with its session's project."""
        row = self.conn.execute(
            "SELECT m.uuid, m.session_id, m.role, m.text, m.timestamp, s.project FROM messages m "
            "JOIN sessions s ON s.id = m.session_id WHERE m.uuid = ?", (uuid,)).fetchone()
        return cast(ImportedMessage, dict(row)) if row else None

    # ---- measures: the learning curve and whether rules are followed -----------------------
    def learned_corrections(self) -> list[LearnedCorrection]:
        """Messages the learner merged into a rule, oldest first: the rule and what it did."""
        return [cast(LearnedCorrection, dict(r)) for r in self.conn.execute(
            "SELECT c.id, c.session_id, c.project, c.at, c.lesson_id, c.action, c.files "
            "FROM corrections c WHERE c.lesson_id IS NOT NULL ORDER BY c.at, c.id")]

    def session_spans(self) -> list[SessionSpan]:
        """Every session seen (imported, or only through captured messages): its project, its
        first moment and the file types it edited."""
        rows: dict[str, SessionSpan] = {}
        for r in self.conn.execute("SELECT id, project, coalesce(started_at, ended_at) AS at "
                                   "FROM sessions"):
            rows[r["id"]] = {"id": r["id"], "project": r["project"], "at": r["at"],
                             "file_types": set()}
        for r in self.conn.execute(self.FIRST_CORRECTIONS):
            row = rows.setdefault(r["session_id"], {"id": r["session_id"], "project": r["project"],
                                                    "at": r["at"], "file_types": set()})
            if not row["at"] or (r["at"] and r["at"] < row["at"]):
                row["at"] = r["at"]
        for r in self.conn.execute("SELECT DISTINCT session_id, file_type FROM file_edits "
                                   "WHERE file_type IS NOT NULL"):
            if r["session_id"] in rows:
                rows[r["session_id"]]["file_types"].add(r["file_type"])
        return sorted(rows.values(), key=lambda x: (x["at"] or "", x["id"]))

    def sessions_mentioning(self, term: str) -> set[str]:
        """Sessions whose messages contain ``term`` (case-insensitive)."""
        return {r[0] for r in self.conn.execute(
            "SELECT DISTINCT session_id FROM messages WHERE instr(lower(text), ?) > 0 "
            "AND injected = 0", (term.casefold(),))}
