"""Sync's tables on Postgres: the SQLite backend's code, whose SQL is portable, but for the
messages received from other devices (``ON CONFLICT DO NOTHING`` and the row count)."""

from __future__ import annotations

from collections.abc import Sequence

from lore.store.rows import SyncedCorrection
from lore.store.sqlite.sync import SyncTables


class PGSyncTables(SyncTables):
    """The change log, origins, history and received batches on Postgres (implements
    ``SyncStore``)."""

    def add_synced_corrections(self, rows: Sequence[SyncedCorrection]) -> int:
        stored = 0
        for row in rows:
            cur = self.conn.execute(
                "INSERT INTO corrections (event_id, session_id, project, user_message, "
                "assistant_proposal, files, at, origin, message_uuid, proposal_uuid, diff, "
                "correction_type, status, device) VALUES (:event_id, :session_id, :project, "
                ":user_message, :assistant_proposal, :files, :at, :origin, :message_uuid, "
                ":proposal_uuid, :diff, :correction_type, 'synced', :device) "
                "ON CONFLICT DO NOTHING", row)
            stored += max(int(cur.rowcount), 0)
        return stored
