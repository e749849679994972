"""Writing into the queue: what a hook does with its event (the reader is :mod:`lore.capture.queue`).

One file per event under ``queue/pending``, written to a hidden temporary name and renamed:
concurrent writers never interleave, a reader never sees half an event, and no writer waits
for a lock. A write that fails (a full disk) removes its temporary file and raises.

Standard library only, and neither :mod:`pathlib` nor :mod:`typing`: every hook imports this,
and those two cost a hook more than its own work (docs/benchmarks.md). Paths are strings or
anything :func:`os.fspath` takes.
"""

from __future__ import annotations

import errno
import json
import os
import time

from lore.normalize import storable_json
from lore.private import open_private, private_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

VERSION = 1


def append(root: str | os.PathLike[str], kind: str, payload: dict[str, Any]) -> str:
    """Queue one event of ``kind`` in the queue folder ``root``; return its id (time-ordered
    and unique). No fsync: it would cost milliseconds on every hook. The event survives any
    crash of the agent or the worker (it is in the page cache); only an OS crash in the next
    few seconds could lose it."""
    pending = os.path.join(root, "pending")
    if not os.path.isdir(pending):
        private_dir(pending)
    event_id = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(3).hex()}"
    record = {"v": VERSION, "id": event_id, "kind": kind, "at": time.time(), "payload": payload}
    write_atomic(os.path.join(pending, f"{event_id}.json"), encode(record),
                 hidden=f".{event_id}.tmp")
    return event_id


def encode(record: dict[str, Any]) -> bytes:
    """``record`` as UTF-8 JSON; a lone surrogate from a caller becomes U+FFFD."""
    try:
        return json.dumps(record, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(storable_json(record), ensure_ascii=False).encode("utf-8")


def write_atomic(path: str | os.PathLike[str], data: bytes, hidden: str | None = None) -> None:
    """Write ``data`` to a temporary file beside ``path`` (named ``hidden``, else
    ``.lore-NAME.tmp``) and rename it over ``path``; on any failure the temporary file is
    removed and the error raised."""
    folder, name = os.path.split(os.fspath(path))
    tmp = os.path.join(folder, hidden or f".lore-{name}.tmp")
    try:
        fd = open_private(tmp)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (a write cut short is continued; one that writes nothing raises
    ENOSPC, as a full disk does)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[n:]
