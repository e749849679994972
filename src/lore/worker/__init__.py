"""The background worker: the single writer that turns queued hook events into memory.

One instance per home, enforced by an exclusive lock on the queue folder
(:func:`lore.home.lock_target`); ``worker.pid`` only shows the pid, and a worker whose pid
file was deleted writes it again. SIGTERM lets
the event in hand finish. An event leaves the queue only after it was handled, so a
``kill -9`` means it is handled again on restart; handlers are idempotent (transcript
import is incremental and dedups by uuid).

No event can stop the worker: any exception while handling one is logged with its
traceback, and the event is tried again later (backoff ``RETRY_DELAYS``, the attempt count
kept in the event's file) until ``MAX_ATTEMPTS``, then quarantined with the reason. The
events behind it go on meanwhile. KeyboardInterrupt and SystemExit are not caught. Failures
the database raised (a full disk, a locked or corrupt file), in handlers and in the worker's
own database work (embedding the backlog, rescoring), are counted apart in ``errors.json``
for `lore worker status`.

A worker started with ``idle_exit`` (as a hook starts it) exits after that many seconds with
nothing pending and nothing to embed; the next hook starts another. It gives up its lock
before a last look at the queue, so an event queued meanwhile is never left without a worker.
A worker the plugin's hooks started (``LORE_PLUGIN=1``) leaves the same way, without waiting out
its idle time, once Claude Code has Lore installed nowhere (:meth:`Worker.uninstalled`,
docs/plugin.md).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from lore.api import Lore
from lore.capture.queue import Event, Queue
from lore.config import Settings
from lore.errors import AlreadyRunning, ConfigError
from lore.home import (
    alive,
    check_device,
    file_logger,
    lock_file,
    lock_target,
    read_pid,
    spawn_worker,
    unlock_file,
    worker_running,
    write_model_in_use,
)
from lore.worker.events import Events

POLL_SECONDS = 1.0
RESCORE_SECONDS = 3600.0  # recency fades: learned rules are rescored this often
MAX_ATTEMPTS = 5  # failed attempts before an event is quarantined
RETRY_DELAYS = (5.0, 20.0, 80.0, 320.0)  # seconds before the 2nd, 3rd, … attempt
BACKLOG_RECHECK_SECONDS = 30.0  # an empty backlog is counted again after this, or after an event
PID_WIDTH = 20  # bytes of worker.pid: the pid, padded
EMBED_BATCH = 64  # backlog chunks embedded between two looks at the queue (~7 s on 2 cores)
# A worker the plugin's hooks started looks this often, when idle, whether Claude Code still has
# Lore (a stat of three files, read again only when one changed).
INSTALL_CHECK_SECONDS = 2.0


class Worker:
    def __init__(self, settings: Settings, lore: Lore | None = None,
                 idle_exit: float | None = None) -> None:
        self.settings = settings
        self.home = settings.home
        self.queue = Queue(self.home / "queue")
        self.pid_file = self.home / "worker.pid"
        self.rate_file = self.home / "embedding.json"
        self._backlog_quiet_until = 0.0
        self._lore = lore
        self._owns_lore = lore is None
        self._stop = False
        self._lock_fd: int | None = None  # the lock's (the queue folder)
        self._pid_fd: int | None = None   # worker.pid's, written while the lock is held
        self._holding = False  # whether this worker holds the lock (and so owns the pid file)
        try:
            self.log = file_logger("worker", self.home / "logs" / "worker.log")
            if lore is not None:
                lore.learning.log = self.log  # a second opinion that fails is logged here
        except OSError as exc:
            raise ConfigError(f"cannot write to Lore's home {self.home} ({exc.strerror or exc}); "
                              "set LORE_HOME to a writable folder") from None
        self.max_attempts = MAX_ATTEMPTS
        self.retry_delays = RETRY_DELAYS
        self.idle_exit = idle_exit  # seconds with nothing to do before exiting; None: never
        self._config_seen = config_signature(settings.config_path)
        # Started through the plugin's wrapper (it sets LORE_PLUGIN=1 for the hooks, and the
        # worker they start inherits it): exits once Claude Code has Lore nowhere.
        self.via_plugin = os.environ.get("LORE_PLUGIN") == "1"
        self._install_seen: tuple[tuple[int, int, int] | None, ...] | None = None
        self._installed: bool | None = True
        self._install_check_at = 0.0
        self.events = Events(self)

    @property
    def lore(self) -> Lore:
        if self._lore is None:
            self._lore = Lore.open(self.settings)
            self._lore.learning.log = self.log  # a second opinion that fails is logged here
        return self._lore

    # ---- lifecycle --------------------------------------------------------------------
    def acquire(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        fd = lock_target(self.home, create=True)
        try:
            lock_file(fd)
        except OSError:
            os.close(fd)
            raise AlreadyRunning(f"a worker is already running (pid {read_pid(self.pid_file)}); "
                                 "`lore worker status` shows it") from None
        self._lock_fd = fd
        self._holding = True
        self._write_pid(str(os.getpid()))

    def _write_pid(self, text: str) -> None:
        """The pid in place, padded to a fixed width (blank when leaving): rewriting the same
        bytes needs no new space, so a worker still starts on a full disk. Only shown by
        `lore worker status`; the lock is what counts. A pid file deleted meanwhile is made
        again."""
        if self._lock_fd is None:
            return
        try:
            if self._pid_fd is not None and os.fstat(self._pid_fd).st_nlink == 0:
                os.close(self._pid_fd)  # deleted: write a new one
                self._pid_fd = None
            if self._pid_fd is None:
                self._pid_fd = os.open(self.pid_file, os.O_RDWR | os.O_CREAT, 0o600)
            os.pwrite(self._pid_fd, f"{text:<{PID_WIDTH - 1}}\n".encode(), 0)
            os.ftruncate(self._pid_fd, PID_WIDTH)
        except OSError:
            self.log.warning("could not write %s (a full disk?)", self.pid_file)

    def _keep_pid_file(self) -> None:
        """Write the pid file again if someone deleted it (one fstat)."""
        if self._holding and self._pid_fd is not None:
            try:
                gone = os.fstat(self._pid_fd).st_nlink == 0
            except OSError:
                gone = True
            if gone:
                self._write_pid(str(os.getpid()))

    def _still_idle(self) -> bool:
        """Give up the lock, then look at the queue once more: a hook that queued an event
        while the lock was held saw a worker running and started none, so that event is seen
        here, and the worker takes the lock back (unless a new worker has it). True: exit."""
        if self._lock_fd is None:
            return True
        self._write_pid("")
        unlock_file(self._lock_fd)
        self._holding = False  # from here the pid file may be another worker's
        if self.queue.depth() == 0:
            return True
        try:
            lock_file(self._lock_fd)
        except OSError:
            return True  # a hook started another worker: it takes over
        self._holding = True
        self._write_pid(str(os.getpid()))
        return False

    def release(self) -> None:
        if self._lock_fd is not None:
            try:
                if self._holding:
                    self._write_pid("")
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None
                if self._pid_fd is not None:
                    os.close(self._pid_fd)
                    self._pid_fd = None
        if self._lore is not None and self._owns_lore:
            self._lore.close()
            self._lore = None

    def run(self, *, once: bool = False) -> int:
        """Process events until SIGTERM (or, with ``once``, until no event is due); return how
        many were handled (failed attempts are not counted)."""
        device = os.environ.get("LORE_DEVICE")
        if device:
            check_device(device)  # before the lock: every event would fail on it
        self.acquire()
        signal.signal(signal.SIGTERM, self._on_term)
        handled = 0
        self.log.info("worker %s started", os.getpid())
        if not self.queue.errors.exists():
            self.queue.write_errors()  # full size now, so a full disk can still take a count
        self.record_model()
        last_rescore = 0.0
        idle_since = time.monotonic()
        try:
            while not self._stop:
                self._keep_pid_file()
                self.follow_config()
                if time.monotonic() - last_rescore > RESCORE_SECONDS:
                    last_rescore = time.monotonic()
                    self.rescore()
                batch = 0
                try:
                    for event in self.queue.take():
                        # Before every event: one queued after config.yaml changed meets the
                        # new settings even when the batch was taken just before the change.
                        self.follow_config()
                        handled += self.handle(event)
                        batch += 1
                        self._backlog_quiet_until = 0.0  # an event may have imported text
                        if self._stop:
                            break
                except Exception:  # noqa: BLE001 - the queue itself failed (disk full, read-only home)
                    self.log.exception("queue bookkeeping failed; trying again in %.0f s",
                                       POLL_SECONDS)
                    batch = 0
                if (batch == 0 and not self._stop and self.uninstalled()
                        and self.queue.depth() == 0 and self._still_idle()):
                    self.log.info("worker %s exiting: Lore is no longer installed in Claude Code "
                                  "(no plugin lore, no hooks of Lore in the user's settings)",
                                  os.getpid())
                    break
                if batch == 0 and not self._stop and self.embed_backlog():
                    idle_since = time.monotonic()
                    continue  # events first, then the next batch of the backlog
                if once and batch == 0:
                    break
                if batch or self.queue.depth():
                    idle_since = time.monotonic()  # pending includes events waiting to retry
                elif (self.idle_exit is not None
                      and time.monotonic() - idle_since >= self.idle_exit
                      and self._still_idle()):
                    self.log.info("worker %s idle for %.0f s: exiting", os.getpid(),
                                  self.idle_exit)
                    break
                if batch == 0:
                    time.sleep(POLL_SECONDS)
        finally:
            self.log.info("worker %s stopping after %d events", os.getpid(), handled)
            self.release()
        return handled

    def uninstalled(self) -> bool:
        """Whether this worker, started by the plugin's hooks, serves a Claude Code that no
        longer has Lore: no plugin lore installed at any scope and no hooks of Lore in the
        user's settings (:func:`lore.install.lore_in_claude_code` says False; unknown counts
        as installed). Looks at most every ``INSTALL_CHECK_SECONDS``, and reads the files
        again only when one of them changed. Any other worker: always False (a project's own
        `lore install` cannot be seen from the home, and `lore uninstall` stops its worker)."""
        if not self.via_plugin:
            return False
        now = time.monotonic()
        if now < self._install_check_at:
            return self._installed is False
        self._install_check_at = now + INSTALL_CHECK_SECONDS
        from lore.install import lore_files, lore_in_claude_code

        home = Path.home()
        seen = tuple(config_signature(p) for p in lore_files(home))
        if seen != self._install_seen:
            self._install_seen = seen
            self._installed = lore_in_claude_code(home)
        return self._installed is False

    def follow_config(self) -> bool:
        """Read the config again when its file changed (modification time, size or inode, one
        ``stat`` before every event), so a judge added, changed or removed is the one the next
        event meets: the facade, and with it the judge, is opened anew. A config that no longer
        loads leaves the settings in use (logged). Returns whether the settings changed."""
        seen = config_signature(self.settings.config_path)
        if seen == self._config_seen or not self._owns_lore:
            return False
        self._config_seen = seen
        from lore.config import config_file, load_config
        from lore.errors import LoreError

        path = self.settings.config_path
        try:
            fresh = load_config(None if path == config_file() else path)
            provider = fresh.config.llm.provider
        except LoreError as exc:
            self.log.error("%s changed but does not load; the settings in use stay: %s", path, exc)
            return False
        self.settings = fresh
        self._reset()
        self.log.info("%s changed: settings read again (language model: %s)", path,
                      provider or "none")
        self.record_model()
        return True

    def record_model(self) -> None:
        """Tell `lore doctor` and `lore status` which language model this worker uses."""
        try:
            cfg = self.settings.config
        except Exception:  # noqa: BLE001 - a config that does not load: the event says why
            return
        write_model_in_use(self.home, cfg.llm.provider or None, cfg.llm.model or None,
                           bool(cfg.llm.provider) and cfg.learning.judge)

    def embed_backlog(self) -> int:
        """Embed one batch of the chunks that wait for a vector (a first import leaves them
        here so that it need not wait for the model); return how many. The rate goes to
        ``embedding.json`` for the ETA of `lore worker status`."""
        started = time.monotonic()
        if started < self._backlog_quiet_until:
            return 0
        if self._lore is None and not os.path.exists(self.settings.db_location):
            return 0  # nothing imported yet (and a URL names a server this loop leaves alone)
        try:
            done = self.lore.conversations.embed_pending(limit=EMBED_BATCH)
        except Exception as exc:  # noqa: BLE001 - tried again at the next idle moment
            self.log.exception("embedding the backlog failed")
            if is_database_error(exc):
                self.queue.record_failure(f"embedding the backlog: {_reason(exc)}", database=True)
            self._reset()
            self._backlog_quiet_until = time.monotonic() + BACKLOG_RECHECK_SECONDS
            return 0
        if done:
            took = max(time.monotonic() - started, 1e-6)
            try:
                self.rate_file.write_text(json.dumps({"rate": done / took, "at": time.time()}),
                                          encoding="utf-8")
            except OSError:
                pass
            self.log.info("embedded %d chunks (%.1f a second)", done, done / took)
        else:  # counting an empty backlog reads every chunk: look again after a while
            self._backlog_quiet_until = time.monotonic() + BACKLOG_RECHECK_SECONDS
        return done

    def backlog(self) -> dict[str, Any]:
        """The chunks that wait for a vector, the worker's last rate and the time left."""
        if self._lore is None and not os.path.exists(self.settings.db_location):
            left = 0
        else:
            with Lore.open(self.settings, create=False) as lore:
                left = lore.admin.vector_backlog()
        rate = None
        try:
            rate = float(json.loads(self.rate_file.read_text(encoding="utf-8"))["rate"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        eta = left / rate if rate and left else (0.0 if not left else None)
        return {"chunks": left, "rate": rate, "eta_seconds": eta}

    def rescore(self) -> None:
        try:
            changed = self.lore.learning.rescore()
            if changed:
                self.log.info("rescored %d learned rules", changed)
        except Exception as exc:  # noqa: BLE001 - tried again at the next interval
            self.log.exception("rescoring failed")
            if is_database_error(exc):
                self.queue.record_failure(f"rescoring: {_reason(exc)}", database=True)

    def _on_term(self, *_: Any) -> None:
        self._stop = True  # the loop finishes the event in hand, then exits

    # ---- events -----------------------------------------------------------------------
    def handle(self, event: Event) -> bool:
        """Handle one event and acknowledge it; on any exception count a failed attempt
        (retried later, quarantined after the last). Returns whether it was handled."""
        try:
            outcome = self.outcome(event)
        except Exception as exc:  # noqa: BLE001 - nothing an event holds may stop the worker
            reason = _reason(exc)
            delay = self.retry_delays[min(event.attempts, len(self.retry_delays) - 1)]
            if self.queue.fail(event, reason, max_attempts=self.max_attempts, delay=delay,
                               database=is_database_error(exc)):
                self.log.error("event %s (%s) quarantined after %d attempts: %s", event.id,
                               event.kind, event.attempts, reason, exc_info=True)
            else:
                self.log.error("event %s (%s) failed (attempt %d of %d), retrying in %.0f s: %s",
                               event.id, event.kind, event.attempts, self.max_attempts, delay,
                               reason, exc_info=True)
            self._reset()
            return False
        self.queue.ack(event, outcome)
        self.log.info("event %s %s: %s", event.id, event.kind, outcome)
        return True

    def outcome(self, event: Event) -> str:
        """What handling ``event`` did, in a few words; raises on failure
        (:class:`lore.worker.events.Events`)."""
        return self.events.outcome(event)

    def _reset(self) -> None:
        """Drop the connection after a failure: the next event opens a fresh one, so a
        database that was replaced, unlocked or repaired meanwhile is seen."""
        if self._lore is not None and self._owns_lore:
            try:
                self._lore.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to close
                self.log.exception("closing the database after a failure")
            self._lore = None


    # ---- status -----------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        pid = read_pid(self.pid_file)
        return {
            "running": self._locked_by_other(),
            "pid": pid,
            "queue_depth": self.queue.depth(),
            "last_processed": self.queue.last_done(),
            "quarantined": [{"file": f, "reason": r} for f, r in self.queue.quarantined()],
            "retrying": [{"id": e.id, "kind": e.kind, "attempts": e.attempts,
                          "retry_at": e.retry_at, "last_error": e.last_error}
                         for e in self.queue.retrying()],
            "errors": self.queue.error_count(),
            "waiting_for_judge": self._waiting_for_judge(),
            "log": str(self.home / "logs" / "worker.log"),
        }

    def _waiting_for_judge(self) -> dict[str, Any] | None:
        """Messages the judge has not read yet (None before anything was stored)."""
        if self._lore is None and not os.path.exists(self.settings.db_location):
            return None
        try:
            with Lore.open(self.settings, create=False) as lore:
                return lore.admin.waiting_for_judge()
        except Exception:  # noqa: BLE001 - the status must show even when the database cannot
            return None

    def _locked_by_other(self) -> bool:
        return worker_running(self.home)


def start_background(settings: Settings) -> int | None:
    """Start `lore worker run` detached; return its pid, or None if one is already running."""
    w = Worker(settings)
    if w.status()["running"]:
        return None
    return spawn_worker(settings.home)


def stop_background(settings: Settings, timeout: float = 30.0) -> bool:
    w = Worker(settings)
    pid = read_pid(w.pid_file)
    if pid is None or not w.status()["running"]:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.time() + timeout
    while time.time() < deadline and alive(pid):
        time.sleep(0.1)
    return not alive(pid)


def config_signature(path: Path) -> tuple[int, int, int] | None:
    """What tells a changed config file: (modification time in ns, size, inode); None: no file."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def is_database_error(exc: BaseException) -> bool:
    """Whether the database raised ``exc`` (SQLite's or Postgres's driver, or Lore's storage
    errors: a full disk, a locked, read-only or corrupt database)."""
    from lore.errors import StorageError, StoreBusy

    if isinstance(exc, (StorageError, StoreBusy)):
        return True
    return any(c.__module__.split(".")[0] in ("sqlite3", "sqlean", "psycopg", "psycopg2")
               for c in type(exc).__mro__)


def _reason(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())

