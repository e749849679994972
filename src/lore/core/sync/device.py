"""This device's side of sync: its id and cursors, what it sends (the batches of each stream,
redacted, until the server acknowledges them) and the lessons it pulls."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lore.core.embedding import Embedding
from lore.core.lessons import Lessons
from lore.core.sync import merge as merging
from lore.core.sync.records import (
    CLOCK_KEY,
    LAST_PULL_KEY,
    LAST_PUSH_KEY,
    LESSON_BATCH,
    MAX_CURSOR,
    PULL_CHECK_KEY,
    PULL_KEY,
    SERVER_KEY,
    STREAMS,
    Batch,
    MergeReport,
    SyncReport,
    batch_name,
    cursor_key,
    edit_id,
    lesson_record,
    redacted,
    sane,
    tombstone,
)
from lore.errors import NotFound
from lore.ids import now
from lore.models import Lesson
from lore.store import Store

if TYPE_CHECKING:
    from lore.core.sync.server import SyncServer


class Sync:
    """This home's side of sync (the ``sync`` part of :class:`lore.api.Lore`): its device id
    and cursors, the batches it pushes and the lessons it pulls; and, when it is the server,
    :attr:`server`: the batches it receives and the changes it hands out."""

    def __init__(self, store: Store, lessons: Lessons, embedding: Embedding,
                 context_turns: int, device: str) -> None:
        self.store = store
        self.device = device
        self.tables = store.sync
        self.lessons = lessons
        self.embedding = embedding
        self.context_turns = context_turns
        self._server: SyncServer | None = None

    @property
    def server(self) -> SyncServer:
        """The server's side: pushed batches received, changes handed out."""
        if self._server is None:
            from lore.core.sync.server import SyncServer

            self._server = SyncServer(self.store, self.lessons, self.embedding, self.device,
                                      self.context_turns)
        return self._server

    # ---- identity and state ---------------------------------------------------------
    def device_id(self) -> str:
        """This home's device id (:func:`lore.home.device_id`, the one stamped on written rows
        too); a home that synced before keeps the id its database held under ``sync.device``."""
        return self.device

    def cursor(self, stream: str) -> int:
        return int(self.store.meta(cursor_key(stream)) or 0)

    def status(self) -> dict[str, Any]:
        pending = {s: self.pending(s) for s in STREAMS}
        return {"device": self.device_id(), "server": self.store.meta(SERVER_KEY),
                "last_push": self.store.meta(LAST_PUSH_KEY),
                "last_pull": self.store.meta(LAST_PULL_KEY),
                "pull_cursor": int(self.store.meta(PULL_KEY) or 0),
                "pending": pending, "pending_total": sum(pending.values()),
                "clock": self.clock()}

    def clock(self) -> dict[str, Any] | None:
        """What the last sync found wrong with this device's clock (None: nothing)."""
        text = self.store.meta(CLOCK_KEY)
        try:
            found = json.loads(text) if text else None
        except ValueError:
            return None
        return found if isinstance(found, dict) and found.get("problem") else None

    def note_clock(self, report: SyncReport) -> None:
        """Keep the last sync's clock findings for `lore sync --status` (cleared when none)."""
        problem = report.clock_problem()
        value = json.dumps({"at": now(), "problem": problem, "skew": report.skew,
                            "clamped": report.clamped, "ahead": report.ahead}) if problem else ""
        with self.store.atomic():
            self.store.set_meta(CLOCK_KEY, value)

    def pending(self, stream: str) -> int:
        """What a push of ``stream`` would send, counted by the store."""
        return self.tables.pending_count(stream, self.cursor(stream))

    # ---- push: what this device wrote ------------------------------------------------
    def next_batch(self, stream: str, size: int) -> Batch | None:
        """Up to ``size`` rows of ``stream`` after its cursor. The caller sends it and calls
        :meth:`acknowledged` once the server stored it; until then this returns the same rows."""
        after = self.cursor(stream)
        if stream == "lessons":
            changes = self.tables.lesson_changes_after(after, min(size, LESSON_BATCH))
            if not changes:
                return None
            end = changes[-1][0]
            records = self.lesson_records(list(dict.fromkeys(lid for _, lid in changes)))
            skipped = [r["id"] for r in records if not sane(r["data"].get("updated_at"))
                       or ("created_at" in r["data"] and not sane(r["data"]["created_at"]))]
            records = [r for r in records if r["id"] not in skipped]
            count = len(records)
        else:
            rows: Sequence[Mapping[str, Any]]
            if stream == "corrections":
                rows = found = self.tables.corrections_after(after, size)
                end = found[-1]["id"] if found else after
            elif stream == "messages":
                rows = read = self.tables.messages_after(after, size)
                end = read[-1]["seq"] if read else after
            else:
                rows = edits = self.tables.edits_after(after, size)
                end = edits[-1]["id"] if edits else after
            if not rows:
                return None
            records = self.row_records(stream, rows)
            count = len(rows)
            skipped = []
        return Batch(stream, batch_name(stream, after, end, records), records, after, end, count,
                     skipped)

    def own_versions(self, ids: Sequence[str]) -> list[Lesson]:
        """The lessons among ``ids`` whose current version was written here (not pulled)."""
        origins = self.tables.origins(ids)
        out = []
        for lid in ids:
            try:
                lesson = self.store.get(lid)
            except NotFound:  # deleted since: deletions stay on their device
                continue
            origin = origins.get(lid)
            if origin is not None and origin[1] == lesson.updated_at:
                continue
            out.append(lesson)
        return out

    def lesson_records(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """The versions written here of the lessons among ``ids``, and the tombstones of
        those deleted here (a deletion sync applied here stays the other device's)."""
        device = self.device_id()
        out = []
        for lesson in self.own_versions(ids):
            rec = lesson_record(lesson, device)
            out.append({**rec, "data": redacted("lesson", rec["data"])})
        present = self.store.existing_ids(ids)
        for lid, (at, by) in self.tables.deletions([i for i in ids if i not in present]).items():
            if by == device:
                out.append({"kind": "lesson", "id": lid, "device": device,
                            "data": tombstone(lid, at)})
        return out

    def row_records(self, stream: str, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The rows a push read of ``stream``, as the records it sends (copies: each row's
        own key leaves its data, JSON text is sent decoded)."""
        out: list[dict[str, Any]] = []
        if stream in ("messages", "edits"):  # their sessions first, so the server has them
            for s in self.tables.sessions_of([r["session_id"] for r in rows]):
                out.append({"kind": "session", "id": s["id"], "data": redacted("session", s)})
        for row in rows:
            r = dict(row)
            if stream == "corrections":
                rid, kind = r.pop("event_id"), "correction"
                r.pop("id")
                r["files"] = json.loads(r["files"] or "[]")
            elif stream == "messages":
                rid, kind = r.pop("uuid"), "message"
                r.pop("seq")
                r["tool_calls"] = json.loads(r["tool_calls"] or "[]")
            else:
                r.pop("id")
                data = redacted("edit", r)
                out.append({"kind": "edit", "id": edit_id(data), "data": data})
                continue
            out.append({"kind": kind, "id": rid, "data": redacted(kind, r)})
        return out

    def align(self, acked: Mapping[str, Any]) -> tuple[dict[str, tuple[int, int]],
                                                       dict[str, tuple[int, int]]]:
        """Compare each stream's cursor with the server's view of it (``acked``: the cursor
        after the last batch of this device the server stored). A cursor ahead of the view
        means the server lost what it had acknowledged (restored from an older backup, or
        another server): the cursor goes back to the view and the rows are sent again. A
        cursor behind it means this database was reset or restored: it sends from where it is
        and the server stores what is new. Returns (rewound, behind), stream -> (cursor,
        view)."""
        rewound: dict[str, tuple[int, int]] = {}
        behind: dict[str, tuple[int, int]] = {}
        for stream in STREAMS:
            mine = self.cursor(stream)
            value = acked.get(stream, 0)
            theirs = value if isinstance(value, int) and 0 <= value <= MAX_CURSOR else 0
            if theirs < mine:
                rewound[stream] = (mine, theirs)
            elif theirs > mine:
                behind[stream] = (mine, theirs)
        if rewound:
            with self.store.atomic():
                for stream, (_, theirs) in rewound.items():
                    self.store.set_meta(cursor_key(stream), str(theirs))
        return rewound, behind

    def acknowledged(self, batch: Batch) -> None:
        """The server stored ``batch``: move the cursor past it."""
        with self.store.atomic():
            self.store.set_meta(cursor_key(batch.stream), str(batch.end))
            self.store.set_meta(LAST_PUSH_KEY, now())

    # ---- pull: what a person decided elsewhere ----------------------------------------
    def apply_pulled(self, records: Sequence[dict[str, Any]], cursor: int,
                     check: str | None = None) -> MergeReport:
        """Merge pulled lessons and store the server's cursor (and the lesson of the change
        at it, which the next pull sends to check the cursor), in one transaction."""
        items = [(str(r.get("device") or ""), r.get("data")) for r in records]
        with self.store.atomic():
            report = self.merge(items)
            self.store.set_meta(PULL_KEY, str(cursor))
            if check:
                self.store.set_meta(PULL_CHECK_KEY, check)
            self.store.set_meta(LAST_PULL_KEY, now())
        return report

    def merge(self, items: Sequence[tuple[str, Any]]) -> MergeReport:
        """Lessons from other devices, (device, exported lesson) each (:func:`merge.merge`)."""
        return merging.merge(self.store, self.lessons, self.embedding, self.device_id(), items)
