"""The Lore home folder and the worker process that serves it.

Standard library only: the hooks import this on the agent's critical path.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from lore.private import open_private, private_dir


def lore_home() -> Path:
    """``$LORE_HOME``, else ``~/.lore``."""
    return Path(os.environ.get("LORE_HOME") or Path.home() / ".lore").expanduser()


def is_url(location: str | Path | None) -> bool:
    """A database location naming a server (``postgresql://…``) rather than a file."""
    return bool(location) and "://" in str(location)


def mask_url(location: str) -> str:
    """A database URL with its password shown as ``***`` (never print the password)."""
    from urllib.parse import urlsplit, urlunsplit

    if not is_url(location):
        return location
    try:
        parts = urlsplit(location)
        password = parts.password
    except ValueError:
        password = None
    import re

    if password:
        user, _, host = parts.netloc.rpartition("@")
        name = user.split(":", 1)[0]
        location = urlunsplit((parts.scheme, f"{name}:***@{host}", parts.path, parts.query,
                               parts.fragment))
    # A password in the query (?password=…) is masked too.
    return re.sub(r"(password=)[^&]*", r"\1***", location)


def device_id(home: Path | None = None) -> str:
    """This home's device id: ``$LORE_DEVICE``, else the host name and a short hash of the
    home's path. Stable without a file to keep (nothing is written to the home for it), and two
    homes on one machine differ. Not kept in the database, which several devices may share."""
    env = os.environ.get("LORE_DEVICE")
    if env:
        return env
    import hashlib
    import socket

    where = str((home or lore_home()).expanduser().absolute())
    return f"{socket.gethostname() or 'device'}-{hashlib.sha256(where.encode()).hexdigest()[:6]}"


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def spawn_worker(home: Path) -> int:
    """Start `lore worker run` detached, logging to the home's worker log; return its pid."""
    logs = private_dir(home / "logs")
    with open(open_private(logs / "worker.log", "a"), "a") as out:
        proc = subprocess.Popen([sys.executable, "-m", "lore", "worker", "run"],
                                stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=dict(os.environ))
    return proc.pid


def lock_file(fd: int) -> None:
    """An exclusive lock on an open file, at once or OSError (another process holds it)."""
    if os.name == "nt":  # pragma: no cover - exercised on Windows only
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def unlock_file(fd: int) -> None:
    if os.name == "nt":  # pragma: no cover
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_UN)


def file_logger(name: str, path: Path) -> logging.Logger:
    """A logger writing to ``path`` (its folder made), one handler however often asked."""
    log = logging.getLogger(f"lore.{name}.{path}")
    if not log.handlers:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log
