"""Read-only queries for the context injected at session start (no model, no writes)."""

from __future__ import annotations

import json
from typing import Any, cast

from lore.models import RULE_KINDS
from lore.store.rows import ContextLoad, ContextLoadData, ContextRule, OtherLesson
from lore.store.sqlite.db import Tables

_RULE_KINDS = "(" + ", ".join(f"'{k}'" for k in RULE_KINDS) + ")"
# A lesson an active lesson supersedes (an edge "supersedes" to it) is not told: its successor is.
_NOT_SUPERSEDED = ("NOT EXISTS (SELECT 1 FROM edges e JOIN lessons s ON s.id = e.from_id "
                   "WHERE e.to_id = l.id AND e.relation = 'supersedes' AND s.status = 'active')")


class SessionTables(Tables):
    """What the SessionStart context reads, and what the worker keeps per session."""

    def rules_and_preferences(self, project: str | None, limit: int, status: str = "active",
                              min_seen: int = 1) -> list[ContextRule]:
        """Preferences and rules of this project and global ones in one status, most confident
        first; ``min_seen``: only rules learned that many times (a lesson added by hand counts once).
        Each row carries its ``metadata.learning`` as JSON text, for the caller's trust check."""
        vis, who = self._visible()
        return [cast(ContextRule, dict(r)) for r in self.conn.execute(
            "SELECT l.id, l.title, l.content, l.kind, l.project, l.pref_context, l.pref_rejected, "
            "l.pref_preferred, l.pref_reasoning, l.score, c.ordinal, "
            "json_extract(l.metadata, '$.learning') AS learning FROM lessons l "
            "JOIN confidence_levels c ON c.name = l.confidence "
            f"WHERE l.status = ? AND l.kind IN {_RULE_KINDS} "
            "AND (l.project IS NULL OR l.project = ?) "
            "AND coalesce(json_extract(l.metadata, '$.learning.occurrences'), 1) >= ? "
            f"AND {_NOT_SUPERSEDED} "
            f"{vis}ORDER BY (l.project IS NOT NULL) DESC, coalesce(l.score, c.ordinal / 5.0) DESC, "
            "c.ordinal DESC, l.usage_count DESC, l.updated_at DESC "
            "LIMIT ?", (status, project, min_seen, *who, limit))]


    def other_lessons(self, project: str | None, limit: int) -> list[OtherLesson]:
        """Other active lessons for this project (and global), by confidence, use and recency."""
        vis, who = self._visible()
        return [cast(OtherLesson, dict(r)) for r in self.conn.execute(
            "SELECT l.id, l.title, l.kind FROM lessons l "
            "JOIN confidence_levels c ON c.name = l.confidence "
            f"WHERE l.status = 'active' AND l.kind NOT IN {_RULE_KINDS} "
            "AND (l.project IS NULL OR l.project = ?) "
            f"AND {_NOT_SUPERSEDED} "
            f"{vis}ORDER BY (l.project IS NOT NULL) DESC, c.ordinal DESC, "
            "l.usage_count DESC, l.updated_at DESC LIMIT ?", (project, *who, limit))]

    def _visible(self) -> tuple[str, list[Any]]:
        """``Tables.visible`` as a clause to append (``AND … ``), or nothing."""
        sql, params = self.visible()
        return (f"AND {sql} " if sql else ""), params


    def session_files(self, session_id: str | None, limit: int = 20) -> list[str]:
        if not session_id:
            return []
        return [r[0] for r in self.conn.execute(
            "SELECT file_path FROM file_edits WHERE session_id = ? GROUP BY file_path "
            "ORDER BY max(id) DESC LIMIT ?", (session_id, limit))]


    def insert_snapshot(self, event_id: str, session_id: str | None, project: str | None,
                        at: str, data: dict[str, Any]) -> bool:
        cur = self.conn.execute(
            "INSERT INTO snapshots (event_id, session_id, project, at, data) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (event_id, session_id, project, at, json.dumps(data)))
        return cur.rowcount > 0

    def insert_context_load(self, event_id: str, session_id: str | None, project: str | None,
                            at: str, data: ContextLoadData) -> bool:
        cur = self.conn.execute(
            "INSERT INTO context_loads (event_id, session_id, project, at, shown, "
            "dropped, chars, dropped_chars, in_files) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (event_id, session_id, project, at, json.dumps(list(data.get("shown") or [])),
             json.dumps(list(data.get("dropped") or [])), int(data.get("chars") or 0),
             int(data.get("dropped_chars") or 0), json.dumps(list(data.get("in_files") or []))))
        return cur.rowcount > 0

    def context_loads(self, session_id: str | None, limit: int) -> list[ContextLoad]:
        """Recorded session starts, latest first (one session's when ``session_id`` is given)."""
        where, params = ("WHERE session_id = ? ", [session_id]) if session_id else ("", [])
        rows = self.conn.execute(
            "SELECT event_id, session_id, project, at, shown, dropped, chars, dropped_chars "
            f"FROM context_loads {where}ORDER BY at DESC, event_id DESC LIMIT ?",
            (*params, limit)).fetchall()
        return [cast(ContextLoad, {**dict(r), "shown": json.loads(r["shown"]),
                                   "dropped": json.loads(r["dropped"])}) for r in rows]
