"""No event stops the worker: failures are retried with backoff, counted, then quarantined.

And the fault matrix of docs/reliability.md: the worker killed at each step, disk full, the
database locked or corrupt, an unwritable home, corrupt queue files, clock jumps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.capture.queue import MAX_RETRY_DELAY, Queue
from lore.worker import Worker

LORE = str(Path(sys.executable).parent / "lore")
FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
TRANSCRIPT = (FIXTURES / "daaain-claude-code-log" / "-Users-dain-workspace-claude-code-log-sample"
              / "0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl")
OTHER_TRANSCRIPT = TRANSCRIPT.with_name("fe869ecb-c176-478f-9734-7e4b8ef12cff.jsonl")
# An event that meets a bug: the handler raises on it every time (see handler_bug). The real
# faults (disk full, a locked or corrupt database) are further down.
POISON = {"session_id": "s", "bug": True}
HANDLER_BUG = """
from lore.worker import Worker
real = Worker.outcome
def outcome(self, event):
    if "bug" in event.payload:
        raise AttributeError("'list' object has no attribute 'get'")
    return real(self, event)
Worker.outcome = outcome
"""


@pytest.fixture(autouse=True)
def handler_bug():
    """Any event whose payload has "bug" makes the handler raise, as an unforeseen bug would."""
    from lore import worker as module

    real = module.Worker.outcome
    exec(HANDLER_BUG, {})
    yield
    module.Worker.outcome = real


RUN_ONCE = """
import sys
from lore.entry import main
sys.argv = ["lore", "worker", "run", "--once"]
main()
"""


def env(home: Path) -> dict[str, str]:
    return {**os.environ, "LORE_HOME": str(home)}


def worker(home: Path, **kw: object) -> Worker:
    settings = make_settings(home)
    w = Worker(settings, lore=Lore.open(settings, embedder=FakeEmbedder()))
    w.retry_delays = (0.0,)
    for k, v in kw.items():
        setattr(w, k, v)
    return w


def done_kinds(q: Queue) -> list[str]:
    return [json.loads(line)["payload"].get("n") for line in open(q.done)] if q.done.exists() else []


def message_count(home: Path) -> int:
    from lore.store.sqlite.db import connect

    conn = connect(home / "lore.db", create=False)
    try:
        return int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


# ---- retry, backoff, quarantine ---------------------------------------------------------------

def test_a_poison_event_is_retried_then_quarantined_and_the_events_behind_it_proceed(lore_home):
    q = Queue(lore_home / "queue")
    q.append("UserPromptSubmit", {"n": 1})
    poison = q.append("UserPromptSubmit", POISON)
    q.append("UserPromptSubmit", {"n": 2})
    w = worker(lore_home, max_attempts=3)
    assert w.run(once=True) == 2  # the two good events; the poison three times, never handled
    assert done_kinds(q) == [1, 2] and q.depth() == 0
    [(name, reason)] = q.quarantined()
    assert name == f"{poison}.json"
    assert "failed 3 times" in reason and "AttributeError" in reason
    log = (lore_home / "logs" / "worker.log").read_text()
    assert log.count("Traceback (most recent call last)") == 3
    assert "attempt 1 of 3" in log and "quarantined after 3 attempts" in log
    st = w.status()
    assert st["errors"]["count"] == 3 and st["errors"]["last"]["id"] == poison
    assert st["quarantined"][0]["reason"] == reason and st["retrying"] == []


def test_the_attempt_count_survives_a_restart(lore_home):
    q = Queue(lore_home / "queue")
    q.append("UserPromptSubmit", POISON)
    for expected in (1, 2):
        w = worker(lore_home, max_attempts=3)  # a fresh worker each time: a restart
        [event] = list(q.take())
        assert event.attempts == expected - 1
        w.handle(event)
        w.release()
        assert [e.attempts for e in q.retrying()] == [expected]
    [event] = list(q.take())
    worker(lore_home, max_attempts=3).handle(event)
    assert q.depth() == 0 and len(q.quarantined()) == 1


def failed_once(home: Path) -> tuple[Queue, str]:
    """A queue whose poison event failed once and waits 60 s for its retry."""
    q = Queue(home / "queue")
    poison = q.append("UserPromptSubmit", POISON)
    [event] = list(q.take())
    worker(home, retry_delays=(60.0,)).handle(event)
    return q, poison


def test_backoff_passes_over_a_failed_event_until_it_is_due(lore_home):
    q, poison = failed_once(lore_home)
    later = q.append("UserPromptSubmit", {"n": 2})
    assert [e.id for e in q.take()] == [later]  # the failed one waits, the next one goes
    assert [e.id for e in q.take(now=time.time() + 61)] == [poison, later]
    [waiting] = q.retrying()
    assert waiting.attempts == 1 and "AttributeError" in (waiting.last_error or "")
    assert 55 < waiting.retry_at - time.time() <= 60


def test_a_clock_set_back_does_not_strand_a_retry(lore_home):
    """retry_at is wall time; a retry planned further ahead than any backoff is due now."""
    q, poison = failed_once(lore_home)
    assert list(q.take()) == []
    # The clock is set back a day: the planned retry now lies a day and a minute ahead.
    assert [e.id for e in q.take(now=time.time() - 86400)] == [poison]
    assert MAX_RETRY_DELAY >= 60


def test_event_ids_stay_unique_and_all_are_taken_when_the_clock_goes_back(lore_home, monkeypatch):
    q = Queue(lore_home / "queue")
    first = q.append("Stop", {"n": 1})
    real = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: real() - 3600 * 10**9)
    second = q.append("Stop", {"n": 2})
    third = q.append("Stop", {"n": 3})
    assert len({first, second, third}) == 3
    # Ordered by the (wrong) clock, but none is lost.
    assert [e.payload["n"] for e in q.take()] == [2, 3, 1]


def test_requeue_puts_quarantined_events_back_with_a_fresh_count(lore_home):
    q = Queue(lore_home / "queue")
    q.append("UserPromptSubmit", POISON)
    worker(lore_home, max_attempts=1).run(once=True)
    assert len(q.quarantined()) == 1
    out = subprocess.run([LORE, "worker", "requeue"], env=env(lore_home), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "requeued 1 events" in out.stderr + out.stdout
    [event] = list(q.take())
    assert event.attempts == 0 and q.quarantined() == []


def test_keyboard_interrupt_stops_the_worker_and_is_not_counted(lore_home, monkeypatch):
    q = Queue(lore_home / "queue")
    q.append("Stop", {"n": 1})
    w = worker(lore_home)

    def interrupted(event):
        raise KeyboardInterrupt

    monkeypatch.setattr(w, "outcome", interrupted)
    with pytest.raises(KeyboardInterrupt):
        w.run(once=True)
    [event] = list(q.take())
    assert event.attempts == 0 and q.error_count()["count"] == 0
    assert not w.status()["running"]  # the lock was released on the way out


def test_worker_status_shows_retrying_events_errors_and_quarantine(lore_home):
    q = Queue(lore_home / "queue")
    q.append("UserPromptSubmit", POISON)
    (q.pending / "00000000000000000001-1-aaaaaa.json").write_text("[1, 2")
    run = subprocess.run([sys.executable, "-c", HANDLER_BUG + RUN_ONCE], env=env(lore_home),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = subprocess.run([LORE, "worker", "status", "--json"], env=env(lore_home),
                         capture_output=True, text=True, timeout=60)
    st = json.loads(out.stdout)
    assert st["errors"]["count"] == 1
    [retrying] = st["retrying"]
    assert retrying["attempts"] == 1 and "AttributeError" in retrying["last_error"]
    [quarantined] = st["quarantined"]
    assert "JSONDecodeError" in quarantined["reason"]
    text = subprocess.run([LORE, "worker", "status"], env=env(lore_home), capture_output=True,
                          text=True, timeout=60)
    assert "retrying" in text.stdout + text.stderr and "quarantined 0000" in text.stderr


# ---- bad text in a transcript ------------------------------------------------------------------

def test_a_transcript_with_lone_surrogates_nuls_and_bad_utf8_is_ingested(lore_home, tmp_path):
    """JavaScript cuts strings inside emoji: "\\ud83d" alone. Such a line used to stop
    `lore ingest` and, as a worker event, every event behind it."""
    lines = TRANSCRIPT.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[1])
    record["cwd"] = "/p/\ud83d"
    bad = json.dumps(record).encode() + b"\n"
    bad = bad.replace(b'"cwd"', b'"x\\u0000": "\\udc00\xff\xfe", "cwd"', 1)
    path = tmp_path / "9b1f1c1e-0000-4000-8000-000000000001.jsonl"
    path.write_bytes(b"".join([lines[0], bad, *lines[2:]]))
    q = Queue(lore_home / "queue")
    q.append("SessionEnd", {"session_id": "s", "transcript_path": str(path)})
    q.append("Stop", {"n": 2})
    w = worker(lore_home)
    assert w.run(once=True) == 2 and q.error_count()["count"] == 0
    w.release()
    good = subprocess.run([LORE, "ingest", str(TRANSCRIPT)], env=env(tmp_path / "other"),
                          capture_output=True, text=True, timeout=180)
    assert good.returncode == 0, good.stderr
    assert message_count(lore_home) == message_count(tmp_path / "other")  # no record lost


# ---- the fault matrix --------------------------------------------------------------------------

CRASH_MID_WRITE = """
import os, sys
from lore.store.sqlite import conversations
real = conversations.ConversationTables.insert_message
count = 0
def insert(self, *a, **k):
    global count
    count += 1
    if count == 5:
        os._exit(9)  # killed mid-transaction: no clean-up, nothing committed
    return real(self, *a, **k)
conversations.ConversationTables.insert_message = insert
""" + RUN_ONCE


def test_worker_killed_during_handle_or_before_the_ack_loses_and_duplicates_nothing(lore_home):
    q = Queue(lore_home / "queue")
    q.append("SessionEnd", {"session_id": "s", "transcript_path": str(TRANSCRIPT)})
    crashed = subprocess.run([sys.executable, "-c", CRASH_MID_WRITE], env=env(lore_home),
                             capture_output=True, text=True, timeout=120)
    assert crashed.returncode == 9 and q.depth() == 1
    # Killed after the write, before the ack: the import is done, the event still pending.
    w = worker(lore_home)
    [event] = list(q.take())
    w.outcome(event)
    w.release()
    imported = message_count(lore_home)
    assert imported > 0 and q.depth() == 1
    # The restart handles it again: idempotent, nothing doubled.
    assert worker(lore_home).run(once=True) == 1
    assert message_count(lore_home) == imported and q.depth() == 0


DISK_FULL = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
""" + RUN_ONCE


def test_disk_full_fails_the_event_not_the_worker(lore_home):
    """No file may grow past 64 kB (RLIMIT_FSIZE, no root needed): the database's write-ahead
    log cannot hold the import, the event is kept for a retry, the database stays intact."""
    subprocess.run([LORE, "admin", "init"], env=env(lore_home), capture_output=True, timeout=60)
    q = Queue(lore_home / "queue")
    q.append("SessionEnd", {"session_id": "s", "transcript_path": str(TRANSCRIPT)})
    q.append("Stop", {"n": 2})
    full = subprocess.run([sys.executable, "-c", DISK_FULL, "65536"], env=env(lore_home),
                          capture_output=True, text=True, timeout=120)
    assert full.returncode == 0, full.stderr[-2000:]
    assert done_kinds(q) == [2]  # the event behind it went on
    [waiting] = q.retrying()
    # EFBIG reaches SQLite as an I/O error (a full disk, ENOSPC, as "database or disk is full").
    assert waiting.attempts == 1 and "disk I/O error" in (waiting.last_error or "")
    assert "Traceback" in (lore_home / "logs" / "worker.log").read_text()
    from lore.store.sqlite.db import connect

    conn = connect(lore_home / "lore.db", create=False)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    w = worker(lore_home)  # space again: the retry (due in 5 s) imports it
    [event] = list(q.take(now=time.time() + 10))
    assert w.handle(event) and message_count(lore_home) > 0


def test_a_locked_database_fails_the_event_then_the_retry_succeeds(lore_home, monkeypatch):
    import lore.store.sqlite.db as db

    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 50)
    q = Queue(lore_home / "queue")
    q.append("SessionEnd", {"session_id": "s", "transcript_path": str(TRANSCRIPT)})
    w = worker(lore_home, retry_delays=(60.0,))
    other = db.connect(lore_home / "lore.db")
    other.execute("BEGIN IMMEDIATE")  # another process writes and holds the lock
    try:
        assert w.run(once=True) == 0
        [waiting] = q.retrying()
        assert "locked" in (waiting.last_error or "")  # StoreBusy or SQLite's own
    finally:
        other.execute("ROLLBACK")
        other.close()
    [event] = list(q.take(now=time.time() + 61))
    assert w.handle(event) and message_count(lore_home) > 0


def test_a_corrupt_database_page_quarantines_events_and_the_worker_goes_on(lore_home):
    subprocess.run([LORE, "ingest", str(TRANSCRIPT)], env=env(lore_home), capture_output=True,
                   timeout=180, check=True)
    db = lore_home / "lore.db"
    from lore.store.sqlite.db import connect

    conn = connect(db, create=False)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'messages'").fetchone()[0]
    conn.close()
    with open(db, "r+b") as fh:  # scribble over the messages table's root page
        fh.seek((root - 1) * page)
        fh.write(os.urandom(page))
    q = Queue(lore_home / "queue")
    q.append("SessionEnd", {"session_id": "s", "transcript_path": str(OTHER_TRANSCRIPT)})
    q.append("Stop", {"n": 2})
    settings = make_settings(lore_home)
    w = Worker(settings)
    w.retry_delays, w.max_attempts = (0.0,), 2
    assert w.run(once=True) >= 1
    assert 2 in done_kinds(q)
    [(_, reason)] = q.quarantined()
    assert "malformed" in reason or "DatabaseError" in reason or "corrupt" in reason, reason


def test_an_unwritable_home_fails_open_in_the_hook_and_clearly_in_the_worker(tmp_path):
    """A home under a regular file cannot be created by anyone, root included (chmod does
    not stop root): the hook exits 0 silently; the worker says what is wrong."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    home = blocker / "lore"
    hook = subprocess.run([LORE, "hook", "stop"], input='{"session_id": "s"}', env=env(home),
                          capture_output=True, text=True, timeout=30)
    assert hook.returncode == 0 and hook.stdout == "" and hook.stderr == ""
    run = subprocess.run([LORE, "worker", "run", "--once"], env=env(home), capture_output=True,
                         text=True, timeout=60)
    assert run.returncode != 0 and "Traceback" not in run.stderr


def test_a_clock_jump_skews_rule_decay_only_until_the_next_rescore(lore_home, monkeypatch):
    """Recency compares evidence times with the wall clock; every rescore recomputes from the
    stored times, so the first rescore after the clock is right again undoes a jump."""
    from datetime import UTC, datetime, timedelta

    import lore.extract.score as learner

    w = worker(lore_home)
    learning = w.lore.learning
    rule = learning.record("always use type hints", None, project="/p").lesson
    assert rule is not None
    before = w.lore.lessons.get(rule.id).score

    class Jumped(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.now(tz or UTC) + timedelta(days=365)

    monkeypatch.setattr(learner, "datetime", Jumped)  # the clock jumps a year ahead
    w.rescore()
    assert w.lore.lessons.get(rule.id).score < before  # faded early
    monkeypatch.setattr(learner, "datetime", datetime)  # the clock is right again
    w.rescore()
    assert w.lore.lessons.get(rule.id).score == before
