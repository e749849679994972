"""What waits for review and what the checks blocked, read at a glance: the status line
(`lore statusline`, run by Claude Code every few seconds) and the SessionStart nudge.

The standard library's sqlite3 on the file as it is (read-only, no migration, no model, no
sqlite-vec): importing this module leaves the rest of the store unloaded. A missing file or
an older schema reads as nothing to say.
"""

from __future__ import annotations

import json
import sqlite3

# dataclasses and typing cost a status line more than its query: a plain class, names for mypy.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

LIVE = ("candidate", "proposed", "active")


class Glance:
    """Rows the review logic decides on: (id, status, metadata) of live learned rules and
    lessons from the work, the statuses of the rules they conflict with, the proposed
    checks of rules in scope, and the checks' blocks since a time."""

    __slots__ = ("rules", "statuses", "checks_waiting", "blocked")

    def __init__(self, rules: list[tuple[str, str, dict[str, Any]]] | None = None,
                 statuses: dict[str, str] | None = None, checks_waiting: int = 0,
                 blocked: int = 0) -> None:
        self.rules = rules or []
        self.statuses = statuses or {}
        self.checks_waiting = checks_waiting
        self.blocked = blocked


def glance(db: Path, project: str | None, since: str) -> Glance:
    """This project's and global rules (every project's when ``project`` is None); blocks
    recorded at or after ``since`` (an ISO time, as the store writes them)."""
    if not db.is_file():
        return Glance()
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=0.2)
    try:
        scope, args = ("", []) if project is None else (
            " AND (project IS NULL OR project = ?)", [project])
        rows = conn.execute(
            "SELECT id, status, metadata FROM lessons WHERE status IN ('candidate', 'proposed', "
            "'active') AND (json_extract(metadata, '$.learning') IS NOT NULL OR "
            f"json_extract(metadata, '$.analysis') IS NOT NULL){scope}", args).fetchall()
        rules = []
        for lesson_id, status, raw in rows:
            try:
                meta = json.loads(raw or "{}")
            except ValueError:
                continue
            if isinstance(meta, dict):
                rules.append((lesson_id, status, meta))
        named = sorted({str(c) for _, _, m in rules
                        for c in (m.get("learning") or {}).get("conflicts") or []})
        statuses: dict[str, str] = {}
        for start in range(0, len(named), 500):
            part = named[start:start + 500]
            statuses.update(conn.execute(
                f"SELECT id, status FROM lessons WHERE id IN ({', '.join('?' * len(part))})",
                part).fetchall())
        lesson_scope = "" if project is None else " AND (l.project IS NULL OR l.project = ?)"
        checks = conn.execute(
            "SELECT count(*) FROM checks c JOIN lessons l ON l.id = c.lesson_id "
            f"WHERE c.status = 'proposed'{lesson_scope}", args).fetchone()[0]
        event_scope = "" if project is None else " AND (project IS NULL OR project = ?)"
        blocked = conn.execute(
            "SELECT count(*) FROM check_events WHERE outcome = 'blocked' AND at >= ?"
            f"{event_scope}", [since, *args]).fetchone()[0]
    except sqlite3.Error:
        return Glance()
    finally:
        conn.close()
    return Glance(rules, statuses, int(checks), int(blocked))
