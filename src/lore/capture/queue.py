"""The durable event queue between hooks (many writers) and the worker (one reader).

One file per event under ``queue/pending``: written to a temporary name and renamed,
so concurrent writers never interleave and a reader never sees half an event; no
locks, so a hook never waits. Names sort by time, so events are taken in order.
The worker handles an event, appends it to ``queue/done.jsonl`` (rotated past 10 MB)
and only then removes it: a crash in between means the event is seen again
(at-least-once), and handlers are idempotent. An event that cannot be read moves to
``queue/quarantine`` with the reason, and the entries behind it go on.

Everything here is private to the user (folders 0700, files 0600): events quote the prompts.
This module imports only the standard library: it is on the hook path.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lore.private import make_private, open_private, private_dir

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

VERSION = 1
ROTATE_BYTES = 10 * 1024 * 1024


class Event:
    """One queued hook event. (A plain class: dataclasses would cost the hook ~10 ms of imports.)"""

    __slots__ = ("id", "kind", "at", "payload", "version")

    def __init__(self, id: str, kind: str, at: float, payload: dict[str, Any],
                 version: int = VERSION) -> None:
        self.id = id  # the file name without .json: time-ordered and unique
        self.kind = kind  # hook event name: SessionStart, Stop, …
        self.at = at  # seconds since the epoch, when the hook ran
        self.payload = payload
        self.version = version

    def to_dict(self) -> dict[str, Any]:
        return {"v": self.version, "id": self.id, "kind": self.kind, "at": self.at,
                "payload": self.payload}


class Queue:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.pending = root / "pending"
        self.quarantine = root / "quarantine"
        self.done = root / "done.jsonl"

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
        with open(open_private(tmp), "w", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False))
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

    def take(self) -> Iterator[Event]:
        """Pending events, oldest first; unreadable ones go to quarantine on the way."""
        for event_id in self.ids():
            path = self.pending / f"{event_id}.json"
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                event = Event(id=str(data["id"]), kind=str(data["kind"]), at=float(data["at"]),
                              payload=dict(data["payload"]), version=int(data.get("v", 1)))
                if event.version > VERSION:
                    raise ValueError(f"event version {event.version} is newer than {VERSION}")
            except FileNotFoundError:
                continue  # another reader took it
            except (OSError, ValueError, KeyError, TypeError) as exc:
                self.quarantine_file(path, f"{type(exc).__name__}: {exc}")
                continue
            yield event

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
        with open(open_private(self.done, "a"), "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
