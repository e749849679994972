"""The background worker: the single writer that turns queued hook events into memory.

One instance per home, enforced by an exclusive lock on ``worker.pid``. SIGTERM lets
the event in hand finish. An event leaves the queue only after it was handled, so a
``kill -9`` means it is handled again on restart; handlers are idempotent (transcript
import is incremental and dedups by uuid).
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

from lore.api import Lore
from lore.capture.queue import Event, Queue
from lore.config import Settings
from lore.errors import AlreadyRunning, LoreError
from lore.home import alive, read_pid, spawn_worker

POLL_SECONDS = 1.0
RESCORE_SECONDS = 3600.0  # recency fades: learned rules are rescored this often
TRANSCRIPT_EVENTS = ("SessionEnd", "Stop", "SubagentStop", "PreCompact")


class Worker:
    def __init__(self, settings: Settings, lore: Lore | None = None) -> None:
        self.settings = settings
        self.home = settings.home
        self.queue = Queue(self.home / "queue")
        self.pid_file = self.home / "worker.pid"
        self._lore = lore
        self._owns_lore = lore is None
        self._stop = False
        self._lock_fd: int | None = None
        self.log = _logger(self.home / "logs" / "worker.log")

    @property
    def lore(self) -> Lore:
        if self._lore is None:
            self._lore = Lore.open(self.settings)
        return self._lore

    # ---- lifecycle --------------------------------------------------------------------
    def acquire(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.pid_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _lock(fd)
        except OSError:
            os.close(fd)
            raise AlreadyRunning(f"a worker is already running (pid {read_pid(self.pid_file)}); "
                                 "`lore worker status` shows it") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd

    def release(self) -> None:
        if self._lock_fd is not None:
            try:
                os.ftruncate(self._lock_fd, 0)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None
        if self._lore is not None and self._owns_lore:
            self._lore.close()
            self._lore = None

    def run(self, *, once: bool = False) -> int:
        """Process events until SIGTERM (or, with ``once``, until the queue is empty)."""
        self.acquire()
        signal.signal(signal.SIGTERM, self._on_term)
        handled = 0
        self.log.info("worker %s started", os.getpid())
        last_rescore = 0.0
        try:
            while not self._stop:
                if time.monotonic() - last_rescore > RESCORE_SECONDS:
                    last_rescore = time.monotonic()
                    self.rescore()
                batch = 0
                for event in self.queue.take():
                    self.handle(event)
                    handled += 1
                    batch += 1
                    if self._stop:
                        break
                if once and batch == 0:
                    break
                if batch == 0:
                    time.sleep(POLL_SECONDS)
        finally:
            self.log.info("worker %s stopping after %d events", os.getpid(), handled)
            self.release()
        return handled

    def rescore(self) -> None:
        try:
            changed = self.lore.learner.rescore()
            if changed:
                self.log.info("rescored %d learned rules", changed)
        except LoreError as exc:
            self.log.warning("rescoring failed: %s", exc)

    def _on_term(self, *_: Any) -> None:
        self._stop = True  # the loop finishes the event in hand, then exits

    # ---- events -----------------------------------------------------------------------
    def handle(self, event: Event) -> None:
        outcome = "kept"
        try:
            path = event.payload.get("transcript_path")
            if event.kind in TRANSCRIPT_EVENTS and isinstance(path, str) and os.path.isfile(path):
                report = self.lore.conversations.ingest([Path(path)])
                outcome = f"imported {report.messages} messages"
            signals = event.payload.get("lore_signals") or {}
            if signals.get("correction") and signals.get("user_message"):
                outcome += "; " + self.record_correction(event, signals)
            if event.kind == "PostToolUse":
                outcome = self.record_edits(event)
            if event.kind == "PreCompact":
                outcome += "; " + self.record_snapshot(event)
            if event.kind in ("SessionStart", "SessionEnd") and self.settings.config.learning.silent_fixes:
                outcome += "; " + self.check_silent_fixes(event)
        except LoreError as exc:
            outcome = f"error: {exc}"
            self.log.warning("event %s (%s): %s", event.id, event.kind, exc)
        self.queue.ack(event, outcome)
        self.log.info("event %s %s: %s", event.id, event.kind, outcome)

    def record_correction(self, event: Event, signals: dict[str, Any]) -> str:
        """Store the message with the proposal it answers, its session, project and files
        (secrets redacted), then let the detector decide and learn from it."""
        session_id = event.payload.get("session_id")
        proposal = signals.get("assistant_proposal")
        learner = self.lore.learner
        stored = learner.capture(
            str(signals["user_message"]), str(proposal) if proposal else None,
            project=event.payload.get("cwd"), session_id=session_id,
            files=self.lore.session_files(session_id), at=_iso(event.at),
            origin="hook", event_id=event.id)
        if stored is None:
            return "message already seen"
        outcomes = learner.process_pending()
        return ", ".join(f"message {o.correction_id}: {o.action}" for o in outcomes) or "recorded"

    def check_silent_fixes(self, event: Event) -> str:
        """Compare what the agent wrote with the files now (or a later commit). SessionEnd
        checks this session; SessionStart checks earlier sessions of the project."""
        p = event.payload
        session_id = p.get("session_id")
        if event.kind == "SessionEnd":
            outcomes = self.lore.learner.silent_fixes(session_id=session_id, final=False)
        else:
            outcomes = self.lore.learner.silent_fixes(project=p.get("cwd"), exclude_session=session_id,
                                                  final=True)
        return f"{len(outcomes)} silent fixes"

    def record_edits(self, event: Event) -> str:
        """What the agent wrote (file, old and new text), for silent-fix detection later."""
        from lore.capture.claude_code import file_edits

        p = event.payload
        tool, raw = p.get("tool_name"), p.get("tool_input")
        session_id = p.get("session_id")
        if not isinstance(tool, str) or not isinstance(raw, dict) or not session_id:
            return "kept"
        edits = file_edits(tool, raw, str(session_id), event.id, _iso(event.at))
        n = self.lore.record_edits(str(session_id), p.get("cwd"), p.get("transcript_path"), edits)
        return f"{n} edits recorded"

    def record_snapshot(self, event: Event) -> str:
        """The state to resume from after compaction: tasks, files in progress, last request."""
        from lore.capture.tail import last_exchange, last_todos

        p = event.payload
        session_id = p.get("session_id")
        data: dict[str, Any] = {"trigger": p.get("trigger"),
                                "custom_instructions": p.get("custom_instructions")}
        path = p.get("transcript_path")
        if isinstance(path, str) and os.path.isfile(path):
            data["last_request"], _ = last_exchange(Path(path))
            data["current_tasks"] = last_todos(Path(path))
        stored = self.lore.record_snapshot(event.id, session_id, p.get("cwd"), _iso(event.at), data)
        return "snapshot recorded" if stored else "snapshot already recorded"

    # ---- status -----------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        pid = read_pid(self.pid_file)
        return {
            "running": pid is not None and alive(pid) and self._locked_by_other(),
            "pid": pid,
            "queue_depth": self.queue.depth(),
            "last_processed": self.queue.last_done(),
            "quarantined": [{"file": f, "reason": r} for f, r in self.queue.quarantined()],
            "log": str(self.home / "logs" / "worker.log"),
        }

    def _locked_by_other(self) -> bool:
        if not self.pid_file.exists():
            return False
        fd = os.open(self.pid_file, os.O_RDWR)
        try:
            _lock(fd)
        except OSError:
            return True
        else:
            _unlock(fd)
            return False
        finally:
            os.close(fd)


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


def _iso(at: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")


def _lock(fd: int) -> None:
    if os.name == "nt":  # pragma: no cover - exercised on Windows only
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _unlock(fd: int) -> None:
    if os.name == "nt":  # pragma: no cover
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_UN)


def _logger(path: Path) -> logging.Logger:
    log = logging.getLogger(f"lore.worker.{path}")
    if not log.handlers:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log
