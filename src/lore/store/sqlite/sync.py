"""Sync across devices: the lesson change log, what a device has not pushed yet (by cursor),
and on the server the records and batches already received, the device behind each lesson
and the versions a conflict replaced."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from lore.store.rows import (
    Batch,
    HistoryEntry,
    OwnCorrection,
    PushedEdit,
    PushedMessage,
    SessionRecord,
    SyncedCorrection,
)
from lore.store.sqlite.db import Tables, chunks

# What a device pushes, by stream: the table and its append-only integer key (the cursor).
STREAMS = {
    "lessons": ("lesson_changes", "seq"),
    "corrections": ("corrections", "id"),
    "messages": ("messages", "seq"),
    "edits": ("file_edits", "id"),
}
# Captured here, not received from another device: a received message is stored with the
# status 'synced' and never processed again. Its device column does not tell: every local
# capture is stamped with this home's device too (who wrote each row).
_OWN_CORRECTIONS = "status <> 'synced'"


def tombstone(conn: Any, lesson_id: str, deleted_at: str, device: str) -> None:
    """A lesson deleted (here, or on ``device`` as sync learned): its tombstone, and a row in
    the change log so that a push and the server's pull see the deletion."""
    conn.execute(
        "INSERT INTO lesson_deletions (lesson_id, deleted_at, device) VALUES (?, ?, ?) "
        "ON CONFLICT(lesson_id) DO UPDATE SET deleted_at = excluded.deleted_at, "
        "device = excluded.device", (lesson_id, deleted_at, device))
    conn.execute("INSERT INTO lesson_changes (lesson_id) VALUES (?)", (lesson_id,))


class SyncTables(Tables):
    """The sync tables of one connection (``lesson_changes``, ``lesson_origins``,
    ``lesson_history``, ``sync_records``, ``sync_batches``, ``sync_devices``,
    ``sync_cursors``)."""

    # ---- what a device has to push ---------------------------------------------------
    def pending_count(self, stream: str, after: int) -> int:
        """Rows of ``stream`` after the cursor that a push would send; for ``lessons``, the
        lessons changed since whose current version was written here (one per lesson, not
        one per change; a deleted lesson or a version sync wrote here is not sent)."""
        if stream == "lessons":  # plus the lessons deleted here since, one each
            return int(self.conn.execute(
                "SELECT (SELECT count(*) FROM lessons l WHERE l.id IN (SELECT lesson_id FROM "
                "lesson_changes WHERE seq > ?) AND NOT EXISTS (SELECT 1 FROM lesson_origins o "
                "WHERE o.lesson_id = l.id AND o.updated_at = l.updated_at)) + (SELECT count(*) "
                "FROM lesson_deletions d WHERE d.device = ? AND d.lesson_id IN (SELECT lesson_id "
                "FROM lesson_changes WHERE seq > ?) AND NOT EXISTS (SELECT 1 FROM lessons l "
                "WHERE l.id = d.lesson_id))",
                (after, self.who[1] or "", after)).fetchone()[0])
        table, key = STREAMS[stream]
        own = f" AND {_OWN_CORRECTIONS}" if stream == "corrections" else ""
        row = self.conn.execute(f"SELECT count(*) FROM {table} WHERE {key} > ?{own}",
                                (after,)).fetchone()
        return int(row[0])

    def lesson_changes_after(self, after: int, limit: int) -> list[tuple[int, str]]:
        return [(int(r[0]), str(r[1])) for r in self.conn.execute(
            "SELECT seq, lesson_id FROM lesson_changes WHERE seq > ? ORDER BY seq LIMIT ?",
            (after, limit))]

    def change_at(self, seq: int) -> str | None:
        """The lesson of the change log's row ``seq`` (None: no such row)."""
        r = self.conn.execute("SELECT lesson_id FROM lesson_changes WHERE seq = ?",
                              (seq,)).fetchone()
        return str(r[0]) if r else None

    def corrections_after(self, after: int, limit: int) -> list[OwnCorrection]:
        return [cast(OwnCorrection, dict(r)) for r in self.conn.execute(
            "SELECT id, event_id, session_id, project, user_message, assistant_proposal, files, "
            "at, origin, message_uuid, proposal_uuid, diff, correction_type FROM corrections "
            f"WHERE id > ? AND {_OWN_CORRECTIONS} ORDER BY id LIMIT ?", (after, limit))]

    def messages_after(self, after: int, limit: int) -> list[PushedMessage]:
        return [cast(PushedMessage, dict(r)) for r in self.conn.execute(
            "SELECT seq, uuid, session_id, parent_uuid, role, speaker, text, tool_calls, timestamp, "
            "is_sidechain, agent_id, is_meta, injected FROM messages WHERE seq > ? ORDER BY seq "
            "LIMIT ?", (after, limit))]

    def edits_after(self, after: int, limit: int) -> list[PushedEdit]:
        return [cast(PushedEdit, dict(r)) for r in self.conn.execute(
            "SELECT id, session_id, message_uuid, tool, file_path, file_type, old_text, new_text, "
            "timestamp, succeeded FROM file_edits WHERE id > ? ORDER BY id LIMIT ?",
            (after, limit))]

    def sessions_of(self, ids: Sequence[str]) -> list[SessionRecord]:
        out: list[SessionRecord] = []
        for part in chunks(sorted(set(ids))):
            marks = ",".join("?" * len(part))
            out.extend(cast(SessionRecord, dict(r)) for r in self.conn.execute(
                "SELECT id, agent, project, device, git_branch, source_file, title FROM sessions "
                f"WHERE id IN ({marks}) ORDER BY id", part))
        return out

    # ---- what a server received ------------------------------------------------------
    def batch(self, device: str, batch_id: str) -> Batch | None:
        r = self.conn.execute("SELECT batch_id, device, received_at, records, stored FROM "
                              "sync_batches WHERE device = ? AND batch_id = ?",
                              (device, batch_id)).fetchone()
        return cast(Batch, dict(r)) if r else None

    def add_batch(self, device: str, batch_id: str, at: str, records: int, stored: int) -> None:
        self.conn.execute("INSERT INTO sync_batches (batch_id, device, received_at, records, "
                          "stored) VALUES (?, ?, ?, ?, ?)", (batch_id, device, at, records, stored))

    def add_records(self, device: str, batch_id: str, at: str,
                    keys: Sequence[tuple[str, str, str]]) -> list[bool]:
        """Note received records, (kind, record id, content hash) each; for each, whether it
        is new (False: this device sent this version before, or it repeats in ``keys``)."""
        known: set[tuple[str, str, str]] = set()
        for part in chunks(sorted({k[1] for k in keys})):
            marks = ",".join("?" * len(part))
            known.update((r[0], r[1], r[2]) for r in self.conn.execute(
                "SELECT kind, record_id, content_hash FROM sync_records WHERE device = ? AND "
                f"record_id IN ({marks})", [device, *part]))
        new: list[bool] = []
        for key in keys:
            new.append(key not in known)
            known.add(key)
        self.conn.executemany(
            "INSERT INTO sync_records (device, kind, record_id, content_hash, batch_id, "
            "received_at) VALUES (?, ?, ?, ?, ?, ?)",
            [(device, *key, batch_id, at) for key, fresh in zip(keys, new, strict=True) if fresh])
        return new

    def record_count(self, device: str | None = None) -> int:
        if device is None:
            return int(self.conn.execute("SELECT count(*) FROM sync_records").fetchone()[0])
        return int(self.conn.execute("SELECT count(*) FROM sync_records WHERE device = ?",
                                     (device,)).fetchone()[0])

    def add_synced_corrections(self, rows: Sequence[SyncedCorrection]) -> int:
        """Messages captured on another device: kept as evidence with their device, never
        processed again here (the device learned from them and pushes its lessons). Returns
        how many were new."""
        stored = 0
        for row in rows:  # one at a time: a row count per statement on every backend
            cur = self.conn.execute(
                "INSERT INTO corrections (event_id, session_id, project, user_message, "
                "assistant_proposal, files, at, origin, message_uuid, proposal_uuid, diff, "
                "correction_type, status, device) VALUES (:event_id, :session_id, :project, "
                ":user_message, :assistant_proposal, :files, :at, :origin, :message_uuid, "
                ":proposal_uuid, :diff, :correction_type, 'synced', :device) "
                "ON CONFLICT DO NOTHING", row)
            stored += max(int(cur.rowcount), 0)
        return stored

    def session_devices(self, ids: Sequence[str]) -> dict[str, str]:
        """session id -> the device it belongs to, for the sessions among ``ids`` stored here."""
        out: dict[str, str] = {}
        for part in chunks(sorted(set(ids))):
            marks = ",".join("?" * len(part))
            out.update((str(r[0]), str(r[1])) for r in self.conn.execute(
                f"SELECT id, device FROM sessions WHERE id IN ({marks})", part))
        return out

    # ---- who pushes for a device, and how far the server saw it ----------------------
    def device_binding(self, device: str) -> str | None:
        """The write token that pushes for ``device``."""
        r = self.conn.execute("SELECT token_id FROM sync_devices WHERE device = ?",
                              (device,)).fetchone()
        return str(r[0]) if r else None

    def token_binding(self, token_id: str) -> str | None:
        """The device ``token_id`` pushes for."""
        r = self.conn.execute("SELECT device FROM sync_devices WHERE token_id = ?",
                              (token_id,)).fetchone()
        return str(r[0]) if r else None

    def bind_device(self, device: str, token_id: str, at: str) -> None:
        self.conn.execute(
            "INSERT INTO sync_devices (device, token_id, bound_at) VALUES (?, ?, ?) "
            "ON CONFLICT(device) DO UPDATE SET token_id = excluded.token_id, "
            "bound_at = excluded.bound_at", (device, token_id, at))

    def acked(self, device: str) -> dict[str, int]:
        """stream -> the device's cursor after the last batch of it the server stored."""
        return {str(r[0]): int(r[1]) for r in self.conn.execute(
            "SELECT stream, acked FROM sync_cursors WHERE device = ?", (device,))}

    def set_acked(self, device: str, stream: str, acked: int, at: str) -> None:
        self.conn.execute(
            "INSERT INTO sync_cursors (device, stream, acked, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(device, stream) DO UPDATE SET acked = excluded.acked, "
            "updated_at = excluded.updated_at", (device, stream, acked, at))

    # ---- lessons from other devices --------------------------------------------------
    def origins(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """lesson id -> (device, updated_at) of the version sync last wrote here."""
        return self._pairs("device, updated_at FROM lesson_origins", ids)

    def _pairs(self, columns_from: str, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """lesson id -> two columns of a table keyed by lesson id, for the lessons in ``ids``."""
        out: dict[str, tuple[str, str]] = {}
        for part in chunks(list(ids)):
            marks = ",".join("?" * len(part))
            for r in self.conn.execute(f"SELECT lesson_id, {columns_from} "
                                       f"WHERE lesson_id IN ({marks})", part):
                out[r[0]] = (r[1], r[2])
        return out

    def set_origin(self, lesson_id: str, device: str, updated_at: str) -> None:
        self.conn.execute(
            "INSERT INTO lesson_origins (lesson_id, device, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(lesson_id) DO UPDATE SET device = excluded.device, "
            "updated_at = excluded.updated_at", (lesson_id, device, updated_at))

    def record_deletion(self, lesson_id: str, deleted_at: str, device: str) -> None:
        tombstone(self.conn, lesson_id, deleted_at, device)

    def deletions(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """lesson id -> (deleted_at, device) of the lessons among ``ids`` that were deleted
        (the latest deletion; a lesson made again since keeps its tombstone beside it)."""
        return self._pairs("deleted_at, device FROM lesson_deletions", ids)

    def add_history(self, row: HistoryEntry) -> None:
        self.conn.execute(
            "INSERT INTO lesson_history (lesson_id, device, updated_at, at, outcome, "
            "winner_device, winner_updated_at, data) VALUES (:lesson_id, :device, :updated_at, "
            ":at, :outcome, :winner_device, :winner_updated_at, :data)",
            {**row, "data": json.dumps(row["data"], ensure_ascii=False)})

