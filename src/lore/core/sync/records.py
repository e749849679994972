"""What a device sends and a server checks: the sync protocol's constants, each record's id,
redaction and content hash, a batch's name, believable lesson dates, and what a pull hands out."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from lore.errors import InvalidInput
from lore.extract.steer import SYNCED
from lore.ids import parse_time
from lore.models import Lesson
from lore.redact import redact_value
from lore.review.queue import decided

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
CLOCK_KEY = "sync.clock"  # the last sync's clock findings (JSON), for `lore sync --status`



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


def written_by(lesson: Lesson, origins: Mapping[str, tuple[str, str]], own: str) -> str:
    """The device that wrote ``lesson``'s current version: the one sync brought it from
    (``origins``: lesson id -> (device, updated_at)), else this home (``own``)."""
    origin = origins.get(lesson.id)
    return origin[0] if origin and origin[1] == lesson.updated_at else own


def lesson_record(lesson: Lesson, device: str) -> dict[str, Any]:
    """A lesson version as a sync record of ``device``: its exported fields with only its
    outgoing edges (each edge travels once, with the lesson it starts from)."""
    data = lesson.to_dict()
    data["edges"] = [e for e in data["edges"] if e["from"] == lesson.id]
    return {"kind": "lesson", "id": lesson.id, "device": device, "data": data}


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
