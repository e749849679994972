"""Read-only queries for the context injected at session start (no model, no writes)."""

from __future__ import annotations

import json
from typing import Any

RULE_KINDS = "('preference', 'project_rule', 'anti_pattern')"


def rules_and_preferences(conn: Any, project: str | None, limit: int,
                          status: str = "active") -> list[dict[str, Any]]:
    """Preferences and rules of this project and global ones in one status, most confident first."""
    return [dict(r) for r in conn.execute(
        "SELECT l.id, l.title, l.content, l.kind, l.project, l.pref_context, l.pref_rejected, "
        "l.pref_preferred, l.pref_reasoning, l.score, c.ordinal FROM lessons l "
        "JOIN confidence_levels c ON c.name = l.confidence "
        f"WHERE l.status = ? AND l.kind IN {RULE_KINDS} "
        "AND (l.project IS NULL OR l.project = ?) "
        "ORDER BY (l.project IS NOT NULL) DESC, coalesce(l.score, c.ordinal / 5.0) DESC, "
        "c.ordinal DESC, l.usage_count DESC, l.updated_at DESC "
        "LIMIT ?", (status, project, limit))]


def other_lessons(conn: Any, project: str | None, limit: int) -> list[dict[str, Any]]:
    """Other active lessons for this project (and global), by confidence, use and recency."""
    return [dict(r) for r in conn.execute(
        "SELECT l.id, l.title, l.kind FROM lessons l "
        "JOIN confidence_levels c ON c.name = l.confidence "
        f"WHERE l.status = 'active' AND l.kind NOT IN {RULE_KINDS} "
        "AND (l.project IS NULL OR l.project = ?) "
        "ORDER BY (l.project IS NOT NULL) DESC, c.ordinal DESC, l.usage_count DESC, "
        "l.updated_at DESC LIMIT ?", (project, limit))]


def session_files(conn: Any, session_id: str | None, limit: int = 20) -> list[str]:
    if not session_id:
        return []
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT file_path FROM file_edits WHERE session_id = ? ORDER BY id DESC LIMIT ?",
        (session_id, limit))]


def insert_snapshot(conn: Any, event_id: str, session_id: str | None, project: str | None,
                    at: str, data: dict[str, Any]) -> bool:
    cur = conn.execute(
        "INSERT OR IGNORE INTO snapshots (event_id, session_id, project, at, data) "
        "VALUES (?, ?, ?, ?, ?)", (event_id, session_id, project, at, json.dumps(data)))
    return cur.rowcount > 0
