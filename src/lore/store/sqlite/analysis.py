"""The bookkeeping of learning from the work: session starts, analysis runs, their status."""

from __future__ import annotations

import json
from typing import Any, cast

from lore.store.rows import (
    AnalysisRun,
    LessonActivity,
    LessonsAdded,
    NewRun,
    NewScheduleRun,
    RunSummary,
    ScheduleRun,
    SessionStart,
)
from lore.store.sqlite.db import Tables

RUN_COLUMNS = ("event_id", "at", "trigger", "session_id", "project", "outcome", "reason", "score",
               "threshold", "base", "head", "created", "reinforced", "lesson_ids", "error")


class AnalysisTables(Tables):
    """When sessions started, and what each analysis run decided."""

    def record_start(self, session_id: str, project: str | None, at: str,
                     start_commit: str | None = None, start_branch: str | None = None,
                     start_git: str | None = None) -> bool:
        """The first start of a session is kept (a resumed or compacted one starts again), with
        the commit it started from when the hook could read it."""
        cur = self.conn.execute(
            "INSERT INTO analysis_sessions "
            "(session_id, project, started_at, start_commit, start_branch, start_git) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (session_id, project, at, start_commit, start_branch, start_git))
        return cur.rowcount > 0

    def session_start(self, session_id: str) -> SessionStart | None:
        """The recorded start of a session: project, time, commit, branch, git state."""
        row = self.conn.execute(
            "SELECT session_id, project, started_at, start_commit, start_branch, start_git "
            "FROM analysis_sessions WHERE session_id = ?", (session_id,)).fetchone()
        return cast(SessionStart, dict(row)) if row else None

    def started_at(self, session_id: str) -> str | None:
        row = self.conn.execute("SELECT started_at FROM analysis_sessions WHERE session_id = ?",
                                (session_id,)).fetchone()
        if row is None:  # an imported transcript knows when the session began
            row = self.conn.execute("SELECT started_at FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return row[0] if row and row[0] else None

    def session_corrections(self, session_id: str) -> list[tuple[str, str | None]]:
        """The messages of a session the detector read as corrections or preferences."""
        return [(r[0], r[1]) for r in self.conn.execute(
            "SELECT user_message, message_uuid FROM corrections WHERE session_id = ? "
            "AND label IN ('correction', 'preference') ORDER BY at, id", (session_id,))]

    def has_run(self, event_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM analysis_runs WHERE event_id = ?",
                                 (event_id,)).fetchone() is not None

    def record_run(self, run: NewRun) -> int:
        given: dict[str, Any] = dict(run)
        values = {k: given.get(k) for k in RUN_COLUMNS}
        values["lesson_ids"] = json.dumps(list(run.get("lesson_ids") or []))
        values["created"] = int(run.get("created") or 0)
        values["reinforced"] = int(run.get("reinforced") or 0)
        rows = self.conn.execute(
            f"INSERT INTO analysis_runs ({', '.join(RUN_COLUMNS)}) "
            f"VALUES ({', '.join('?' for _ in RUN_COLUMNS)}) ON CONFLICT DO NOTHING RETURNING id",
            [values[k] for k in RUN_COLUMNS]).fetchall()
        return int(rows[0][0]) if rows else 0  # 0: this event's run was recorded before

    def record_schedule_run(self, run: NewScheduleRun) -> int:
        """Keep one scheduled run (``trigger``, ``started_at``, ``finished_at``, ``duration_ms``,
        ``outcome``, ``summary``, ``error``)."""
        return int(self.conn.execute(
            "INSERT INTO schedule_runs (trigger, started_at, finished_at, duration_ms, outcome, "
            "summary, error) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (run["trigger"], run["started_at"], run.get("finished_at"), run.get("duration_ms"),
             run["outcome"], json.dumps(run.get("summary") or {}), run.get("error"))
        ).fetchall()[0][0])

    def schedule_runs(self, limit: int) -> list[ScheduleRun]:
        """The latest scheduled runs, newest first."""
        rows = self.conn.execute(
            "SELECT id, trigger, started_at, finished_at, duration_ms, outcome, summary, error "
            "FROM schedule_runs ORDER BY started_at DESC, id DESC LIMIT ?", (limit,)).fetchall()
        return [{"id": r[0], "trigger": r[1], "started_at": r[2], "finished_at": r[3],
                 "duration_ms": r[4], "outcome": r[5], "summary": json.loads(r[6]), "error": r[7]}
                for r in rows]

    def lesson_activity(self, since: str) -> list[LessonActivity]:
        """Learned rules (metadata with a 'learning' record) created or changed at or after
        ``since`` (ISO text), oldest first: what a digest lists. ``review`` is the record of a
        person's decision, if any."""
        rows = self.conn.execute(
            "SELECT id, title, kind, status, project, source, created_at, "
            "json_extract(metadata, '$.learning.review') AS review, "
            "json_extract(metadata, '$.learning.rejected_reason') AS rejected_reason "
            "FROM lessons WHERE (created_at >= ? OR updated_at >= ?) "
            "AND json_extract(metadata, '$.learning') IS NOT NULL ORDER BY created_at, id",
            (since, since)).fetchall()
        return [{"id": r[0], "title": r[1], "kind": r[2], "status": r[3], "project": r[4],
                 "source": r[5], "created_at": r[6], "review": json.loads(r[7]) if r[7] else None,
                 "rejected_reason": r[8]} for r in rows]

    def lessons_added(self, since: str) -> list[LessonsAdded]:
        """How many lessons were created per day (``YYYY-MM-DD``) and project since ``since``."""
        return [{"day": r[0], "project": r[1], "count": r[2]} for r in self.conn.execute(
            "SELECT substr(created_at, 1, 10) AS day, project, count(*) FROM lessons "
            "WHERE created_at >= ? GROUP BY day, project ORDER BY day, project", (since,))]

    def run_summary(self, project: str | None) -> RunSummary:
        """Sessions seen, runs by outcome, skips by reason, the last run and the last error."""
        where, params = ("WHERE project = ?", [project]) if project else ("", [])
        and_ = "AND" if project else "WHERE"
        seen = self.conn.execute(
            "SELECT count(*) FROM (SELECT session_id FROM analysis_sessions "
            + ("WHERE project = ? " if project else "")
            + "UNION SELECT session_id FROM analysis_runs "
            f"{where} {and_} session_id IS NOT NULL)", params * 2).fetchone()[0]
        outcomes = {r[0]: r[1] for r in self.conn.execute(
            f"SELECT outcome, count(*) FROM analysis_runs {where} GROUP BY outcome", params)}
        skipped = {r[0]: r[1] for r in self.conn.execute(
            f"SELECT reason, count(*) FROM analysis_runs {where} {and_} outcome = 'skipped' "
            "GROUP BY reason ORDER BY count(*) DESC", params)}
        totals = self.conn.execute(
            f"SELECT coalesce(sum(created), 0), coalesce(sum(reinforced), 0) FROM analysis_runs {where}",
            params).fetchone()
        last = self.conn.execute(f"SELECT * FROM analysis_runs {where} ORDER BY id DESC LIMIT 1",
                                 params).fetchone()
        error = self.conn.execute(
            f"SELECT at, error FROM analysis_runs {where} {and_} error IS NOT NULL ORDER BY id DESC LIMIT 1",
            params).fetchone()
        start = self.conn.execute(
            "SELECT session_id, project, started_at, start_commit, start_branch, start_git "
            "FROM analysis_sessions " + ("WHERE project = ? " if project else "")
            + "ORDER BY started_at DESC, rowid DESC LIMIT 1", params).fetchone()
        return {"sessions_seen": seen, "outcomes": outcomes, "skipped_by_reason": skipped,
                "last_session_start": cast(SessionStart, dict(start)) if start else None,
                "created": totals[0], "reinforced": totals[1],
                "last_run": _run(last) if last else None,
                "last_error": {"at": error[0], "error": error[1]} if error else None}

    def learned_by_kind(self, sources: tuple[str, ...], project: str | None) -> dict[str, dict[str, int]]:
        """Lessons learned from the work, per kind and status."""
        marks = ", ".join("?" for _ in sources)
        extra, params = ("AND project = ?", [project]) if project else ("", [])
        out: dict[str, dict[str, int]] = {}
        for kind, status, n in self.conn.execute(
                f"SELECT kind, status, count(*) FROM lessons WHERE source IN ({marks}) {extra} "
                "GROUP BY kind, status ORDER BY kind, status", [*sources, *params]):
            out.setdefault(kind, {})[status] = n
        return out


def _run(row: Any) -> AnalysisRun:
    out = dict(row)
    out["lesson_ids"] = json.loads(out["lesson_ids"])
    return cast(AnalysisRun, out)
