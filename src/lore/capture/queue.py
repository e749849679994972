"""The durable event queue between hooks (many writers) and the worker (one reader).

One file per event under ``queue/pending``: written to a temporary name and renamed,
so concurrent writers never interleave and a reader never sees half an event; no
locks, so a hook never waits. Names sort by time, so events are taken in order.
The worker handles an event, appends it to ``queue/done.jsonl`` (rotated past 10 MB)
and only then removes it: a crash in between means the event is seen again
(at-least-once), and handlers are idempotent. An event that cannot be read moves to
``queue/quarantine`` with the reason, and the entries behind it go on.

An event whose handling fails stays pending with its attempt count, last error and the time
of its next try written into its file (``fail``), so a restart does not reset the count; the
events behind it are taken meanwhile. After the last attempt it moves to quarantine with the
reason. ``queue/errors.json`` counts the failures. ``requeue`` puts quarantined events back.

This module imports only the standard library (and Lore's stdlib-only ``normalize``): it is on
the hook path.

Everything here is private to the user (folders 0700, files 0600): events quote the prompts.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lore.normalize import json_value, storable_json
from lore.private import make_private, open_private, private_dir

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

VERSION = 1
ROTATE_BYTES = 10 * 1024 * 1024
# A retry planned further ahead than this is due now: the clock was set back since it was planned.
MAX_RETRY_DELAY = 3600.0


class Event:
    """One queued hook event. (A plain class: dataclasses would cost the hook ~10 ms of imports.)"""

    __slots__ = ("id", "kind", "at", "payload", "version", "attempts", "retry_at", "last_error")

    def __init__(self, id: str, kind: str, at: float, payload: dict[str, Any],
                 version: int = VERSION, attempts: int = 0, retry_at: float = 0.0,
                 last_error: str | None = None) -> None:
        self.id = id  # the file name without .json: time-ordered and unique
        self.kind = kind  # hook event name: SessionStart, Stop, …
        self.at = at  # seconds since the epoch, when the hook ran
        self.payload = payload
        self.version = version
        self.attempts = attempts  # failed handling attempts so far
        self.retry_at = retry_at  # seconds since the epoch: not taken again before this
        self.last_error = last_error

    def to_dict(self) -> dict[str, Any]:
        record = {"v": self.version, "id": self.id, "kind": self.kind, "at": self.at,
                  "payload": self.payload}
        if self.attempts:
            record.update(attempts=self.attempts, retry_at=self.retry_at,
                          last_error=self.last_error)
        return record


class Queue:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.pending = root / "pending"
        self.quarantine = root / "quarantine"
        self.done = root / "done.jsonl"
        self.errors = root / "errors.json"

    # ---- writers (hooks) ----------------------------------------------------------------
    def append(self, kind: str, payload: dict[str, Any]) -> str:
        if not self.pending.is_dir():
            private_dir(self.pending)
        event_id = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(3).hex()}"
        record = {"v": VERSION, "id": event_id, "kind": kind, "at": time.time(), "payload": payload}
        tmp = self.pending / f".{event_id}.tmp"
        # No fsync: it would cost milliseconds on every hook. The event survives any crash of
        # the agent or the worker (it is in the page cache); only an OS crash in the next few
        # seconds could lose it.
        try:
            text = json.dumps(record, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from a caller: U+FFFD instead
            text = json.dumps(storable_json(record), ensure_ascii=False).encode("utf-8")
        with open(open_private(tmp), "wb") as fh:
            fh.write(text)
        os.replace(tmp, self.pending / f"{event_id}.json")
        return event_id

    # ---- the reader (worker) ------------------------------------------------------------
    def ids(self) -> list[str]:
        if not self.pending.is_dir():
            return []
        return sorted(p.name[:-5] for p in self.pending.iterdir()
                      if p.name.endswith(".json") and not p.name.startswith("."))

    def depth(self) -> int:
        return len(self.ids())

    def take(self, now: float | None = None) -> Iterator[Event]:
        """Pending events that are due, oldest first; unreadable ones go to quarantine on the way.

        An event waiting for its retry is passed over, so the events behind it go on.
        """
        for event_id in self.ids():
            path = self.pending / f"{event_id}.json"
            try:
                event = self._read(path)
            except FileNotFoundError:
                continue  # another reader took it
            except (OSError, ValueError, KeyError, TypeError) as exc:
                self.quarantine_file(path, f"{type(exc).__name__}: {exc}")
                continue
            t = time.time() if now is None else now
            if t < event.retry_at <= t + MAX_RETRY_DELAY:
                continue
            yield event

    def _read(self, path: Path) -> Event:
        # Lone surrogates and NULs (an event written by an older hook) become U+FFFD.
        data = json_value(path.read_bytes())
        if not isinstance(data, dict):
            raise ValueError("an event must be a JSON object")
        error = data.get("last_error")
        event = Event(id=str(data["id"]), kind=str(data["kind"]), at=float(data["at"]),
                      payload=dict(data["payload"]), version=int(data.get("v", 1)),
                      attempts=int(data.get("attempts", 0)),
                      retry_at=float(data.get("retry_at", 0.0)),
                      last_error=error if isinstance(error, str) else None)
        if event.version > VERSION:
            raise ValueError(f"event version {event.version} is newer than {VERSION}")
        return event

    def fail(self, event: Event, reason: str, *, max_attempts: int, delay: float) -> bool:
        """Count a failed attempt at handling ``event``. Until ``max_attempts`` the event stays
        pending and is due again after ``delay`` seconds; then it moves to quarantine with the
        reason. Returns whether it was quarantined."""
        self._count_error(event, reason)
        event.attempts += 1
        event.last_error = reason
        event.retry_at = time.time() + delay
        path = self.pending / f"{event.id}.json"
        if event.attempts >= max_attempts:
            self.quarantine_file(path, f"{event.kind} failed {event.attempts} times; last: {reason}")
            return True
        if path.exists():
            _write_atomic(path, json.dumps(event.to_dict(), ensure_ascii=False))
        return False

    def retrying(self) -> list[Event]:
        """Pending events that failed at least once and wait for another attempt."""
        out = []
        for event_id in self.ids():
            try:
                event = self._read(self.pending / f"{event_id}.json")
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if event.attempts:
                out.append(event)
        return out

    def error_count(self) -> dict[str, Any]:
        """How many handling attempts failed, and the last failure."""
        try:
            data = json.loads(self.errors.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"count": 0, "last": None}
        return data if isinstance(data, dict) else {"count": 0, "last": None}

    def _count_error(self, event: Event, reason: str) -> None:
        count = int(self.error_count().get("count") or 0) + 1
        last = {"id": event.id, "kind": event.kind, "reason": reason, "at": time.time()}
        self.root.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.errors, json.dumps({"count": count, "last": last}, ensure_ascii=False))

    def requeue(self) -> int:
        """Move every quarantined event back to pending with a fresh attempt count."""
        moved = 0
        for name, _ in self.quarantined():
            path = self.quarantine / name
            try:
                event = self._read(path)
            except (OSError, ValueError, KeyError, TypeError):
                continue  # still unreadable: it stays where it is
            event.attempts, event.retry_at, event.last_error = 0, 0.0, None
            self.pending.mkdir(parents=True, exist_ok=True)
            _write_atomic(self.pending / name, json.dumps(event.to_dict(), ensure_ascii=False))
            path.unlink()
            (self.quarantine / f"{name}.reason").unlink(missing_ok=True)
            moved += 1
        return moved

    def ack(self, event: Event, outcome: str = "ok") -> None:
        """Record the event as handled, then remove it from pending."""
        self._append_done({**event.to_dict(), "outcome": outcome, "handled_at": time.time()})
        try:
            (self.pending / f"{event.id}.json").unlink()
        except FileNotFoundError:
            pass

    def quarantine_file(self, path: Path, reason: str) -> None:
        private_dir(self.quarantine)
        target = self.quarantine / path.name
        try:
            os.replace(path, target)
        except FileNotFoundError:
            return
        make_private(target)  # whoever wrote it, it holds a prompt
        with open(open_private(self.quarantine / f"{path.name}.reason"), "w",
                  encoding="utf-8") as fh:
            fh.write(reason + "\n")

    def quarantined(self) -> list[tuple[str, str]]:
        if not self.quarantine.is_dir():
            return []
        out = []
        for p in sorted(self.quarantine.glob("*.json")):
            reason = self.quarantine / f"{p.name}.reason"
            out.append((p.name, reason.read_text(encoding="utf-8").strip() if reason.exists()
                        else "unknown"))
        return out

    def last_done(self) -> dict[str, Any] | None:
        if not self.done.exists() or self.done.stat().st_size == 0:
            return None
        with open(self.done, "rb") as fh:
            fh.seek(max(0, self.done.stat().st_size - 65536))
            lines = fh.read().splitlines()
        for line in reversed(lines):
            try:
                return dict(json.loads(line))
            except ValueError:
                continue
        return None

    def _append_done(self, record: dict[str, Any]) -> None:
        private_dir(self.root)
        if self.done.exists() and self.done.stat().st_size > ROTATE_BYTES:
            stamp = time.strftime("%Y%m%dT%H%M%S")
            os.replace(self.done, self.root / f"done-{stamp}-{os.getpid()}.jsonl")
        with open(open_private(self.done, "a"), "a", encoding="utf-8", errors="replace") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(open_private(tmp), "w", encoding="utf-8", errors="replace") as fh:
        fh.write(text)
    os.replace(tmp, path)
