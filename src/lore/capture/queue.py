"""The durable event queue between hooks (many writers) and the worker (one reader).

One file per event under ``queue/pending``, written by :mod:`lore.capture.enqueue` (the
hooks' side). Names sort by time, so events are taken in order. The worker sweeps its own
temporary files older than a minute (a writer killed mid-write), and no other.

The worker handles an event, appends it to ``queue/done.jsonl`` and only then removes the
file it read: a crash in between means the event is seen again (at-least-once), and handlers
are idempotent. The file read is the file removed, whatever its name: a copy a sync tool made
(``X (conflicted copy).json``) is handled once like any other file, and a copy of an event
that was already handled is removed without handling it again. Only regular files are
read (a named pipe, a link or a folder in ``pending`` is left alone), opened without
blocking. ``done.jsonl`` rotates past 10 MB and keeps ``KEEP_ROTATED`` old files; a line is
written whole or not at all, and a reader skips a line cut short. An event that cannot be
read moves to ``queue/quarantine`` with the reason, and the entries behind it go on.

An event whose handling fails stays pending with its attempt count, last error and the time
of its next try written into its file (``fail``), so a restart does not reset the count; the
events behind it are taken meanwhile. After the last attempt it moves to quarantine with the
reason. ``queue/errors.json`` counts the failures, and apart those the database raised; it has
a fixed size, so it can be rewritten in place when the disk is full. ``requeue`` puts
quarantined events back.

This module imports only the standard library; the hooks import only ``enqueue``.

Everything here is private to the user (folders 0700, files 0600): events quote the prompts.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lore.capture.enqueue import VERSION, append, encode, write_all, write_atomic
from lore.normalize import json_value
from lore.private import make_private, private_dir

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

ROTATE_BYTES = 10 * 1024 * 1024
KEEP_ROTATED = 3  # rotated done-*.jsonl files kept; older ones are deleted
# A retry planned further ahead than this is due now: the clock was set back since it was planned.
MAX_RETRY_DELAY = 3600.0
STALE_TMP_SECONDS = 60.0  # a temporary file this old belongs to a writer that died or failed
MAX_EVENT_BYTES = 32 * 1024 * 1024  # a larger file in pending/ is no event a hook wrote
ERRORS_BYTES = 8192  # errors.json is padded to this size, so it can be rewritten in place
MAX_REASON = 500  # characters of a failure's reason kept in errors.json
DONE_IDS_KEPT = 200_000  # ids of handled events remembered to pass over a copy of one
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DONE_ID = re.compile(rb'^\{"v": \d+, "id": "((?:[^"\\]|\\.)*)"')
# Lore's own temporary files (an event being written, a file being replaced): only these are
# swept; a sync tool's temporary files beside them are not Lore's to delete.
_OWN_TMP = re.compile(r"\.(?:\d{20}-\d+-[0-9a-f]{6}|lore-.+)\.tmp")


class NotRegular(OSError):
    """A path that is not a regular file (a named pipe, a link, a device, a folder)."""


class Event:
    """One queued hook event. (A plain class: dataclasses would cost the hook ~10 ms of imports.)"""

    __slots__ = ("id", "kind", "at", "payload", "version", "attempts", "retry_at", "last_error",
                 "path")

    def __init__(self, id: str, kind: str, at: float, payload: dict[str, Any],
                 version: int = VERSION, attempts: int = 0, retry_at: float = 0.0,
                 last_error: str | None = None, path: Path | None = None) -> None:
        self.id = id  # time-ordered and unique; a label, never a path
        self.kind = kind  # hook event name: SessionStart, Stop, …
        self.at = at  # seconds since the epoch, when the hook ran
        self.payload = payload
        self.version = version
        self.attempts = attempts  # failed handling attempts so far
        self.retry_at = retry_at  # seconds since the epoch: not taken again before this
        self.last_error = last_error
        self.path = path  # the file it was read from: the one acknowledged or rewritten

    def to_dict(self) -> dict[str, Any]:
        record = {"v": self.version, "id": self.id, "kind": self.kind, "at": self.at,
                  "payload": self.payload}
        if self.attempts:
            record.update(attempts=self.attempts, retry_at=self.retry_at,
                          last_error=self.last_error)
        return record


def read_regular(path: Path, limit: int = MAX_EVENT_BYTES) -> bytes:
    """The bytes of a regular file, opened without blocking and without following a link:
    a named pipe or a device raises :class:`NotRegular` instead of hanging the reader; a file
    larger than ``limit`` raises ValueError."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise NotRegular(exc.errno, f"not a regular file: {path.name}") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(errno.EINVAL, f"not a regular file: {path.name}")
        if st.st_size > limit:
            raise ValueError(f"{st.st_size} bytes: larger than any event ({limit})")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class Queue:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.pending = root / "pending"
        self.quarantine = root / "quarantine"
        self.done = root / "done.jsonl"
        self.errors = root / "errors.json"
        # Failures whose count could not be written into the event's file (a full disk):
        # file name -> (attempts, retry_at, last_error), so the backoff holds meanwhile.
        self._held: dict[str, tuple[int, float, str]] = {}
        self._done_ids: dict[str, None] | None = None  # insertion-ordered, loaded on first use
        self._swept = 0.0

    # ---- writers (hooks) ----------------------------------------------------------------
    def append(self, kind: str, payload: dict[str, Any]) -> str:
        """Queue one event (what a hook does, through :func:`lore.capture.enqueue.append`)."""
        return append(self.root, kind, payload)

    # ---- the reader (worker) ------------------------------------------------------------
    def files(self, *, sweep: bool = False) -> list[str]:
        """The names of the event files in pending, oldest first: regular files named
        ``*.json`` (a temporary ``.…tmp`` file is a write in progress). With ``sweep``,
        temporary files older than a minute are removed on the way."""
        try:
            entries = list(os.scandir(self.pending))
        except (FileNotFoundError, NotADirectoryError):
            return []
        names = []
        for entry in entries:
            name = entry.name
            try:
                regular = entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if not regular:
                continue  # a named pipe, a link, a folder: not an event, never opened
            if name.startswith("."):
                if sweep and _OWN_TMP.fullmatch(name):
                    _remove_if_stale(Path(entry.path))
                continue
            if name.endswith(".json"):
                names.append(name)
        return sorted(names)

    def depth(self) -> int:
        return len(self.files())

    def take(self, now: float | None = None) -> Iterator[Event]:
        """Pending events that are due, oldest first; unreadable ones go to quarantine on the way.

        An event waiting for its retry is passed over, so the events behind it go on. A file
        holding an event that was already handled (a copy) is acknowledged without yielding it.
        """
        self._sweep_root()
        for name in self.files(sweep=True):
            path = self.pending / name
            try:
                event = self._read(path)
            except (FileNotFoundError, NotRegular):
                continue  # another reader took it, or it was swapped for something else
            except (OSError, ValueError, KeyError, TypeError) as exc:
                self.quarantine_file(path, f"{type(exc).__name__}: {exc}")
                continue
            held = self._held.get(name)
            if held and held[0] > event.attempts:
                event.attempts, event.retry_at, event.last_error = held
            t = time.time() if now is None else now
            if t < event.retry_at <= t + MAX_RETRY_DELAY:
                continue
            if event.id in self.done_ids():
                self.ack(event, "a copy of an event already handled: not handled again")
                continue
            yield event

    def _read(self, path: Path) -> Event:
        # Lone surrogates and NULs (an event written by an older hook) become U+FFFD.
        data = json_value(read_regular(path))
        if not isinstance(data, dict):
            raise ValueError("an event must be a JSON object")
        error = data.get("last_error")
        event = Event(id=str(data["id"]), kind=str(data["kind"]), at=float(data["at"]),
                      payload=dict(data["payload"]), version=int(data.get("v", 1)),
                      attempts=int(data.get("attempts", 0)),
                      retry_at=float(data.get("retry_at", 0.0)),
                      last_error=error if isinstance(error, str) else None, path=path)
        if event.version > VERSION:
            raise ValueError(f"event version {event.version} is newer than {VERSION}")
        return event

    def _file_of(self, event: Event) -> Path | None:
        """The file ``event`` was read from; for an event made in memory, the file its id
        names, when the id is a plain file name."""
        if event.path is not None:
            return event.path
        name = f"{event.id}.json"
        return self.pending / name if "/" not in name and "\\" not in name else None

    def fail(self, event: Event, reason: str, *, max_attempts: int, delay: float,
             database: bool = False) -> bool:
        """Count a failed attempt at handling ``event`` (``database``: the database raised).
        Until ``max_attempts`` the event stays pending and is due again after ``delay``
        seconds; then it moves to quarantine with the reason. Returns whether it was
        quarantined. A count that cannot be written into the event's file (a full disk) is
        kept in memory, so the backoff holds until the worker stops."""
        self.record_failure(reason, database=database, event=event)
        event.attempts += 1
        event.last_error = reason
        event.retry_at = time.time() + delay
        path = self._file_of(event)
        if path is None:
            return False
        if event.attempts >= max_attempts:
            self._held.pop(path.name, None)
            self.quarantine_file(path, f"{event.kind} failed {event.attempts} times; last: {reason}")
            return True
        self._held[path.name] = (event.attempts, event.retry_at, reason)
        if path.exists():
            try:
                write_atomic(path, encode(event.to_dict()))
                self._held.pop(path.name, None)
            except OSError:
                pass  # kept in memory meanwhile
        return False

    def retrying(self) -> list[Event]:
        """Pending events that failed at least once and wait for another attempt."""
        out = []
        for name in self.files():
            try:
                event = self._read(self.pending / name)
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if event.attempts:
                out.append(event)
        return out

    # ---- failure counts -----------------------------------------------------------------
    def error_count(self) -> dict[str, Any]:
        """How many handling attempts failed and the last failure; under ``database``, how
        many of those (and of the worker's other database work) the database raised."""
        empty: dict[str, Any] = {"count": 0, "last": None, "database": {"count": 0, "last": None},
                                 "dropped": {"count": 0, "last": None}}
        for _ in range(3):  # rewritten in place on a full disk: a torn read is tried again
            try:
                data = json.loads(read_regular(self.errors, 1 << 20))
            except FileNotFoundError:
                return empty
            except (OSError, ValueError):
                time.sleep(0.01)
                continue
            if not isinstance(data, dict):
                return empty
            for part in ("database", "dropped"):
                found = data.get(part)
                data[part] = found if isinstance(found, dict) else empty[part]
            return data
        return empty

    def record_failure(self, reason: str, *, database: bool = False,
                       event: Event | None = None, dropped: bool = False) -> None:
        """Count one failure in ``errors.json``: an event's failed attempt (``event``), one
        the database raised (``database``), or an event a hook could not queue (``dropped``).
        Never raises: on a full disk the fixed-size file is rewritten in place. Writers (the
        worker, any number of hooks) take turns on ``errors.lock``, so no count is lost to
        another's."""
        with _turn(self.root):
            data = self.error_count()
            last = {"reason": reason[:MAX_REASON], "at": time.time()}
            if event is not None:
                last.update(id=event.id, kind=event.kind)
                data["count"] = int(data.get("count") or 0) + 1
                data["last"] = last
            for part, counted in (("database", database), ("dropped", dropped)):
                if counted:
                    data[part] = {"count": int(data[part].get("count") or 0) + 1, "last": last}
            self.write_errors(data)

    def write_errors(self, data: dict[str, Any] | None = None) -> bool:
        """Write ``errors.json`` (``data``, or the counts as they are: a file of its full size
        made early, so that a disk that fills later can still take the count)."""
        text = encode(self.error_count() if data is None else data)
        if len(text) < ERRORS_BYTES:
            text += b" " * (ERRORS_BYTES - 1 - len(text)) + b"\n"
        try:
            private_dir(self.root)
            write_atomic(self.errors, text)
            return True
        except OSError:
            pass
        try:  # no room for a new file: overwrite the old one's blocks
            fd = os.open(self.errors, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size < len(text):
                return False
            return os.pwrite(fd, text.ljust(st.st_size, b" ")[:-1] + b"\n", 0) == st.st_size
        except OSError:
            return False
        finally:
            os.close(fd)

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
            private_dir(self.pending)
            write_atomic(self.pending / name, encode(event.to_dict()))
            path.unlink()
            (self.quarantine / f"{name}.reason").unlink(missing_ok=True)
            self.forget(event.id)
            moved += 1
        return moved

    # ---- handled events -----------------------------------------------------------------
    def ack(self, event: Event, outcome: str = "ok") -> None:
        """Record the event as handled, then remove the file it was read from."""
        self._append_done({**event.to_dict(), "outcome": outcome, "handled_at": time.time()})
        self._remember(event.id)
        path = self._file_of(event)
        if path is not None:
            self._held.pop(path.name, None)
            try:
                path.unlink()
            except FileNotFoundError:
                pass

    def done_ids(self) -> dict[str, None]:
        """The ids of handled events: those in ``done.jsonl`` and its newest rotated file
        when first asked, then every one acknowledged here."""
        if self._done_ids is None:
            found: dict[str, None] = {}
            for path in [*self.rotated()[-1:], self.done]:
                for line in _lines(path):
                    m = _DONE_ID.match(line)
                    if m:
                        try:
                            found[json.loads(b'"' + m.group(1) + b'"')] = None
                        except ValueError:
                            continue
            self._done_ids = found
        return self._done_ids

    def _remember(self, event_id: str) -> None:
        ids = self.done_ids()
        ids[event_id] = None
        if len(ids) > DONE_IDS_KEPT:
            for old in list(ids)[: len(ids) - DONE_IDS_KEPT // 2]:
                del ids[old]

    def forget(self, event_id: str) -> None:
        """Handle ``event_id`` again when it is next taken (a requeued event)."""
        if self._done_ids is not None:
            self._done_ids.pop(event_id, None)

    def rotated(self) -> list[Path]:
        """The rotated ``done-*.jsonl`` files, oldest first."""
        try:
            found = [p for p in self.root.glob("done-*.jsonl") if p.is_file()]
        except OSError:
            return []
        return sorted(found, key=lambda p: (_mtime(p), p.name))

    def quarantine_file(self, path: Path, reason: str) -> None:
        private_dir(self.quarantine)
        target = self.quarantine / path.name
        try:
            os.replace(path, target)
        except FileNotFoundError:
            return
        make_private(target)  # whoever wrote it, it holds a prompt
        try:
            write_atomic(self.quarantine / f"{path.name}.reason", (reason + "\n").encode())
        except OSError:
            pass  # a full disk: the event is set aside all the same, its reason shown "unknown"

    def quarantined(self) -> list[tuple[str, str]]:
        try:
            names = sorted(e.name for e in os.scandir(self.quarantine)
                           if e.name.endswith(".json") and e.is_file(follow_symlinks=False))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for name in names:
            try:
                reason = read_regular(self.quarantine / f"{name}.reason", 1 << 20)
                text = reason.decode("utf-8", "replace").strip()
            except (OSError, ValueError):
                text = "unknown"
            out.append((name, text))
        return out

    def last_done(self) -> dict[str, Any] | None:
        for line in reversed(_lines(self.done, tail=65536)):
            try:
                data = json.loads(line)
            except ValueError:
                continue  # a line cut short (an older Lore on a full disk)
            if isinstance(data, dict):
                return data
        return None

    def _append_done(self, record: dict[str, Any]) -> None:
        """Append one line to ``done.jsonl``: the whole line or nothing (a write cut short
        by a full disk is undone), after a newline if the last line was left unfinished."""
        private_dir(self.root)
        if _size(self.done) > ROTATE_BYTES:
            self._rotate()
        line = encode(record) + b"\n"
        fd = os.open(self.done, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
                     | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise NotRegular(errno.EINVAL, f"{self.done} is not a regular file")
            if stat.S_IMODE(st.st_mode) & 0o077:
                os.fchmod(fd, 0o600)
            size = st.st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            try:
                write_all(fd, line)
            except BaseException:
                try:
                    os.ftruncate(fd, size)
                except OSError:
                    pass
                raise
        finally:
            os.close(fd)

    def _rotate(self) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        os.replace(self.done, self.root / f"done-{stamp}-{time.time_ns() % 10**9:09d}.jsonl")
        for old in self.rotated()[:-KEEP_ROTATED]:
            try:
                old.unlink()
            except OSError:
                pass

    def _sweep_root(self) -> None:
        """Remove stale temporary files beside errors.json (once a minute at most)."""
        now = time.monotonic()
        if now - self._swept < STALE_TMP_SECONDS:
            return
        self._swept = now
        for folder in (self.root, self.quarantine):
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if _OWN_TMP.fullmatch(entry.name):
                    _remove_if_stale(Path(entry.path))


class _turn:  # noqa: N801 - used as a context manager, like a function
    """An exclusive lock on ``errors.lock`` in a folder (flock; POSIX), held for a block; no
    lock where none can be taken (the block runs all the same). Not the folder itself: the
    worker holds the queue folder's lock for as long as it runs."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "errors.lock"
        self.fd: int | None = None

    def __enter__(self) -> None:
        try:
            import fcntl

            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                              0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except (ImportError, OSError):
            if self.fd is not None:
                os.close(self.fd)
            self.fd = None

    def __exit__(self, *_: object) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor lets the lock go
            self.fd = None


def _remove_if_stale(path: Path) -> None:
    try:
        st = path.lstat()
        if stat.S_ISREG(st.st_mode) and time.time() - st.st_mtime > STALE_TMP_SECONDS:
            path.unlink()
    except OSError:
        pass


def _lines(path: Path, tail: int | None = None) -> list[bytes]:
    """The lines of a regular file (its last ``tail`` bytes), never blocking on a pipe."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return []
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return []
        start = max(0, st.st_size - tail) if tail else 0
        data = os.pread(fd, st.st_size - start, start) if st.st_size > start else b""
    except OSError:
        return []
    finally:
        os.close(fd)
    lines = data.splitlines()
    return lines[1:] if start and lines else lines  # the first may be cut by the tail


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
