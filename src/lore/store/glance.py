"""What waits for review and what the checks blocked, read at a glance: the status line
(`lore statusline`, run by Claude Code every few seconds) and the SessionStart nudge.

The standard library's sqlite3 on the file as it is (read-only, no migration, no model, no
sqlite-vec): importing this module leaves the rest of the store unloaded. A missing file or
an older schema reads as nothing to say.
"""

from __future__ import annotations

import sqlite3

# dataclasses and typing cost a status line more than its query: a plain class, names for mypy.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LIVE = ("candidate", "proposed", "active")


class Glance:
    """Rows the review logic decides on: (id, status, review fields) of live learned rules
    and lessons from the work, the proposed checks of rules in scope, and the checks' blocks
    since a time."""

    __slots__ = ("rules", "checks_waiting", "blocked")

    def __init__(self, rules: list[tuple[str, str, dict[str, Any]]] | None = None,
                 checks_waiting: int = 0, blocked: int = 0) -> None:
        self.rules = rules or []
        self.checks_waiting = checks_waiting
        self.blocked = blocked


def glance(db: str, project: str | None, since: str) -> Glance:
    """This project's and global rules (every project's when ``project`` is None); blocks
    recorded at or after ``since`` (an ISO time, as the store writes them)."""
    import os

    if not os.path.isfile(db):
        return Glance()
    # An SQLite URI: %, ? and # in the path are escaped (urllib costs more than the query).
    path = os.path.realpath(db).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    uri = f"file:{path}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=0.2)
    try:
        scope, args = ("", []) if project is None else (
            " AND (project IS NULL OR project = ?)", [project])
        lesson_scope = "" if project is None else " AND (l.project IS NULL OR l.project = ?)"
        # The review fields are read by SQLite's JSON functions: no json (nor re) imported here.
        fields = ("reviewed", "by_hand", "occurrences", "deferred_at", "deferred_seen")
        picks = ", ".join(f"json_extract(metadata, '$.{key}.{f}')" for key in
                          ("learning", "analysis") for f in fields)
        rows = conn.execute(
            f"SELECT id, status, json_type(metadata, '$.learning'), {picks} FROM lessons "
            "WHERE status IN ('candidate', 'proposed', 'active') AND (json_type(metadata, "
            "'$.learning') = 'object' OR json_type(metadata, '$.analysis') = 'object')"
            f"{scope}", args).fetchall()
        rules: list[tuple[str, str, dict[str, Any]]] = []
        for lesson_id, status, learning, *values in rows:
            key = "learning" if learning == "object" else "analysis"
            part = values[:5] if key == "learning" else values[5:]
            meta: dict[str, Any] = {f: v for f, v in zip(fields, part, strict=True)
                                    if v is not None}
            rules.append((lesson_id, status, {key: meta}))
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
    return Glance(rules, int(checks), int(blocked))
