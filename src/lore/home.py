"""The Lore home folder and the worker process that serves it.

Standard library only, without :mod:`pathlib` or :mod:`typing` at import: the hooks import
this on the agent's critical path and name the home with :func:`home_dir` (a string).
"""

from __future__ import annotations

import os
import sys

from lore.private import open_private, private_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
    from collections.abc import Callable
    from pathlib import Path

IDLE_EXIT_SECONDS = 600  # a worker a hook started exits after this long with nothing to do


def home_dir() -> str:
    """``$LORE_HOME``, else ``~/.lore``: the hooks' form of :func:`lore_home`."""
    return os.path.expanduser(os.environ.get("LORE_HOME")
                              or os.path.join(os.path.expanduser("~"), ".lore"))


def lore_home() -> Path:
    """``$LORE_HOME``, else ``~/.lore``."""
    from pathlib import Path

    return Path(home_dir())


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


DEVICE_FILE = "device"


def device_id(home: Path | None = None, kept: Callable[[], str | None] | None = None) -> str:
    """This home's device id, the only source of it (sync's device and the device stamped on
    written rows): ``$LORE_DEVICE``, else the id in the home's ``device`` file (0600), made
    once. A home that synced before the file existed keeps its id: ``kept`` reads it (the
    SQLite database's ``sync.device``); else a new ULID. Not kept in the database, which
    several devices may share. A home that cannot be written gets the host name and a short
    hash of the home's path, stable without a file."""
    env = os.environ.get("LORE_DEVICE")
    if env:
        return check_device(env)
    from pathlib import Path

    folder = Path(home or lore_home()).expanduser()
    path = folder / DEVICE_FILE
    found = _read_device(path)
    if found:
        return found
    value = (kept() if kept else None) or _new_device()
    try:
        private_dir(folder)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: theirs is the id
            found = _read_device(path)
            if found:
                return found
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC)  # an empty or unreadable file
    except OSError:
        import hashlib
        import socket

        where = str(folder.absolute())
        return f"{socket.gethostname() or 'device'}-{hashlib.sha256(where.encode()).hexdigest()[:6]}"
    with open(fd, "w") as f:
        f.write(value + "\n")
    return value


_DEVICE = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"


def check_device(value: str) -> str:
    """``value`` if it is a valid device id (1 to 64 letters, digits, ``.``, ``_``, ``-``,
    starting with a letter or digit: it names sync batches and is stamped on rows), else
    ConfigError with one line."""
    import re  # cached after the first compile; a PreToolUse hook without checks never asks

    if re.fullmatch(_DEVICE, value):
        return value
    from lore.errors import ConfigError

    shown = ascii(value[:40] + ("…" if len(value) > 40 else ""))
    raise ConfigError(f"LORE_DEVICE={shown} is not a valid device id; use 1 to 64 letters, "
                      "digits, '.', '_' or '-', starting with a letter or digit (or unset it)")


def _read_device(path: Path) -> str | None:
    try:
        text = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if text and len(text) <= 200 and text.isprintable() else None


def _new_device() -> str:
    """A ULID (Crockford base 32 of 48 bits of milliseconds and 80 random bits)."""
    import time

    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    n = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(alphabet[(n >> (5 * i)) & 31] for i in reversed(range(26)))


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


def lock_target(home: str | Path, *, create: bool = False) -> int:
    """A descriptor to take the home's worker lock on: the queue folder itself (made first
    with ``create``), which nothing removes while Lore runs. A lock on ``worker.pid`` was lost
    with the file: a worker started after someone deleted it locked a new file and ran beside
    the first. (Windows locks no folder: ``worker.lock`` there.) FileNotFoundError when there
    is no queue yet (so no worker)."""
    queue = os.path.join(home, "queue")
    if create:
        private_dir(queue)
    if os.name == "nt":  # pragma: no cover - exercised on Windows only
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        return os.open(os.path.join(queue, "worker.lock"), flags, 0o600)
    return os.open(queue, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))


def worker_running(home: str | Path) -> bool:
    """Whether a worker holds this home's lock (:func:`lock_target`): an open and a lock
    attempt, never fooled by a pid that another process took over or a deleted pid file."""
    try:
        fd = lock_target(home)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: starting a second worker would only make it refuse
    try:
        lock_file(fd)
    except OSError:
        return True
    else:
        unlock_file(fd)
        return False
    finally:
        os.close(fd)


def idle_exit_seconds() -> int:
    """``$LORE_WORKER_IDLE_EXIT`` (seconds; 0: never), else :data:`IDLE_EXIT_SECONDS`. A value
    that is not a whole number of seconds raises ConfigError."""
    value = os.environ.get("LORE_WORKER_IDLE_EXIT", "").strip()
    if not value:
        return IDLE_EXIT_SECONDS
    if not value.isdigit() or len(value) > 9:
        from lore.errors import ConfigError

        raise ConfigError(f"LORE_WORKER_IDLE_EXIT={ascii(value[:40])} is not a number of seconds; "
                          "give a whole number (0: a worker started by a hook never exits)")
    return int(value)


def _background_priority() -> None:
    """The worker is background work: it starts with the session, beside the agent and the
    MCP server the agent waits for, so it yields the CPU to them (nice 10)."""
    try:
        os.nice(10)
    except OSError:
        pass


def spawn_worker(home: str | Path, idle_exit: int | None = None) -> int:
    """Start `lore worker run` detached, logging to the home's worker log; return its pid.
    With ``idle_exit`` (seconds) it exits after that long with nothing pending."""
    import subprocess  # only when no worker runs: not on every hook call

    logs = private_dir(os.path.join(home, "logs"))
    args = [sys.executable, "-m", "lore", "worker", "run"]
    if idle_exit:
        args += ["--idle-exit", str(idle_exit)]
    with open(open_private(os.path.join(logs, "worker.log"), "a"), "a") as out:
        proc = subprocess.Popen(args,
                                stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=dict(os.environ),
                                preexec_fn=_background_priority if os.name == "posix" else None)
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
    """A logger writing to ``path`` (its folder made), one handler however often asked. A
    line that cannot be written (a full disk) is lost; the process goes on quietly."""
    import logging  # the hooks import this module and never log this way

    class _QuietFileHandler(logging.FileHandler):
        def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
            pass

    log = logging.getLogger(f"lore.{name}.{path}")
    if not log.handlers:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = _QuietFileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log


# ---- the model the running worker uses ------------------------------------------------------
MODEL_IN_USE = "worker-model.json"  # in the home: written by the worker, read by doctor and status


def write_model_in_use(home: Path, provider: str | None, model: str | None, judge: bool) -> None:
    """Record which language model this worker process uses (None: none), replacing the file
    whole; a failure to write is not the worker's concern."""
    import json

    tmp = home / f".{MODEL_IN_USE}.{os.getpid()}"
    try:
        with open(open_private(tmp), "w", encoding="utf-8") as fh:
            json.dump({"pid": os.getpid(), "provider": provider, "model": model, "judge": judge}, fh)
        os.replace(tmp, home / MODEL_IN_USE)
    except OSError:
        tmp.unlink(missing_ok=True)


def model_in_use(home: Path) -> dict[str, object] | None:
    """What the running worker said it uses ({pid, provider, model, judge}); None without a
    live worker or a readable record."""
    import json

    try:
        data = json.loads((home / MODEL_IN_USE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    pid = data.get("pid") if isinstance(data, dict) else None
    running = read_pid(home / "worker.pid")
    if not isinstance(pid, int) or pid != running or not alive(pid):
        return None
    return data
