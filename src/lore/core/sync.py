"""One memory across devices through `lore serve` (docs/server.md, "Sync").

A device **pushes** what it wrote since the last acknowledged push — lessons (from the change
log every lesson write appends to in its own transaction), captured corrections, conversation
sessions and messages, the agent's edits — in batches, each redacted before it leaves. Each
stream has a cursor in ``meta`` that moves only after the server acknowledged the batch, so a
cut connection resends the same records; the server keeps (device, kind, record id, content
hash) of everything it received and stores nothing twice.

A device **pulls** the lessons a person decided on (approved rules, hand-written active
lessons, rejected rules with the reason) from the server's change log, with a cursor the
device keeps. Two devices that changed the same lesson resolve the same way everywhere: the
later ``updated_at`` wins, a tie goes to the greater device id, and the version that lost is
kept in ``lesson_history``.

Nothing is trusted by name (protocol 3). A batch is named by the SHA-256 of its stream, its
cursors and its records, and the server computes the name again: a batch id that repeats after
a database was reset names the same records or is refused. Every record has an id that is the
same on every device and after any reset: a message its uuid, a correction its event id, a
lesson or a session its own id, an edit the hash of what it changed. The server binds each
device to the write token it first pushed with, refuses records of another device, lesson
dates outside 2000 .. tomorrow and ids that disagree with their data, and keeps its view of
each device's cursors: a device whose cursor is ahead of that view (the server was restored)
sends again what the server lacks, and one behind it (its own database was reset or restored)
sends what it holds and the server stores what is new.

A device's clock is not trusted: a lesson date more than ``SKEW`` (five minutes) ahead of the
server's clock is stored as the server's now (a forged or drifting date would otherwise win
every later conflict), and the push's answer says how many dates were so clamped and how far
ahead the furthest was. The client also compares its clock with the server's ``Date`` header;
`lore sync` and `lore sync status` report either.

A **deletion** travels as a lesson record whose data is a tombstone, ``{"id", "updated_at":
when it was deleted, "deleted": true}``, pushed from and pulled through the same change log,
and it meets edits by the same rule: a deletion later than the version a device holds deletes
it there (that version kept in the history), an edit later than the deletion brings the lesson
back, and the one that lost is kept in the history.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from lore.capture.ingest import CHUNK_CHARS, Ingest
from lore.core.embedding import Embedding
from lore.core.learner import decided
from lore.core.lessons import Lessons
from lore.errors import BackendUnavailable, ConfigError, Forbidden, InvalidInput, NotFound
from lore.extract.steer import SYNCED
from lore.extras import package_command
from lore.ids import now, parse_time
from lore.models import Lesson
from lore.redact import redact_value
from lore.store import Store
from lore.store.rows import NewEdit, NewMessage, SyncedCorrection

if TYPE_CHECKING:
    import httpx

PROTOCOL = 3  # 2: deletions travel as tombstones; 3: batches and edits named by content,
# devices bound to their tokens, the server's view of each device's cursors
MAX_CURSOR = 2**63 - 1    # the largest integer both backends store
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)  # a lesson date before this is not believed
AHEAD = timedelta(days=1)                   # nor one more than a day ahead of the server's clock
SKEW = timedelta(minutes=5)  # a date further ahead than this is stored as the server's now
BATCH_SIZE = 500
MAX_BATCH = 1000          # records in one pushed batch, checked by the server
PULL_LIMIT = 500
LESSON_BATCH = 100        # lessons are embedded by the server: smaller batches answer sooner
STREAMS = ("lessons", "corrections", "messages", "edits")
KINDS = ("session", "message", "edit", "correction", "lesson")  # the order a batch is applied in

DEVICE_KEY = "sync.device"  # where a home kept its device id before lore.home.device_id
SERVER_KEY = "sync.server"
PULL_KEY = "sync.pull"
PULL_CHECK_KEY = "sync.pull.check"  # the lesson of the server's change at the pull cursor
LAST_PUSH_KEY = "sync.last_push"
LAST_PULL_KEY = "sync.last_pull"
CLOCK_KEY = "sync.clock"  # the last sync's clock findings (JSON), for `lore sync status`

Progress = Callable[[str, int, int], None]  # (stage, done, total)
log = logging.getLogger("lore.sync")


def cursor_key(stream: str) -> str:
    return f"sync.push.{stream}"


# The free text of each kind of record, as the stored-data redaction (migration 6) reads it;
# ids, times, roles and paths hold none. A lesson is redacted whole.
TEXT = {"correction": ("user_message", "assistant_proposal", "diff"),
        "message": ("text", "tool_calls"), "edit": ("old_text", "new_text"),
        "session": ("title",)}


VERSIONED = ("lesson", "session")


def redacted(kind: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with its free text redacted (a copy)."""
    if kind not in TEXT:
        return dict(redact_value(data))  # type: ignore[call-overload]
    return {k: redact_value(v) if k in TEXT[kind] and v else v for k, v in data.items()}


def record_hash(kind: str, data: Any) -> str:
    """The content hash of a record as the server dedups it: canonical JSON, SHA-256. A
    correction, message or edit never changes once stored, so its id alone tells it apart;
    a lesson or a session may come again changed."""
    if kind not in VERSIONED:
        return ""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical(value: Any) -> bytes:
    """``value`` as canonical JSON (sorted keys, no spaces, ASCII): the same bytes on every
    device for the same data, whatever JSON it travelled as."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode()


def edit_id(data: Mapping[str, Any]) -> str:
    """An edit's record id: the hash of what makes it one edit (its message, file and texts,
    the key the table is unique on), the same on every device and after any reset."""
    key = [data.get("message_uuid"), data.get("file_path"), data.get("old_text"),
           data.get("new_text")]
    return "edit-" + hashlib.sha256(canonical(key)).hexdigest()[:40]


def batch_name(stream: str, after: int, end: int, records: Sequence[Mapping[str, Any]]) -> str:
    """A batch's id: the SHA-256 of its stream, cursors and records. The server computes it
    again, so a batch id names these records and no others."""
    digest = hashlib.sha256(canonical([stream, after, end, list(records)])).hexdigest()
    return f"sha256-{digest}"


def date_problem(value: Any, field_name: str = "updated_at") -> str | None:
    """Why ``value`` is no believable lesson date (None: it is one): not a date, before 2000,
    or more than a day ahead of this clock. A far-future date would win every conflict."""
    if not isinstance(value, str) or not value:
        return f"has no {field_name}"
    try:
        when = parse_time(value)
    except (ValueError, OverflowError):
        return f"{field_name} {value[:40]!r} is not a date"
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if when < EARLIEST:
        return f"{field_name} {value[:40]} is before 2000"
    if when > datetime.now(UTC) + AHEAD:
        return f"{field_name} {value[:40]} is more than a day ahead of the server's clock"
    return None


def sane(value: Any) -> bool:
    return date_problem(value) is None


def clamped(data: dict[str, Any], now_: datetime) -> float:
    """Set a received lesson's dates that are more than :data:`SKEW` ahead of ``now_`` (the
    server's clock) to ``now_``, in place; how many seconds the furthest was ahead (0: none
    was). Dates were checked by :func:`date_problem` before."""
    ahead = 0.0
    stamp = now_.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    for name in ("updated_at", "created_at"):
        value = data.get(name)
        if not isinstance(value, str):
            continue
        when = parse_time(value)
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        if when - now_ > SKEW:
            ahead = max(ahead, (when - now_).total_seconds())
            data[name] = stamp
    created, updated = data.get("created_at"), data.get("updated_at")
    if ahead and isinstance(created, str) and isinstance(updated, str) \
            and parse_time(created) > parse_time(updated):
        data["created_at"] = updated  # a lesson is not created after its last change
    return ahead


# The fields a received record must carry as text, by kind, beside the ones the receiver fills
# in when absent (lessons are checked when merged).
REQUIRED: dict[str, tuple[str, ...]] = {
    "session": ("agent",),
    "message": ("session_id", "role", "text"),
    "edit": ("session_id", "message_uuid", "tool", "file_path"),
    "correction": ("user_message", "at"),
}


def check_record(device: str, rec: Mapping[str, Any]) -> None:
    """Refuse (InvalidInput) a pushed record that claims another device, has an id that
    disagrees with its data, or a lesson date outside the window."""
    kind, rid, data = rec.get("kind"), rec.get("id"), rec.get("data")
    if kind not in KINDS or not isinstance(rid, str) or not rid or not isinstance(data, dict):
        raise InvalidInput("a sync record needs a kind (" + ", ".join(KINDS) + "), an id and "
                           "its data")
    if kind == "lesson":
        if rec.get("device", device) != device:
            raise InvalidInput(f"lesson {rid[:80]}: a device pushes only the versions it wrote; "
                               f"this one names device {str(rec.get('device'))[:30]}")
        if data.get("id") != rid:
            raise InvalidInput(f"lesson record {rid[:80]} holds lesson {str(data.get('id'))[:80]}; "
                               "a record's id is its lesson's id")
        for name in ("updated_at", "created_at"):
            if name in data or name == "updated_at":
                problem = date_problem(data.get(name), name)
                if problem:
                    raise InvalidInput(f"lesson {rid[:80]}: {problem}")
    missing = [name for name in REQUIRED.get(kind, ()) if not isinstance(data.get(name), str)]
    if missing:
        raise InvalidInput(f"{kind} record {rid[:80]} lacks {', '.join(missing)} (text); a device "
                           "sends what it captured, with these fields")
    if kind == "session" and data.get("id", rid) != rid:
        raise InvalidInput(f"session record {rid[:80]} holds session {str(data.get('id'))[:80]}")
    elif kind == "edit" and rid != edit_id(data):
        raise InvalidInput(f"edit record {rid[:80]} is not named by its content (sync protocol "
                           f"{PROTOCOL} names an edit by the hash of its message, file and texts)")


def tombstone(lesson_id: str, deleted_at: str) -> dict[str, Any]:
    """A deleted lesson as a record's data."""
    return {"id": lesson_id, "updated_at": deleted_at, "deleted": True}


def shared(lesson: Lesson) -> bool:
    """Does a pull hand this lesson out? A person's decision: a learned rule once reviewed
    (approved, edited, rejected), any other lesson while active."""
    meta = lesson.metadata.get("learning")
    if isinstance(meta, dict):
        return decided(meta)
    return lesson.status == "active"


def trust_gate(data: dict[str, Any]) -> dict[str, Any]:
    """A lesson received from another device, as this device may hold it: a learned rule
    nobody decided on is not the user's typing here (:mod:`lore.extract.steer`), so it
    arrives proposed, never active, and waits for a person; a decided one keeps its status."""
    metadata = data.get("metadata")
    meta = metadata.get("learning") if isinstance(metadata, dict) else None
    if not isinstance(metadata, dict) or not isinstance(meta, dict) or decided(meta):
        return data
    out = {**data, "metadata": {**metadata, "learning": {**meta, "untyped": SYNCED}}}
    if out.get("status") == "active":
        out["status"] = "proposed"
    return out


class BatchTooLarge(BackendUnavailable):
    """The server refused a batch for its size (413): send it in smaller parts."""


@dataclass(slots=True)
class Batch:
    """Records of one stream between two cursors, ready to send."""

    stream: str
    batch_id: str     # named by its content (batch_name)
    records: list[dict[str, Any]]
    after: int        # the stream's cursor before it
    end: int          # the stream's cursor once the server acknowledged
    count: int        # rows of the stream the batch covers (records may add sessions)
    skipped: list[str] = field(default_factory=list)  # lessons left out: dates not believable


@dataclass(slots=True)
class MergeReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    conflicts: int = 0
    deleted: int = 0
    refused: int = 0  # versions whose date is not believable (date_problem)


@dataclass(slots=True)
class SyncReport:
    server: str
    device: str
    pushed: dict[str, int] = field(default_factory=dict)     # rows sent by stream
    stored: int = 0                                           # records new to the server
    refused: int = 0          # records the server would not store (another device's session)
    batches: int = 0
    pulled: int = 0
    merge: MergeReport = field(default_factory=MergeReport)
    # stream -> (this device's cursor, the server's view of it) where they differed
    resent: dict[str, tuple[int, int]] = field(default_factory=dict)  # the server lacked rows
    behind: dict[str, tuple[int, int]] = field(default_factory=dict)  # reset or restored here
    skipped: list[str] = field(default_factory=list)  # lessons not sent: dates not believable
    clamped: int = 0          # lesson dates the server found too far ahead and set to its now
    ahead: float = 0.0        # seconds the furthest of those was ahead of the server's clock
    skew: float | None = None  # this clock minus the server's (its Date header), seconds

    def clock_problem(self) -> str | None:
        """One line on this device's clock when it is off by more than :data:`SKEW` (None:
        it is not, as far as the server could tell)."""
        parts = []
        if self.skew is not None and abs(self.skew) > SKEW.total_seconds():
            side = "ahead of" if self.skew > 0 else "behind"
            parts.append(f"this device's clock is {_span(abs(self.skew))} {side} the server's")
        if self.clamped:
            dates = "1 lesson date" if self.clamped == 1 else f"{self.clamped} lesson dates"
            parts.append(f"the server set {dates} up to {_span(self.ahead)} ahead of its clock "
                         "to its own time")
        if not parts:
            return None
        return "; ".join(parts) + " (fix the clock: a date from the future is not trusted)"

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "device": self.device, "pushed": self.pushed,
                "stored": self.stored, "refused": self.refused, "batches": self.batches,
                "pulled": self.pulled, "added": self.merge.added, "updated": self.merge.updated,
                "unchanged": self.merge.unchanged, "conflicts": self.merge.conflicts,
                "deleted": self.merge.deleted, "refused_pulled": self.merge.refused,
                "resent": {k: list(v) for k, v in self.resent.items()},
                "behind": {k: list(v) for k, v in self.behind.items()},
                "skipped": self.skipped, "clamped": self.clamped, "ahead": self.ahead,
                "skew": self.skew}


def _span(seconds: float) -> str:
    if seconds >= 5400:
        return f"{seconds / 3600:.1f} hours"
    if seconds >= 90:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds:.0f} seconds"


class Sync:
    """This home's side of sync (the ``sync`` part of :class:`lore.api.Lore`): its device id
    and cursors, the batches it pushes and the lessons it pulls; and, when it is the server,
    the batches it receives and the changes it hands out."""

    def __init__(self, store: Store, lessons: Lessons, embedding: Embedding,
                 context_turns: int, device: str) -> None:
        self.store = store
        self.device = device
        self.tables = store.sync
        self.lessons = lessons
        self.embedding = embedding
        self.importer = Ingest(store, context_turns)
        self.known_sessions: set[str] = set()  # sessions seen in the batch being received

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
        """Keep the last sync's clock findings for `lore sync status` (cleared when none)."""
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
            data = lesson.to_dict()
            data["edges"] = [e for e in data["edges"] if e["from"] == lesson.id]
            out.append({"kind": "lesson", "id": lesson.id, "device": device,
                        "data": redacted("lesson", data)})
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
        """Lessons from other devices, (device, exported lesson) each. The later
        ``updated_at`` wins, a tie goes to the greater device id; the version that lost is
        kept in the history. All are validated before anything is written."""
        from lore.core.transfer import import_records

        report = MergeReport()
        newest: dict[str, tuple[tuple[str, str], dict[str, Any]]] = {}
        for device, data in items:
            if not isinstance(data, dict) or not isinstance(data.get("id"), str):
                raise InvalidInput("a lesson record needs its exported fields with an id")
            if not device or not isinstance(data.get("updated_at"), str):
                raise InvalidInput(f"lesson {data['id']}: a synced lesson needs its device and "
                                   "updated_at")
            if not sane(data["updated_at"]):  # a far-future date would win every conflict
                report.refused += 1
                continue
            key = (data["updated_at"], device)
            if data["id"] not in newest or key > newest[data["id"]][0]:
                newest[data["id"]] = (key, data)
        if not newest:
            return report
        own = self.device_id()
        existing = self.store.existing_ids(newest)
        origins = self.tables.origins(list(existing))
        deleted = self.tables.deletions([i for i in newest if i not in existing])
        winners: list[tuple[tuple[str, str], dict[str, Any]]] = []
        removals: list[tuple[tuple[str, str], str]] = []
        at = now()
        for lid, (key, data) in newest.items():
            if lid in existing:
                old = self.store.get(lid)
                origin = origins.get(lid)
                old_device = origin[0] if origin and origin[1] == old.updated_at else own
                # A stored date that is not believable (written before the server refused
                # them) loses to any real edit.
                local: tuple[tuple[str, str], dict[str, Any]] = (
                    (old.updated_at if sane(old.updated_at) else "", old_device), old.to_dict())
            elif lid in deleted:  # deleted here, or a deletion sync brought before
                gone_at, by = deleted[lid]
                local = ((gone_at if sane(gone_at) else "", by), tombstone(lid, gone_at))
            else:
                local = (("", ""), {})
            if key == local[0] or (data.get("deleted") and local[1].get("deleted")):
                report.unchanged += 1
                continue
            win = key > local[0]
            if local[1] and local[0][1] != key[1]:  # two devices changed it: keep the loser
                report.conflicts += 1
                loser = local if win else (key, data)
                self.tables.add_history({
                    "lesson_id": lid, "device": loser[0][1], "updated_at": loser[0][0], "at": at,
                    "outcome": "replaced" if win else "refused",
                    "winner_device": max(key, local[0])[1],
                    "winner_updated_at": max(key, local[0])[0], "data": loser[1]})
            if not win:
                report.unchanged += 1
            elif data.get("deleted"):
                removals.append((key, lid))
            else:
                winners.append((key, data))
        with self.store.atomic():
            for (deleted_at, device), lid in removals:
                if lid in existing:
                    self.lessons.delete(lid)
                    report.deleted += 1
                self.tables.record_deletion(lid, deleted_at, device)
        known = self.store.existing_ids({str(e.get("to")) for _, d in winners
                                         for e in d.get("edges") or [] if isinstance(e, dict)})
        known |= {d["id"] for _, d in winners}
        lines = []
        for _, data in winners:
            data = trust_gate(redacted("lesson", data))
            data["edges"] = [e for e in data.get("edges") or []
                             if isinstance(e, dict) and e.get("to") in known]
            lines.append(json.dumps(data, ensure_ascii=False))
        with self.store.atomic():
            result = import_records(self.lessons, self.embedding, lines, skip_invalid=False,
                                    progress=None, force=True)
            for (updated_at, device), data in winners:
                self.tables.set_origin(data["id"], device, updated_at)
        report.added += result.added
        report.updated += result.updated
        return report

    # ---- the server's side ------------------------------------------------------------
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
            self.merge(lessons)
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
        own = self.device_id()
        records = []
        for lid in ids:
            try:
                lesson = self.store.get(lid)
            except NotFound:
                if lid in gone and gone[lid][1] != device:
                    records.append({"kind": "lesson", "id": lid, "device": gone[lid][1],
                                    "data": tombstone(lid, gone[lid][0])})
                continue
            origin = origins.get(lid)
            by = origin[0] if origin and origin[1] == lesson.updated_at else own
            if by == device or not shared(lesson):
                continue
            data = lesson.to_dict()
            data["edges"] = [e for e in data["edges"] if e["from"] == lid]
            records.append({"kind": "lesson", "id": lid, "device": by, "data": data})
        cursor = changes[-1][0] if changes else after
        return {"cursor": cursor, "check": changes[-1][1] if changes else check,
                "rewound": rewound, "more": len(changes) >= limit, "records": records}


# ---- the client: HTTP to a server --------------------------------------------------------
class Client:
    """The sync API of one server (``/api/v1/sync``), with errors as one line each."""

    def __init__(self, server: str, token: str | None, timeout: float = 30.0,
                 transport: Any = None) -> None:
        import httpx

        self.server = server.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=f"{self.server}/api/v1/sync", headers=headers,
                                 timeout=timeout, transport=transport)
        self.skew: float | None = None  # this clock minus the server's, from its Date header

    def close(self) -> None:
        self.http.close()

    def call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        import httpx

        try:
            sent = datetime.now(UTC)
            response = self.http.request(method, path, **kwargs)
            self.skew = clock_skew(response.headers.get("date"), sent, datetime.now(UTC))
        except httpx.TimeoutException:
            raise BackendUnavailable(f"the sync server {self.server} did not answer in time; "
                                     "run `lore sync` again (it resumes where it stopped)") from None
        except httpx.TransportError as exc:
            what = "cannot reach" if isinstance(exc, httpx.ConnectError) else "lost the connection to"
            raise BackendUnavailable(f"{what} the sync server {self.server} ({exc or type(exc).__name__}); "
                                     "is `lore serve` running there? run `lore sync` again to "
                                     "resume: nothing is stored twice") from None
        return self.answer(response)

    def answer(self, response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = None
        message = ((data or {}).get("error") or {}).get("message") if isinstance(data, dict) else None
        if response.status_code == 401:
            raise ConfigError(f"the sync server {self.server} refused the token (401): "
                              f"{message or 'no valid token'}; set LORE_SYNC_TOKEN, --token or "
                              "sync.token_file")
        code = ((data or {}).get("error") or {}).get("code") if isinstance(data, dict) else None
        if response.status_code == 403 and code == "denied":
            raise ConfigError(f"the sync server {self.server} refused (403): {message}")
        if response.status_code == 409 and code == "protocol":
            raise ConfigError(f"the sync server {self.server} refused the batch: {message}")
        if response.status_code == 403:
            raise ConfigError(f"the sync server {self.server} refused (403): {message or ''}; "
                              "pushing needs a write token (lore serve token create --scope write)")
        if response.status_code == 404:
            raise ConfigError(f"{self.server} has no sync API (404); is it a Lore server of this "
                              "version? (`lore serve` there, after an upgrade)")
        if response.status_code == 413:
            raise BatchTooLarge(f"the sync server {self.server} refused a batch as too large: "
                                f"{message or ''}")
        if response.status_code >= 400 or not isinstance(data, dict):
            raise BackendUnavailable(f"the sync server {self.server} answered "
                                     f"{response.status_code}: {message or response.text[:200]}")
        return data

    def info(self) -> dict[str, Any]:
        info = self.call("GET", "/info")
        theirs = info.get("protocol")
        if theirs != PROTOCOL:
            older = ("upgrade Lore on the server" if isinstance(theirs, int) and theirs < PROTOCOL
                     else f"upgrade Lore here ({package_command('upgrade')})")
            raise ConfigError(f"the sync server {self.server} speaks sync protocol {theirs} "
                              f"(Lore {info.get('version')}); this Lore speaks {PROTOCOL}: "
                              f"{older}")
        return info

    def state(self, device: str) -> dict[str, Any]:
        """The server's view of ``device`` (:meth:`Sync.view`)."""
        return self.call("GET", "/state", params={"device": device})

    def push(self, device: str, batch: Batch) -> dict[str, Any]:
        return self.call("POST", "/push", json={
            "protocol": PROTOCOL, "device": device, "batch_id": batch.batch_id,
            "stream": batch.stream, "after": batch.after, "end": batch.end,
            "records": batch.records})

    def pull(self, device: str, cursor: int, check: str | None = None,
             limit: int = PULL_LIMIT) -> dict[str, Any]:
        params: dict[str, Any] = {"device": device, "cursor": cursor, "limit": limit}
        if check:
            params["check"] = check
        return self.call("GET", "/pull", params=params)


def clock_skew(date: str | None, sent: datetime, received: datetime) -> float | None:
    """This clock minus the server's, in seconds, from the ``Date`` header of an answer
    between ``sent`` and ``received`` (None: no usable header). Zero while the server's time
    lies within the round trip, give or take the header's one-second resolution, and a second
    more before it: servers cache the header and renew it once a second (Uvicorn does)."""
    from email.utils import parsedate_to_datetime

    try:
        theirs = parsedate_to_datetime(date) if date else None
    except (TypeError, ValueError, IndexError):
        return None
    if theirs is None or theirs.tzinfo is None:
        return None
    if theirs < sent - timedelta(seconds=2):
        return (sent - theirs).total_seconds()
    if theirs > received + timedelta(seconds=1):
        return -(theirs - received).total_seconds()
    return 0.0


def run(sync: Sync, client: Client, *, batch_size: int = BATCH_SIZE, push: bool = True,
        pull: bool = True, progress: Progress | None = None) -> SyncReport:
    """Push every pending stream, then pull until the server has nothing newer."""
    device = sync.device_id()
    client.info()
    with sync.store.atomic():
        sync.store.set_meta(SERVER_KEY, client.server)
    report = SyncReport(client.server, device)
    if push:
        report.resent, report.behind = sync.align(client.state(device).get("acked") or {})
        total = sum(sync.pending(s) for s in STREAMS)
        done = 0
        for stream in STREAMS:
            size = batch_size
            while (batch := sync.next_batch(stream, size)) is not None:
                try:
                    ack = client.push(device, batch)
                except BatchTooLarge:
                    if size == 1:
                        first = batch.records[-1]
                        raise BatchTooLarge(
                            f"{first['kind']} {first['id']} alone is larger than the sync server "
                            f"{client.server} accepts; nothing after it in the {stream} stream "
                            "can be pushed until it is deleted here") from None
                    size = max(1, size // 2)  # the same rows again, in smaller batches
                    continue
                if ack.get("batch_id") != batch.batch_id:
                    raise BackendUnavailable(f"the sync server {client.server} acknowledged "
                                             "another batch; run `lore sync` again")
                sync.acknowledged(batch)
                report.batches += 1
                report.stored += int(ack.get("stored", 0))
                report.refused += int(ack.get("refused", 0))
                report.skipped.extend(batch.skipped)
                report.clamped += int(ack.get("clamped") or 0)
                report.ahead = max(report.ahead, float(ack.get("ahead") or 0.0))
                report.pushed[stream] = report.pushed.get(stream, 0) + batch.count
                done += batch.count
                if progress:
                    progress("push", done, max(total, done))
    if pull:
        cursor = int(sync.store.meta(PULL_KEY) or 0)
        check = sync.store.meta(PULL_CHECK_KEY) if cursor else None
        while True:
            page = client.pull(device, cursor, check)
            if page.get("rewound"):
                report.resent["pull"] = (cursor, 0)
            records = page.get("records") or []
            cursor = int(page.get("cursor", cursor))
            check = page.get("check") if isinstance(page.get("check"), str) else check
            merged = sync.apply_pulled(records, cursor, check)
            report.pulled += len(records)
            for name in ("added", "updated", "unchanged", "conflicts", "deleted", "refused"):
                setattr(report.merge, name, getattr(report.merge, name) + getattr(merged, name))
            if progress and records:
                progress("pull", report.pulled, report.pulled)
            if not page.get("more"):
                break
    report.skew = client.skew
    sync.note_clock(report)
    return report


def read_token_file(path: Path) -> str:
    """The token in a file only its owner may read (mode 0600); refused otherwise."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ConfigError(f"sync token file {path} does not exist; write the token there "
                          f"(umask 077; echo TOKEN > {path}) or set LORE_SYNC_TOKEN") from None
    if os.name == "posix" and mode & 0o077:
        raise ConfigError(f"sync token file {path} may be read by others (mode "
                          f"{stat.S_IMODE(mode):04o}); chmod 600 {path}")
    token = path.read_text(encoding="utf-8").strip()
    if not token:
        raise ConfigError(f"sync token file {path} is empty; write the token there")
    return token
