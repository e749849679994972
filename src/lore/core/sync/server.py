"""The server's side of sync: the batches a device pushes, checked, stored once and merged,
and the lessons a device pulls (docs/server.md, "Sync")."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from lore.capture.ingest import CHUNK_CHARS, Ingest
from lore.core.embedding import Embedding
from lore.core.lessons import Lessons
from lore.core.sync.merge import merge
from lore.core.sync.records import (
    KINDS,
    MAX_BATCH,
    MAX_CURSOR,
    PROTOCOL,
    STREAMS,
    batch_name,
    check_record,
    clamped,
    lesson_record,
    record_hash,
    redacted,
    shared,
    tombstone,
    written_by,
)
from lore.errors import Forbidden, InvalidInput, NotFound
from lore.ids import now
from lore.store import Store
from lore.store.rows import NewEdit, NewMessage, SyncedCorrection

log = logging.getLogger("lore.sync")


class SyncServer:
    """What a home serving `lore serve` does with its devices' pushes and pulls
    (``lore.sync.server``)."""

    def __init__(self, store: Store, lessons: Lessons, embedding: Embedding, device: str,
                 context_turns: int) -> None:
        self.store = store
        self.tables = store.sync
        self.lessons = lessons
        self.embedding = embedding
        self.device = device
        self.importer = Ingest(store, context_turns)
        self.known_sessions: set[str] = set()  # sessions seen in the batch being received

    def receive(self, device: str, batch: Mapping[str, Any], token: str | None = None
                ) -> dict[str, Any]:
        """Store one pushed batch (``batch_id``, ``stream``, ``after``, ``end``, ``records``)
        of ``device`` in one transaction, pushed with the write token ``token`` (None: a
        loopback server without tokens). The batch id must be the batch's content name
        (:func:`batch_name`); every record is checked (:func:`check_record`) and redacted
        again; a record this device sent before (same id and content) is skipped; a session,
        message or edit of another device's session is refused (not stored, counted); a batch
        seen before answers as it did. Invalid input stores nothing."""
        records = batch.get("records")
        stream, after, end = batch.get("stream"), batch.get("after"), batch.get("end")
        if not isinstance(records, list) or len(records) > MAX_BATCH:
            raise InvalidInput(f"a batch holds a list of at most {MAX_BATCH} records; send "
                               "smaller ones")
        if stream not in STREAMS:
            raise InvalidInput(f"a batch's stream is one of {', '.join(STREAMS)}")
        if not (isinstance(after, int) and isinstance(end, int)
                and 0 <= after <= end <= MAX_CURSOR):
            raise InvalidInput("a batch's cursors are whole numbers, 0 <= after <= end")
        batch_id = str(batch.get("batch_id") or "")
        at = now()
        with self.store.atomic():
            self.claim(device, token)  # who pushes first: another device's token learns nothing
            if batch_id != batch_name(stream, after, end, records):
                raise InvalidInput(f"batch {batch_id[:80]!r} is not named by its records (sync "
                                   f"protocol {PROTOCOL} names a batch by the SHA-256 of its "
                                   "stream, cursors and records); nothing was stored")
            for rec in records:
                check_record(device, rec)
            seen = self.tables.batch(device, batch_id)
            if seen is not None:
                self.tables.set_acked(device, stream, end, at)
                return {"batch_id": batch_id, "received": seen["records"], "stored": 0,
                        "refused": 0, "repeated": True}
            accepted = self.owned(device, records)
            stored, skew = self.store_records(device, batch_id, at, accepted)
            self.tables.set_acked(device, stream, end, at)
            self.tables.add_batch(device, batch_id, at, len(records), stored)
        if skew[0]:
            log.warning("device %s: %d lesson dates up to %.0f s ahead of this clock were set "
                        "to its time (the device's clock is ahead)", device, skew[0], skew[1])
        return {"batch_id": batch_id, "received": len(records), "stored": stored,
                "refused": len(records) - len(accepted), "repeated": False,
                "clamped": skew[0], "ahead": skew[1]}

    def claim(self, device: str, token: str | None) -> None:
        """Bind ``device`` to the write token that pushes for it: the first token a device
        pushes with is its own, a token pushes for one device, and a device takes a new token
        only once its old one was revoked. Raises Forbidden otherwise."""
        if token is None:  # a loopback server without tokens: this machine's user
            return
        mine = self.tables.token_binding(token)
        if mine is not None and mine != device:
            raise Forbidden(f"this token pushes for device {mine}, not {device[:30]}; make a "
                            "write token for each device (lore serve token create --scope "
                            "write --name DEVICE)")
        bound = self.tables.device_binding(device)
        if bound == token:
            return
        if bound is not None:
            row = self.store.tokens.token(bound)
            if row is not None and row["revoked_at"] is None:
                raise Forbidden(f"device {device} pushes with another token; a token pushes "
                                "only for the device it first pushed for (revoke the old "
                                "token to move the device to a new one)")
        self.tables.bind_device(device, token, now())

    def owned(self, device: str, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records that do not reach into another device's session: a session, or a
        message or edit of a session, that the server holds under another device is left out
        (it is neither renamed nor added to)."""
        sessions = {r["id"] for r in records if r["kind"] == "session"}
        sessions |= {r["data"].get("session_id") for r in records
                     if r["kind"] in ("message", "edit")}
        owners = self.tables.session_devices([s for s in sessions if isinstance(s, str)])
        foreign = {sid for sid, owner in owners.items() if owner != device}
        if not foreign:
            return list(records)
        return [r for r in records
                if not (r["kind"] == "session" and r["id"] in foreign)
                and not (r["kind"] in ("message", "edit") and r["data"].get("session_id")
                         in foreign)]

    def store_records(self, device: str, batch_id: str, at: str,
                      records: Sequence[dict[str, Any]]) -> tuple[int, tuple[int, float]]:
        """Store the records new to the server (checked and owned); how many were new, and
        how many lesson dates were clamped to this clock (:func:`clamped`) and by how much the
        furthest was ahead. The content hash is of the record as sent, so a retry of a
        clamped record is still the same record."""
        order = {k: i for i, k in enumerate(KINDS)}
        stored = 0
        lessons: list[tuple[str, Any]] = []
        touched: dict[str, list[tuple[int, str, str, str | None]]] = {}
        projects: dict[str, str | None] = {}
        self.known_sessions = set()
        ordered = sorted(records, key=lambda r: order[r["kind"]])
        datas = [redacted(r["kind"], r["data"]) for r in ordered]
        fresh = self.tables.add_records(device, batch_id, at, [
            (r["kind"], r["id"], record_hash(r["kind"], d))
            for r, d in zip(ordered, datas, strict=True)])
        corrections: list[SyncedCorrection] = []
        clock = datetime.now(UTC)
        skew = (0, 0.0)
        for rec, data, new in zip(ordered, datas, fresh, strict=True):
            if not new:
                continue
            stored += 1
            kind, rid = rec["kind"], rec["id"]
            if kind == "lesson":
                ahead = clamped(data, clock)
                if ahead:
                    skew = (skew[0] + 1, max(skew[1], ahead))
                lessons.append((device, data))
            elif kind == "session":
                self.store.conversations.upsert_session(
                    rid, data["agent"], data.get("project"), device, data.get("git_branch"),
                    data.get("source_file"), data.get("title"))
                projects[rid] = data.get("project")
                self.known_sessions.add(rid)
            elif kind == "message":
                self.receive_message(rid, data, touched)
            elif kind == "edit":
                self.require_session(data["session_id"])
                # A received record: its keys are the sender's, and the store's columns check
                # them (a missing one is refused as by the store).
                self.store.conversations.insert_edit(cast(NewEdit, {
                    "file_type": None, "old_text": None, "new_text": None, "timestamp": None,
                    "succeeded": None, **data}))
            else:
                corrections.append(cast(SyncedCorrection, {"session_id": None, "project": None,
                                    "assistant_proposal": None, "origin": "hook",
                                    "message_uuid": None, "proposal_uuid": None, "diff": None,
                                    "correction_type": None, **data,
                                    "event_id": f"{device}:{rid}", "device": device,
                                    "files": json.dumps(data.get("files") or [])}))
        self.tables.add_synced_corrections(corrections)
        for sid, rows in touched.items():
            known = self.store.conversations.session(sid)
            project = projects.get(sid, known["project"] if known else None)
            self.importer.chunk(sid, project, rows, CHUNK_CHARS)
            self.store.conversations.refresh_session(sid)
        if lessons:
            merge(self.store, self.lessons, self.embedding, self.device, lessons)
        return stored, skew

    def view(self, device: str) -> dict[str, Any]:
        """The server's view of ``device``: its cursor after the last batch of each stream
        stored here, and how many of its records the server holds."""
        return {"device": device, "acked": self.tables.acked(device),
                "records": self.tables.record_count(device)}

    def require_session(self, session_id: str) -> None:
        if session_id in self.known_sessions:
            return
        if self.store.conversations.session(session_id) is not None:
            self.known_sessions.add(session_id)
        else:
            raise InvalidInput(f"session {session_id} is unknown here; send its session record "
                               "in the same batch")

    def receive_message(self, uuid: str, data: dict[str, Any],
                        touched: dict[str, list[tuple[int, str, str, str | None]]]) -> None:
        sid = data["session_id"]
        self.require_session(sid)
        row = cast(NewMessage, {  # a received record, checked by the store's columns
            "uuid": uuid, "parent_uuid": None, "speaker": None, "timestamp": None,
            "is_sidechain": 0, "agent_id": None, "is_meta": 0, "injected": 0, **data,
            "tool_calls": json.dumps(data.get("tool_calls") or [], ensure_ascii=False)})
        seq = self.store.conversations.insert_message(row)
        if seq is not None and not row["is_meta"] and not row["injected"] and row["text"].strip():
            touched.setdefault(sid, []).append((seq, row["speaker"] or row["role"], row["text"],
                                                row["timestamp"]))

    def changes(self, device: str, after: int, limit: int, check: str | None = None
                ) -> dict[str, Any]:
        """Lessons a person decided on, changed after the ``after`` cursor, for ``device``
        (its own versions left out), and the cursor to ask from next with ``check``, the
        lesson of the change at it. A cursor whose change is not ``check`` is not this
        server's (it was restored from an older backup, or it is another server): the answer
        starts from the beginning and says ``rewound``, so nothing is skipped."""
        rewound = False
        if after and check is not None and self.tables.change_at(after) != check:
            after, rewound = 0, True
        changes = self.tables.lesson_changes_after(after, limit)
        ids = list(dict.fromkeys(lid for _, lid in changes))
        origins = self.tables.origins(ids)
        present = self.store.existing_ids(ids)
        gone = self.tables.deletions([i for i in ids if i not in present])
        records = []
        for lid in ids:
            try:
                lesson = self.store.get(lid)
            except NotFound:
                if lid in gone and gone[lid][1] != device:
                    records.append({"kind": "lesson", "id": lid, "device": gone[lid][1],
                                    "data": tombstone(lid, gone[lid][0])})
                continue
            by = written_by(lesson, origins, self.device)
            if by != device and shared(lesson):
                records.append(lesson_record(lesson, by))
        cursor = changes[-1][0] if changes else after
        return {"cursor": cursor, "check": changes[-1][1] if changes else check,
                "rewound": rewound, "more": len(changes) >= limit, "records": records}
