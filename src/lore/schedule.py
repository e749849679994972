"""Scheduled analysis (`schedule.analysis` in config.yaml, a cron expression): ingest new
transcripts, learn from what the user typed, process captured messages, rescore the learned
rules and write this week's and this month's digests into ``$LORE_HOME/digests/``.

`lore serve` runs it in a background thread; `lore serve --run-schedule-now` and
``POST /api/v1/schedule/run`` run it once. One run at a time per home, across processes (an
exclusive lock on ``schedule.lock``): a run that finds another going is recorded as skipped
and logged. A run opens its own connection, so the server's requests never wait for it;
its writes are short transactions (``BEGIN IMMEDIATE``) like the worker's, which SQLite
serialises. Every run is kept in ``schedule_runs`` and logged to ``logs/schedule.log``."""

from __future__ import annotations

import logging
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.errors import ConfigError
from lore.home import alive, file_logger, lock_file, read_pid, unlock_file
from lore.ids import now
from lore.store.rows import NewScheduleRun, ScheduleRun

if TYPE_CHECKING:
    from lore.config import Settings

DIGESTS = "digests"
LOCK = "schedule.lock"


def next_after(expression: str, after: datetime) -> datetime:
    """The first moment after ``after`` (aware, local time) that ``expression`` names."""
    from lore.extras import need

    cronsim = need("cronsim", "server", "schedule.analysis needs the cron parser of the `server` "
                   "extra", ConfigError)
    try:
        return next(cronsim.CronSim(expression, after.replace(microsecond=0)))
    except (cronsim.CronSimError, StopIteration) as exc:
        raise ConfigError(f"schedule.analysis: not a usable cron expression ({exc})") from None


def transcript_roots(settings: Settings) -> list[Path]:
    """The configured transcript folders, or Claude Code's and Codex's."""
    from lore.capture.ingest import default_roots

    configured = settings.config.schedule.transcripts
    if configured:
        return [Path(p).expanduser() for p in configured]
    return [*default_roots(), Path.home() / ".codex" / "sessions"]


class Scheduler:
    """The scheduled analysis of one home: its next run, a run now, the loop that waits."""

    def __init__(self, settings: Settings, embedder: Any = None) -> None:
        self.settings = settings
        self.expression = settings.config.schedule.analysis
        self.embedder = embedder  # a callable giving the shared model, or None: load one
        self.next_run: datetime | None = None
        self.running_since: str | None = None
        self._busy = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            self.log = file_logger("schedule", settings.home / "logs" / "schedule.log")
        except OSError:  # a read-only home: the runs are still recorded in the database
            self.log = logging.getLogger("lore.schedule")

    # ---- one run ------------------------------------------------------------------------
    def run(self, trigger: str = "command") -> NewScheduleRun:
        """One analysis now; skipped (and recorded so) while another run holds the home."""
        started, clock = now(), time.perf_counter()
        if not self._busy.acquire(blocking=False):
            return self._skipped(trigger, started, "another scheduled run is going in this server")
        fd = None
        try:
            fd = _lock(self.settings.home / LOCK)
            if fd is None:
                return self._skipped(trigger, started, "another process is running the analysis")
            self.running_since = started
            self.log.info("run (%s) started", trigger)
            summary: dict[str, Any] = {}
            error = None
            try:
                summary = self._work()
            except Exception as exc:  # noqa: BLE001 - a run that fails is recorded, never fatal
                error = str(exc).strip() or type(exc).__name__
                self.log.exception("run (%s) failed", trigger)
            ms = int((time.perf_counter() - clock) * 1000)
            run: NewScheduleRun = {"trigger": trigger, "started_at": started, "finished_at": now(),
                                   "duration_ms": ms, "outcome": "failed" if error else "ok",
                                   "summary": summary, "error": error}
            self._record(run)
            self.log.info("run (%s) %s in %d ms: %s", trigger, run["outcome"], ms, error or summary)
            return run
        finally:
            self.running_since = None
            if fd is not None:
                _unlock(fd)
            self._busy.release()

    def _work(self) -> dict[str, Any]:
        from lore.api import Lore
        from lore.measure import digest

        cfg = self.settings.config.schedule
        embedder = self.embedder() if self.embedder is not None else None
        summary: dict[str, Any] = {}
        with Lore.open(self.settings, embedder=embedder) as lore:
            roots = [r for r in transcript_roots(self.settings) if r.exists()]
            summary["transcripts"] = [str(r) for r in roots]
            if roots:
                report = lore.conversations.ingest(roots, embed=False)
                report.embedded = lore.conversations.embed_pending()
                ingested = report.to_dict()
                summary["ingested"] = {k: ingested[k] for k in ("files", "messages", "sessions",
                                                                "embedded")}
                learned = lore.learning.backfill(roots)
                summary["learned"] = {"messages": learned["messages"], "rules": learned["rules"],
                                      "actions": learned["actions"]}
            pid = read_pid(self.settings.home / "worker.pid")
            if pid is not None and alive(pid):
                summary["processed"] = "left to the running worker"  # one writer learns each
            else:
                summary["processed"] = len(lore.learning.process_pending())
            summary["rescored"] = lore.learning.rescore()
            if cfg.digests:
                folder = self.settings.home / DIGESTS
                today = datetime.now(UTC).date()
                written = [digest.write(lore, folder, kind, today=today) for kind in digest.KINDS]
                # The period that just ended, once: its digest is final.
                for kind in digest.KINDS:
                    last = digest.period_of(kind, today).previous()
                    if not (folder / f"{last.label}.md").exists():
                        written.append(digest.write(lore, folder, kind, last.label))
                summary["digests"] = [p.name for p in written]
        return summary

    def _skipped(self, trigger: str, started: str, why: str) -> NewScheduleRun:
        self.log.warning("run (%s) skipped: %s", trigger, why)
        run: NewScheduleRun = {"trigger": trigger, "started_at": started, "finished_at": started,
                               "duration_ms": 0, "outcome": "skipped", "summary": {}, "error": why}
        self._record(run)
        return run

    def _record(self, run: NewScheduleRun) -> None:
        from lore.api import Lore

        try:
            with Lore.open(self.settings) as lore:
                lore.admin.record_schedule_run(run)
        except Exception:  # noqa: BLE001 - the log keeps it when the database cannot
            self.log.exception("could not record the run")

    def start_in_background(self, trigger: str = "api") -> bool:
        """Run once on a thread of its own; False when a run is going already."""
        if self._busy.locked():
            self._skipped(trigger, now(), "another scheduled run is going in this server")
            return False
        threading.Thread(target=self.run, args=(trigger,), name="lore-schedule-run",
                         daemon=True).start()
        return True

    # ---- the loop ------------------------------------------------------------------------
    def start(self, first: datetime | None = None) -> None:
        """Wait for each moment the expression names and run then (``first``: the first
        moment instead, for tests). Nothing to do without an expression."""
        if not self.expression or self._thread is not None:
            return
        self.next_run = first or next_after(self.expression, _local_now())
        self._thread = threading.Thread(target=self._loop, name="lore-schedule", daemon=True)
        self._thread.start()
        self.log.info("schedule %r: next run %s", self.expression, self.next_run.isoformat())

    def _loop(self) -> None:
        assert self.expression is not None
        while not self._stop.is_set():
            due = self.next_run
            if due is None:
                return
            wait = (due - _local_now()).total_seconds()
            if wait > 0:
                self._stop.wait(min(wait, 60.0))  # re-check: the clock may jump
                continue
            self.next_run = next_after(self.expression, max(_local_now(), due))
            self.run("schedule")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def status(self, runs: list[ScheduleRun]) -> dict[str, Any]:
        """What the dashboard and the API show: the expression, the next run, the latest runs."""
        return {"expression": self.expression, "enabled": bool(self.expression),
                "next_run": self.next_run.isoformat() if self.next_run else None,
                "running_since": self.running_since, "last_run": runs[0] if runs else None,
                "runs": runs}


def _local_now() -> datetime:
    return datetime.now().astimezone()


def _lock(path: Path) -> int | None:
    """An exclusive lock on ``path``, or None when another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        lock_file(fd)
    except OSError:
        os.close(fd)
        return None
    return fd


def _unlock(fd: int) -> None:
    try:
        unlock_file(fd)
    finally:
        os.close(fd)
