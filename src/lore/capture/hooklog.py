"""``$LORE_HOME/logs/hooks.log``: what a hook could not do, one short line each (then the
traceback of an unexpected error), and the count of events the hooks could not queue.

The log is renamed to ``hooks.log.1`` once it passes :data:`LOG_BYTES` (one old file kept).
The size is read from the descriptor the line is written to (``fstat``), so the check costs
no extra lookup on the hook's path; a hook that finds the log already renamed by another
leaves it alone. An event that could not be queued (a full disk, an unwritable queue) is
logged and counted in ``queue/errors.json`` (``dropped``), which `lore worker status` shows.

Standard library only (and Lore's stdlib-only modules): the hooks write it on the agent's
critical path. Nothing here raises.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

LOG_BYTES = 1024 * 1024  # hooks.log past this becomes hooks.log.1 (one kept)
_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)


def write(home: str | Path, line: str, detail: str | None = None) -> None:
    """Append ``line`` (one line, written alone first: on a full disk it may still fit in the
    log's last block), then ``detail``, to the home's hooks.log; rotate it first when it
    passed :data:`LOG_BYTES`. Never raises."""
    from lore.private import open_private, private_dir

    try:
        path = os.path.join(private_dir(os.path.join(home, "logs")), "hooks.log")
        fd = open_private(path, "a")
        try:
            st = os.fstat(fd)
            if st.st_size > LOG_BYTES:
                fd = _rotated(path, fd, st)
            os.write(fd, (line.rstrip("\n") + "\n").encode("utf-8", "replace"))
            if detail:
                os.write(fd, (detail.rstrip("\n") + "\n").encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:  # noqa: BLE001 - even logging may fail (unwritable home): stay silent
        pass


def _rotated(path: str, fd: int, st: os.stat_result) -> int:
    """Rename the full log to hooks.log.1 and return a descriptor of a new one; the open log
    when the rename fails (it keeps growing: the next hook tries again) or another hook
    renamed it first (its new log is used)."""
    try:
        now = os.stat(path)
        if (now.st_ino, now.st_dev) == (st.st_ino, st.st_dev):
            os.replace(path, path + ".1")
        new = os.open(path, _FLAGS, 0o600)
    except OSError:
        return fd
    os.close(fd)
    return new


def line(event_name: str, what: str, exc: BaseException | None = None) -> str:
    """One log line: the time, the hook, what happened and the error, redacted, on one line."""
    from lore.redact import redact

    text = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} hook {event_name} {what}"
    if exc is not None:
        text += f": {type(exc).__name__}: {exc}"
    return redact(" ".join(text.split()))[:2000]


def dropped(home: str | Path, event_name: str, exc: BaseException, what: str) -> None:
    """An event the hook could not queue: one line in hooks.log (``what`` happened, and why)
    and one more in ``queue/errors.json``'s ``dropped`` count. Never raises."""
    write(home, line(event_name, what, exc))
    count(home, f"{event_name}: {type(exc).__name__}: {exc}")


def count(home: str | Path, reason: str) -> None:
    """Count one event not queued in ``queue/errors.json`` (``dropped``). Never raises."""
    from lore.capture.queue import Queue
    from lore.redact import redact

    try:
        from pathlib import Path

        Queue(Path(home) / "queue").record_failure(redact(" ".join(reason.split())),
                                                   dropped=True)
    except Exception:  # noqa: BLE001 - the log line said it; the count is best effort
        pass
