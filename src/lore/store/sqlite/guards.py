"""Checks on rules and what they matched (portable SQL: the Postgres backend uses it as is)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from lore.store.rows import (
    Check,
    CheckChanges,
    CheckEvent,
    HookEdit,
    LaterTurn,
    LoadedSession,
    NewCheck,
    ToolCallTurn,
)
from lore.store.sqlite.db import Tables

CHECK_COLUMNS = ("id", "lesson_id", "command", "path", "content", "tool", "mode", "status",
                 "origin", "note", "allowed_until", "created_at", "updated_at", "reviewed_at")
EVENT_COLUMNS = ("event_id", "check_id", "lesson_id", "session_id", "project", "at", "tool",
                 "outcome", "matched")


class GuardTables(Tables):
    """``checks`` (one row per check on a rule) and ``check_events`` (one row per match the
    hooks reported: blocked, reminded, allowed, ran)."""

    def insert_check(self, row: NewCheck) -> None:
        values: dict[str, object] = dict(row)
        cols = [c for c in CHECK_COLUMNS if c in values]
        self.conn.execute(f"INSERT INTO checks ({', '.join(cols)}) VALUES "
                          f"({', '.join('?' for _ in cols)})", [values[c] for c in cols])

    def update_check(self, check_id: str, changes: CheckChanges) -> bool:
        values: dict[str, object] = dict(changes)
        cols = [c for c in CHECK_COLUMNS if c in values and c != "id"]
        if not cols:
            return False
        cur = self.conn.execute(
            f"UPDATE checks SET {', '.join(f'{c} = ?' for c in cols)} WHERE id = ?",
            [*(values[c] for c in cols), check_id])
        return bool(cur.rowcount > 0)

    def delete_check(self, check_id: str) -> bool:
        self.conn.execute("DELETE FROM check_events WHERE check_id = ?", (check_id,))
        cur = self.conn.execute("DELETE FROM checks WHERE id = ?", (check_id,))
        return bool(cur.rowcount > 0)

    def check(self, check_id: str) -> Check | None:
        row = self.conn.execute(f"SELECT {', '.join(CHECK_COLUMNS)} FROM checks WHERE id = ?",
                                (check_id,)).fetchone()
        return cast(Check, dict(row)) if row else None

    def check_ids_with_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        """Check ids starting with ``prefix`` (upper case), by a range on the primary key."""
        return [r[0] for r in self.conn.execute(
            "SELECT id FROM checks WHERE id >= ? AND id <= ? ORDER BY id LIMIT ?",
            (prefix, prefix + "Z" * (26 - len(prefix)), limit))]

    def checks(self, lesson_ids: Sequence[str] | None = None,
               statuses: Sequence[str] | None = None) -> list[Check]:
        """Checks, oldest first; of these rules and in these statuses when given."""
        where: list[str] = []
        params: list[Any] = []
        if lesson_ids is not None:
            if not lesson_ids:
                return []
            where.append(f"lesson_id IN ({', '.join('?' for _ in lesson_ids)})")
            params.extend(lesson_ids)
        if statuses:
            where.append(f"status IN ({', '.join('?' for _ in statuses)})")
            params.extend(statuses)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        return [cast(Check, dict(r)) for r in self.conn.execute(
            f"SELECT {', '.join(CHECK_COLUMNS)} FROM checks{clause} ORDER BY created_at, id",
            params)]

    def checked_lessons(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT DISTINCT lesson_id FROM checks")}

    def add_events(self, rows: Sequence[CheckEvent]) -> int:
        """Store matches once each (``event_id``: the hook event and the check)."""
        n = 0
        for row in rows:
            values: dict[str, object] = dict(row)
            cur = self.conn.execute(
                f"INSERT INTO check_events ({', '.join(EVENT_COLUMNS)}) VALUES "
                f"({', '.join('?' for _ in EVENT_COLUMNS)}) ON CONFLICT DO NOTHING",
                [values.get(c) for c in EVENT_COLUMNS])
            n += max(cur.rowcount, 0)
        return n

    def events(self, lesson_id: str | None = None, check_id: str | None = None,
               limit: int = 1_000_000) -> list[CheckEvent]:
        """Matches, oldest first."""
        where: list[str] = []
        params: list[Any] = []
        if lesson_id:
            where.append("lesson_id = ?")
            params.append(lesson_id)
        if check_id:
            where.append("check_id = ?")
            params.append(check_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        return [cast(CheckEvent, dict(r)) for r in self.conn.execute(
            f"SELECT {', '.join(EVENT_COLUMNS)} FROM check_events{clause} ORDER BY at, event_id "
            "LIMIT ?", [*params, limit])]

    def tool_calls(self, project: str | None, since: str | None) -> list[ToolCallTurn]:
        """Assistant turns with tool calls, in session order, of a project (every project when
        None), with the session's id and project."""
        where, params = _scoped(["m.role = 'assistant'", "m.tool_calls <> '[]'"], project,
                                "m.timestamp", since)
        return [cast(ToolCallTurn, dict(r)) for r in self.conn.execute(
            "SELECT m.seq, m.uuid, m.session_id, s.project, m.timestamp, m.tool_calls "
            "FROM messages m JOIN sessions s ON s.id = m.session_id "
            f"WHERE {' AND '.join(where)} ORDER BY m.session_id, m.seq", params)]

    def hook_edits(self, project: str | None, since: str | None) -> list[HookEdit]:
        """File changes the PostToolUse hook recorded in sessions whose transcript was not
        imported (an imported one holds the same calls), in session order."""
        where, params = _scoped(
            ["NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = e.session_id)"],
            project, "e.timestamp", since)
        return [cast(HookEdit, dict(r)) for r in self.conn.execute(
            "SELECT e.id, e.session_id, s.project, e.timestamp, e.tool, e.file_path, e.new_text, "
            "e.succeeded FROM file_edits e JOIN sessions s ON s.id = e.session_id "
            f"WHERE {' AND '.join(where)} ORDER BY e.session_id, e.id", params)]

    def corrected_after(self, session_id: str, at: str | None) -> str | None:
        """The first message captured as a correction in the session after ``at`` (or None)."""
        row = self.conn.execute(
            "SELECT user_message FROM corrections WHERE session_id = ? AND status <> 'dismissed' "
            "AND at > ? ORDER BY at LIMIT 1", (session_id, at or "")).fetchone()
        return str(row[0]) if row else None

    def turns_after(self, session_id: str, seq: int, limit: int) -> list[LaterTurn]:
        """The turns after one, in order (role, text, meta)."""
        return [cast(LaterTurn, dict(r)) for r in self.conn.execute(
            "SELECT seq, role, text, is_meta, injected FROM messages WHERE session_id = ? "
            "AND seq > ? AND is_sidechain = 0 ORDER BY seq LIMIT ?", (session_id, seq, limit))]

    def loaded_sessions(self) -> list[LoadedSession]:
        """Each recorded session start: session, project, time, the lesson ids it showed."""
        return [cast(LoadedSession, dict(r)) for r in self.conn.execute(
            "SELECT session_id, project, at, shown, in_files FROM context_loads ORDER BY at")]


def _scoped(where: list[str], project: str | None, time_column: str,
            since: str | None) -> tuple[list[str], list[Any]]:
    """The conditions with a session's project (``s.project``) and a first moment added."""
    params: list[Any] = []
    if project is not None:
        where.append("s.project = ?")
        params.append(project)
    if since:
        where.append(f"{time_column} >= ?")
        params.append(since)
    return where, params
