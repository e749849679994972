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
