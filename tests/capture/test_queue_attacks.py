"""The queue and the home under attack: copies of event files made by sync tools, things in
pending/ that are not files, a full disk, a home Lore did not create, a symlinked home, a bad
LORE_DEVICE, and workers that must not outlive their use (docs/reliability.md, "Queue and home")."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FakeEmbedder, make_settings, stop_workers
from lore import hooks
from lore.api import Lore
from lore.apply import check_hook as guards
from lore.capture import enqueue, hooklog
from lore.capture import queue as queue_module
from lore.capture.queue import KEEP_ROTATED, Queue
from lore.errors import ConfigError
from lore.home import check_device, worker_running
from lore.worker import Worker

LORE = str(Path(sys.executable).parent / "lore")
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


def env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "LORE_HOME": str(home), **extra}


def worker(home: Path, **kw: object) -> Worker:
    s = make_settings(home)
    w = Worker(s, lore=Lore.open(s, embedder=FakeEmbedder()))
    w.retry_delays = (0.0,)
    for k, v in kw.items():
        setattr(w, k, v)
    return w


def done_lines(q: Queue) -> list[dict]:
    return [json.loads(line) for line in q.done.read_bytes().splitlines()] if q.done.exists() else []


@pytest.fixture
def handled(monkeypatch) -> list[str]:
    """The ids of the events the worker's handlers ran on, in order."""
    seen: list[str] = []
    real = Worker.outcome

    def outcome(self, event):
        seen.append(event.id)
        return real(self, event)

    monkeypatch.setattr(Worker, "outcome", outcome)
    return seen


# ---- copies made by sync tools ---------------------------------------------------------------

COPY_NAMES = ["{id} (conflicted copy).json", "{id} (Sam's conflicted copy 2026-11-26).json",
              "{id}.sync-conflict-20261126-101010-ABCDEFG.json", "renamed by hand.json"]


def test_a_sync_tools_copy_is_handled_once_and_every_file_removed(lore_home, handled):
    q = Queue(lore_home / "queue")
    event_id = q.append("UserPromptSubmit", {"session_id": "s", "prompt": "p"})
    original = q.pending / f"{event_id}.json"
    for name in COPY_NAMES:
        shutil.copy(original, q.pending / name.format(id=event_id))
    w = worker(lore_home)
    assert w.run(once=True) == 1
    assert handled == [event_id]  # one handling; the copies were acknowledged unhandled
    assert q.files() == []
    lines = done_lines(q)
    assert len(lines) == 1 + len(COPY_NAMES)
    assert sum("already handled" in line["outcome"] for line in lines) == len(COPY_NAMES)
    assert w.run(once=True) == 0


def test_a_copy_of_an_event_handled_before_a_restart_is_not_handled_again(lore_home, handled):
    q = Queue(lore_home / "queue")
    event_id = q.append("UserPromptSubmit", {"session_id": "s", "prompt": "p"})
    saved = (q.pending / f"{event_id}.json").read_bytes()
    worker(lore_home).run(once=True)
    (q.pending / f"{event_id} (conflicted copy).json").write_bytes(saved)  # synced back later
    assert worker(lore_home).run(once=True) == 0  # a new worker: the id is read from done.jsonl
    assert handled == [event_id] and q.files() == []


def test_a_copy_does_not_spin_a_running_worker(lore_home):
    """The attack as found: `cp pending/X.json "pending/X (conflicted copy).json"` under a running
    worker made about 800 handlings a second; now two lines in done.jsonl and nothing pending."""
    q = Queue(lore_home / "queue")
    event_id = q.append("UserPromptSubmit", {"session_id": "s", "prompt": "p"})
    shutil.copy(q.pending / f"{event_id}.json", q.pending / f"{event_id} (conflicted copy).json")
    proc = subprocess.Popen([LORE, "worker", "run"], env=env(lore_home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and q.files():
            time.sleep(0.2)
        time.sleep(2)  # a spinning worker would write hundreds of lines meanwhile
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert q.files() == [] and len(done_lines(q)) == 2 and q.rotated() == []


NAME = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
               min_size=1, max_size=40).filter(lambda n: n not in (".", ".."))


@settings(max_examples=80, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(NAME, st.integers(0, 3)), min_size=1, max_size=12))
def test_every_file_in_pending_is_taken_once_whatever_its_name(files):
    """Any file names, each holding one of four events (so some are copies of others): one pass
    of take/ack handles each event id once and removes every event file it took; what is left
    is only what is no event file (hidden names, names not ending in .json); a second pass
    finds nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        q = Queue(Path(tmp) / "queue")
        q.pending.mkdir(parents=True)
        events = [json.dumps({"v": 1, "id": f"e{i}", "kind": "Stop", "at": 1.0,
                              "payload": {"n": i}}) for i in range(4)]
        written = {}
        for name, i in files:
            name = name if len(name.encode()) < 200 else name[:50]
            try:
                (q.pending / name).write_text(events[i], encoding="utf-8")
            except OSError:
                continue
            written[name] = i
        counts: dict[str, int] = {}
        for event in q.take():
            counts[event.id] = counts.get(event.id, 0) + 1
            q.ack(event)
        expected = {f"e{i}" for name, i in written.items()
                    if name.endswith(".json") and not name.startswith(".")}
        assert counts == dict.fromkeys(expected, 1)
        left = sorted(p.name for p in q.pending.iterdir())
        assert left == sorted(n for n in written if not n.endswith(".json") or n.startswith("."))
        assert list(q.take()) == []


# ---- what is not a regular file --------------------------------------------------------------

def test_a_fifo_link_or_folder_in_pending_is_left_alone(lore_home, tmp_path):
    q = Queue(lore_home / "queue")
    good = q.append("UserPromptSubmit", {"session_id": "s", "prompt": "p"})
    os.mkfifo(q.pending / "00000000000000000000-fifo.json")  # would block an open() forever
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"v": 1, "id": "x", "kind": "Stop", "at": 1.0,
                                   "payload": {"from": "outside"}}))
    (q.pending / "00000000000000000001-link.json").symlink_to(outside)
    (q.pending / "00000000000000000002-dir.json").mkdir()
    q.quarantine.mkdir()
    (q.quarantine / "q.json").write_text("{")
    os.mkfifo(q.quarantine / "q.json.reason")
    run = subprocess.run([LORE, "worker", "run", "--once"], env=env(lore_home),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "processed 1 events" in run.stderr, run.stderr
    status = subprocess.run([LORE, "worker", "status", "--json"], env=env(lore_home),
                            capture_output=True, text=True, timeout=60)
    st_ = json.loads(status.stdout)
    assert st_["queue_depth"] == 0 and st_["last_processed"]["id"] == good
    assert st_["quarantined"] == [{"file": "q.json", "reason": "unknown"}]
    assert stat.S_ISFIFO((q.pending / "00000000000000000000-fifo.json").lstat().st_mode)
    assert (q.pending / "00000000000000000001-link.json").is_symlink()
    assert json.loads(outside.read_text())["payload"] == {"from": "outside"}  # never taken
    assert [line["id"] for line in done_lines(q)] == [good]


def test_status_does_not_hang_on_pipes_where_its_files_should_be(lore_home):
    q = Queue(lore_home / "queue")
    q.root.mkdir(parents=True)
    os.mkfifo(q.done)
    os.mkfifo(q.errors)
    status = subprocess.run([LORE, "worker", "status", "--json"], env=env(lore_home),
                            capture_output=True, text=True, timeout=60)
    st_ = json.loads(status.stdout)
    assert st_["last_processed"] is None and st_["errors"]["count"] == 0


# ---- done.jsonl: bounded, whole lines --------------------------------------------------------

def test_rotated_done_files_are_pruned_to_a_bound(lore_home, monkeypatch):
    monkeypatch.setattr(queue_module, "ROTATE_BYTES", 2000)
    q = Queue(lore_home / "queue")
    for i in range(300):
        q.append("Stop", {"n": i, "text": "x" * 100})
    for event in q.take():
        q.ack(event)
    rotated = q.rotated()
    assert len(rotated) == KEEP_ROTATED and q.files() == []
    total = sum(p.stat().st_size for p in [*rotated, q.done])
    assert total < (KEEP_ROTATED + 1) * 2600
    # The newest rotated file still tells a fresh reader which events were handled.
    newest = {json.loads(line)["id"] for line in rotated[-1].read_bytes().splitlines()}
    assert newest <= set(Queue(q.root).done_ids())


def enospc_for(monkeypatch, part: str, after: int = 0) -> list[int]:
    """os.write raises ENOSPC for files whose path holds ``part``, after writing ``after``
    bytes of the first such write (a write cut short, as on a nearly full disk)."""
    real = os.write
    calls: list[int] = []

    def write(fd, data):
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = ""
        if part in path:
            calls.append(fd)
            if after and len(calls) == 1:
                return real(fd, bytes(data)[:after])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to tell which file a descriptor writes")
    monkeypatch.setattr(os, "write", write)
    return calls


def test_a_done_line_is_written_whole_or_not_at_all(lore_home, monkeypatch):
    q = Queue(lore_home / "queue")
    first, second = q.append("Stop", {"n": 1}), q.append("Stop", {"n": 2})
    events = list(q.take())
    q.ack(events[0])
    size = q.done.stat().st_size
    calls = enospc_for(monkeypatch, "done.jsonl", after=10)
    with pytest.raises(OSError):
        q.ack(events[1])
    assert calls and q.done.stat().st_size == size  # the 10 bytes written were taken back
    assert q.files() == [f"{second}.json"]  # not acknowledged: it stays pending
    monkeypatch.undo()
    [again] = list(Queue(q.root).take())
    Queue(q.root).ack(again)
    assert [line["id"] for line in done_lines(q)] == [first, second]


def test_a_reader_skips_a_torn_line_and_the_next_line_starts_afresh(lore_home):
    q = Queue(lore_home / "queue")
    q.append("Stop", {"n": 1})
    [event] = list(q.take())
    q.ack(event, "first")
    with open(q.done, "ab") as fh:
        fh.write(b'{"v": 1, "id": "torn", "kind": "St')  # an older Lore on a full disk
    assert q.last_done()["outcome"] == "first"
    q.append("Stop", {"n": 2})
    [event] = list(q.take())
    q.ack(event, "second")
    raw = q.done.read_bytes().splitlines()
    assert raw[1] == b'{"v": 1, "id": "torn", "kind": "St' and json.loads(raw[2])["outcome"] == "second"
    assert q.last_done()["outcome"] == "second"


# ---- a full disk -----------------------------------------------------------------------------

def test_a_hook_on_a_full_disk_logs_the_dropped_event_and_leaves_no_file(lore_home, monkeypatch):
    (lore_home / "queue" / "pending").mkdir(parents=True)
    enospc_for(monkeypatch, str(lore_home / "queue"))
    monkeypatch.setattr("sys.stdin", __import__("io").TextIOWrapper(__import__("io").BytesIO(
        b'{"session_id": "s", "prompt": "hello"}')))
    out = __import__("io").StringIO()
    monkeypatch.setattr("sys.stdout", out)
    assert hooks.main("user-prompt-submit") == 0 and out.getvalue() == ""
    assert list((lore_home / "queue" / "pending").iterdir()) == []  # no empty .tmp left
    log = (lore_home / "logs" / "hooks.log").read_text().splitlines()
    assert log[0].endswith("hook user-prompt-submit failed; the event was not queued: "
                           "OSError: [Errno 28] No space left on device")


FULL_DISK_HOOK = """
import errno, os, sys
real = os.write
def write(fd, data):
    if "/queue/" in os.readlink(f"/proc/self/fd/{fd}"):
        raise OSError(errno.ENOSPC, "No space left on device")
    return real(fd, data)
os.write = write
from lore.entry import main
sys.argv = ["lore", "hook", "stop"]
main()
"""


def test_a_hook_process_on_a_full_disk_exits_0_silently_and_logs(lore_home):
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc")
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", FULL_DISK_HOOK], input='{"session_id": "s"}',
                             env=env(lore_home), capture_output=True, text=True, timeout=60)
        assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    assert list((lore_home / "queue" / "pending").iterdir()) == []
    log = (lore_home / "logs" / "hooks.log").read_text()
    assert log.count("hook stop failed; the event was not queued: OSError: [Errno 28]") == 3


def test_the_hooks_log_is_bounded(lore_home, monkeypatch):
    logs = lore_home / "logs"
    logs.mkdir(parents=True)
    (logs / "hooks.log").write_bytes(b"x" * (hooklog.LOG_BYTES + 1))
    monkeypatch.setattr("sys.stdin", __import__("io").TextIOWrapper(__import__("io").BytesIO(b"[1]")))
    assert hooks.main("stop") == 0
    assert (logs / "hooks.log.1").stat().st_size == hooklog.LOG_BYTES + 1
    assert (logs / "hooks.log").read_text().startswith(
        time.strftime("%Y-%m-%d"))  # a fresh log with this failure only
    assert "hook stop failed; the event was not queued: ValueError" in (logs / "hooks.log").read_text()


NPM_CHECK = {"id": "c1", "lesson_id": "l1", "mode": "block", "command": r"npm(?=\s|$)",
             "rule": "Use pnpm, not npm", "status": "active"}
NPM_CALL = json.dumps({"session_id": "s", "cwd": "/p", "tool_name": "Bash",
                       "tool_input": {"command": "npm install left-pad"}})


def pre_tool_use(monkeypatch, stdin: str) -> str:
    import io

    out = io.StringIO()
    assert guards.main(io.BytesIO(stdin.encode()), out) == 0
    return out.getvalue()


def test_every_hook_keeps_the_hooks_log_bounded(lore_home, monkeypatch):
    """The attack: 3,000 failing PreToolUse calls grew hooks.log to 2.8 MB (its writer never
    rotated). Every hook writes through one log that rotates past LOG_BYTES (made small here):
    200 failures of each kind leave hooks.log and hooks.log.1 within the bound."""
    monkeypatch.setattr(hooklog, "LOG_BYTES", 4000)
    guards.write_compiled(str(lore_home / "guards.json"), [NPM_CHECK], "now")
    logs = lore_home / "logs"
    for _ in range(200):
        assert pre_tool_use(monkeypatch, "not json") == ""  # fails open, logs a traceback
        monkeypatch.setattr("sys.stdin", __import__("io").TextIOWrapper(
            __import__("io").BytesIO(b"[1]")))
        assert hooks.main("stop") == 0
    sizes = {p.name: p.stat().st_size for p in logs.iterdir()}
    assert set(sizes) == {"hooks.log", "hooks.log.1"}, sizes
    biggest = 2000 + 2000  # a line is cut at 2,000 characters; a traceback stays well below
    assert all(size <= 4000 + biggest for size in sizes.values()), sizes
    text = (logs / "hooks.log").read_text() + (logs / "hooks.log.1").read_text()
    assert "hook pre-tool-use failed: JSONDecodeError" in text
    assert "hook stop failed; the event was not queued: ValueError" in text


def test_a_block_holds_when_its_record_cannot_be_queued(lore_home, monkeypatch):
    """The attack: on a full disk the PreToolUse record could not be written and the hook
    failed open, so the block was not given, nothing was logged in a line that fits, and
    `lore worker status` said 0 errors. Now the call is still denied, the failure is one line
    in hooks.log and counted under `dropped`, and the queue holds no partial file."""
    guards.write_compiled(str(lore_home / "guards.json"), [NPM_CHECK], "now")
    Queue(lore_home / "queue").write_errors()  # as a worker leaves it: room for the count
    enospc_for(monkeypatch, str(lore_home / "queue" / "pending"))
    for _ in range(3):
        out = json.loads(pre_tool_use(monkeypatch, NPM_CALL))["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny" and "Use pnpm, not npm" in \
            out["permissionDecisionReason"]
    assert [p.name for p in (lore_home / "queue" / "pending").iterdir()] == []
    log = (lore_home / "logs" / "hooks.log").read_text().splitlines()
    assert len(log) == 3 and all(line.endswith(
        "hook pre-tool-use could not queue its record (the decision was given all the same): "
        "OSError: [Errno 28] No space left on device") for line in log), log
    monkeypatch.undo()
    status = subprocess.run([LORE, "worker", "status", "--json"], env=env(lore_home),
                            capture_output=True, text=True, timeout=60)
    dropped = json.loads(status.stdout)["errors"]["dropped"]
    assert dropped["count"] == 3 and "pre-tool-use: OSError" in dropped["last"]["reason"]
    text = subprocess.run([LORE, "worker", "status"], env=env(lore_home), capture_output=True,
                          text=True, timeout=60).stdout
    row = next(line for line in text.splitlines() if "events not queued" in line)
    assert "3 (last: pre-tool-use: OSError: [Errno 28]" in row


def test_counts_of_events_not_queued_are_not_lost_between_hooks(lore_home):
    """Eight processes count 25 drops each at once: errors.json says 200."""
    Queue(lore_home / "queue").write_errors()
    code = ("import sys\nfrom lore.capture import hooklog\n"
            "for i in range(25): hooklog.count(sys.argv[1], f'stop: OSError {i}')\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(lore_home)]) for _ in range(8)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 8
    assert Queue(lore_home / "queue").error_count()["dropped"]["count"] == 200


def test_a_block_on_a_real_full_disk(tmp_path):
    """A 6 MB tmpfs filled with dd after a worker ran once: each of 15 PreToolUse calls that
    match a block check is denied all the same, hooks.log says why each record was lost, and
    `lore worker status` counts them among the events not queued."""
    home = tmp_path / "small"
    check = json.dumps({"format": guards.FORMAT, "stamp": "now", "checks": [NPM_CHECK]})
    hook = f"echo '{NPM_CALL}' | \"$@\" hook pre-tool-use"
    script = (
        '"$@" admin init >/dev/null 2>&1 && "$@" worker run --once >/dev/null 2>&1 && '
        f"printf '%s' '{check}' > \"{home}/guards.json\" && "
        f'echo "not json" | "$@" hook stop && '  # hooks.log exists before the disk fills
        f'dd if=/dev/zero of="{home}/filler" bs=4k >/dev/null 2>&1; '
        f'for i in $(seq 15); do {hook}; echo; done; echo @@; '
        f'ls -a "{home}/queue/pending"; echo @@; cat "{home}/logs/hooks.log"; echo @@; '
        '"$@" worker status --json')
    proc = in_small_tmpfs(home, 6, script)
    decisions, pending, log, status = proc.stdout.split("@@\n")
    denied = [json.loads(line)["hookSpecificOutput"]["permissionDecision"]
              for line in decisions.splitlines() if line.strip()]
    assert denied == ["deny"] * 15, proc.stdout + proc.stderr
    assert [n for n in pending.split() if n not in (".", "..")] == []
    assert log.count("could not queue its record (the decision was given all the same): "
                     "OSError: [Errno 28]") == 15, log
    assert json.loads(status)["errors"]["dropped"]["count"] == 16  # and the Stop that was no JSON


def test_stale_temporary_files_are_swept(lore_home):
    q = Queue(lore_home / "queue")
    q.append("Stop", {"n": 1})
    old = q.pending / ".01795700870838964063-25331-7be5b9.tmp"  # a hook killed mid-write
    fresh = q.pending / ".01795700870838964064-25332-7be5ba.tmp"  # a hook writing now
    root_old = q.root / ".lore-errors.json.tmp"
    theirs = q.pending / ".syncthing.x.json.tmp"  # a sync tool's: not Lore's to delete
    for p in (old, fresh, root_old, theirs):
        p.write_bytes(b"")
    past = time.time() - 120
    for p in (old, root_old, theirs):
        os.utime(p, (past, past))
    assert len(list(q.take())) == 1
    assert not old.exists() and not root_old.exists() and fresh.exists() and theirs.exists()


def test_the_failure_count_is_kept_when_no_new_file_fits(lore_home, monkeypatch):
    q = Queue(lore_home / "queue")
    assert q.write_errors()
    real = enqueue.open_private

    def full(path, mode="w"):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(enqueue, "open_private", full)
    for i in range(3):
        q.record_failure(f"OperationalError: database or disk is full ({i})", database=True)
    monkeypatch.setattr(enqueue, "open_private", real)
    counts = q.error_count()
    assert counts["database"]["count"] == 3
    assert counts["database"]["last"]["reason"].endswith("(2)") and counts["count"] == 0
    assert q.errors.stat().st_size == queue_module.ERRORS_BYTES


def test_a_failure_that_cannot_be_written_into_its_file_still_backs_off(lore_home, monkeypatch):
    q = Queue(lore_home / "queue")
    q.append("Stop", {"n": 1})
    [event] = list(q.take())
    monkeypatch.setattr(queue_module, "write_atomic", lambda *a, **k: (_ for _ in ()).throw(
        OSError(errno.ENOSPC, "No space left on device")))
    assert not q.fail(event, "disk full", max_attempts=5, delay=60.0)
    assert list(q.take()) == []  # waiting for its retry, though its file says nothing of it
    [due] = list(q.take(now=time.time() + 61))
    assert due.attempts == 1


def test_worker_status_shows_database_failures(lore_home, monkeypatch):
    import lore.store.sqlite.db as db

    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 50)
    q = Queue(lore_home / "queue")
    q.append("UserPromptSubmit", {"session_id": "s", "prompt": "No, use pnpm instead of npm",
                                  "lore_signals": {"correction": True,
                                                   "user_message": "No, use pnpm instead of npm"}})
    w = worker(lore_home, retry_delays=(60.0,))
    other = db.connect(lore_home / "lore.db")
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        assert w.run(once=True) == 0
    finally:
        other.execute("ROLLBACK")
        other.close()
    w.release()
    out = subprocess.run([LORE, "worker", "status", "--json"], env=env(lore_home),
                         capture_output=True, text=True, timeout=60)
    errors = json.loads(out.stdout)["errors"]
    assert errors["count"] == 1 and errors["database"]["count"] == 1
    assert "locked" in errors["database"]["last"]["reason"]
    text = subprocess.run([LORE, "worker", "status"], env=env(lore_home), capture_output=True,
                          text=True, timeout=60)
    row = next(line for line in text.stdout.splitlines() if "database failures" in line)
    assert "1 (last:" in row and "locked" in row


def _can_mount() -> bool:
    if not ROOT or not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m t /mnt"],
                           capture_output=True, check=False)
    return probe.returncode == 0


MOUNT = _can_mount()
EDIT = json.dumps({"session_id": "s", "cwd": "/p", "tool_name": "Write",
                   "tool_input": {"file_path": "/p/a.py", "content": "x = 1\n" * 2000}})


def in_small_tmpfs(home: Path, megabytes: int, script: str) -> subprocess.CompletedProcess:
    """Run ``script`` (sh; "$@" is lore) with ``home`` a tmpfs of ``megabytes`` MB, in a mount
    namespace of its own (root only)."""
    if not MOUNT:
        pytest.skip("needs root and mount namespaces for a real small file system")
    home.mkdir(exist_ok=True)
    full = f'mount -t tmpfs -o size={megabytes}m tmpfs "{home}" && ' + script
    e = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    e.update(LORE_HOME=str(home), HF_HUB_OFFLINE="1", LORE_WORKER_AUTOSTART="0")
    return subprocess.run(["unshare", "-m", "sh", "-c", full, "sh", LORE], env=e,
                          capture_output=True, text=True, timeout=300, check=False)


def test_a_real_full_disk(tmp_path):
    """A 6 MB tmpfs filled with dd: hooks exit 0, log every dropped event and leave no
    temporary file; the worker's database writes fail and `lore worker status` counts them;
    done.jsonl holds only whole lines."""
    home = tmp_path / "small"
    hook = f"echo '{EDIT}' | \"$@\" hook post-tool-use"
    script = (
        '"$@" admin init >/dev/null 2>&1 && "$@" worker run --once 2>/dev/null && '
        f'for i in 1 2 3; do {hook}; done && "$@" worker run --once 2>/dev/null && '
        f'echo "not json" | "$@" hook stop && '  # hooks.log exists before the disk fills
        f'for i in 1 2 3 4 5 6; do {hook}; done && '
        f'dd if=/dev/zero of="{home}/filler" bs=4k >/dev/null 2>&1; '
        f'for i in $(seq 10); do {hook} || echo "hook rc=$?" >&2; done; '
        '"$@" worker run --once >/dev/null 2>&1; '
        f'ls -a "{home}/queue/pending"; echo @@; cat "{home}/logs/hooks.log"; echo @@; '
        f'cat "{home}/queue/done.jsonl"; echo @@; "$@" worker status --json')
    proc = in_small_tmpfs(home, 6, script)
    assert "hook rc=" not in proc.stderr, proc.stderr
    pending, log, done, status = proc.stdout.split("@@\n")
    names = pending.split()
    assert not [n for n in names if n.endswith(".tmp")], names
    assert log.count("the event was not queued: OSError: [Errno 28]") == 10, log[-2000:]
    assert all(json.loads(line) for line in done.splitlines())  # every line whole
    st_ = json.loads(status)
    assert st_["errors"]["database"]["count"] >= 1, st_
    assert "full" in st_["errors"]["database"]["last"]["reason"]


def test_the_write_ahead_log_stays_small(tmp_path):
    """60 edits of 12 kB each on a 4 MB volume (Lore's 4 MB write-ahead log filled such a
    volume after 40 events): every event is handled and the log stays near 1 MB."""
    home = tmp_path / "small"
    script = (f"for i in $(seq 60); do echo '{EDIT}' | \"$@\" hook post-tool-use; done && "
              '"$@" worker run --once 2>&1 | tail -1 && "$@" worker status --json && '
              f'ls -l "{home}"')
    proc = in_small_tmpfs(home, 4, script)
    assert "processed 60 events" in proc.stdout, proc.stdout + proc.stderr
    status = json.loads(proc.stdout[proc.stdout.index("{"):proc.stdout.rindex("}") + 1])
    assert status["queue_depth"] == 0 and status["errors"]["count"] == 0


def test_the_write_ahead_log_is_cut_back_after_checkpoints(lore_home):
    from lore.store.sqlite.db import WAL_LIMIT_BYTES

    q = Queue(lore_home / "queue")
    for i in range(150):
        q.append("PostToolUse", {"session_id": "s", "cwd": "/p", "tool_name": "Write",
                                 "tool_input": {"file_path": f"/p/{i}.py",
                                                "content": f"v = {i}\n" * 3000}})
    w = worker(lore_home)
    wal = lore_home / "lore.db-wal"
    sizes = []
    real = w.handle

    def handle(event):
        ok = real(event)
        sizes.append(wal.stat().st_size if wal.exists() else 0)
        return ok

    w.handle = handle
    assert w.run(once=True) == 150
    assert (lore_home / "lore.db").stat().st_size > 4 * WAL_LIMIT_BYTES  # much was written
    assert max(sizes) < 2 * WAL_LIMIT_BYTES


# ---- a home Lore did not create, a symlinked home --------------------------------------------

def test_one_hook_in_an_existing_folder_changes_no_mode(tmp_path):
    home = tmp_path / "existing"
    (home / "src" / "pkg").mkdir(parents=True)
    for p in (home / "src" / "main.py", home / "src" / "pkg" / "x.sh", home / "README"):
        p.write_text("user's")
    (home / "src" / "pkg" / "x.sh").chmod(0o755)
    for d in (home, home / "src", home / "src" / "pkg"):
        d.chmod(0o755)
    before = {p: stat.S_IMODE(p.lstat().st_mode) for p in [home, *home.rglob("*")]}
    out = subprocess.run([LORE, "hook", "stop"], input='{"session_id": "s"}', env=env(home),
                         capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    assert {p: stat.S_IMODE(p.lstat().st_mode) for p in before} == before
    assert Queue(home / "queue").depth() == 1
    first, second = on_a_terminal(home, "stats", "--counts"), on_a_terminal(home, "stats", "--counts")
    assert first.count("can be read by other users (mode 0755)") == 1, first
    assert "can be read by other users" not in second
    assert {p: stat.S_IMODE(p.lstat().st_mode) for p in before} == before


def on_a_terminal(home: Path, *args: str) -> str:
    """What `lore ARGS` writes to stderr when stderr is a terminal (a pseudo-terminal)."""
    import pty

    master, slave = pty.openpty()
    try:
        proc = subprocess.run([LORE, *args], env=env(home), stdout=subprocess.DEVNULL,
                              stderr=slave, timeout=120)
    finally:
        os.close(slave)
    chunks = []
    try:
        while data := os.read(master, 4096):
            chunks.append(data)
    except OSError:  # EIO: the terminal's other end is closed and all was read
        pass
    finally:
        os.close(master)
    assert proc.returncode == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_the_hook_path_never_walks_a_symlinked_home(tmp_path, monkeypatch):
    target = tmp_path / "big"
    for i in range(50):
        (target / f"d{i}").mkdir(parents=True)
    target.chmod(0o755)
    link = tmp_path / "link"
    link.symlink_to(target)
    monkeypatch.setenv("LORE_HOME", str(link))

    def no_walk(*a, **k):
        raise AssertionError("the hook walked the home")

    for name in ("walk", "scandir", "listdir"):
        monkeypatch.setattr(os, name, no_walk)
    monkeypatch.setattr(Path, "rglob", no_walk)
    monkeypatch.setattr(Path, "iterdir", no_walk)
    monkeypatch.setattr(hooks, "_log", lambda *a: (_ for _ in ()).throw(AssertionError(a)))
    monkeypatch.setattr("sys.stdin", __import__("io").TextIOWrapper(__import__("io").BytesIO(
        b'{"session_id": "s", "prompt": "hi"}')))
    monkeypatch.delenv("LORE_WORKER_AUTOSTART")
    monkeypatch.setattr(hooks, "spawn_worker", lambda home, idle: 0)
    assert hooks.main("user-prompt-submit") == 0
    monkeypatch.undo()
    assert Queue(target / "queue").depth() == 1


# ---- LORE_DEVICE -----------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["laptop", "build-box.2", "01JD5ZQ8W9X3", "a" * 64, "A_b-c.d"])
def test_a_valid_device_id_is_kept(value):
    assert check_device(value) == value


@pytest.mark.parametrize("value", ["a b", "../../etc", "x:y", "-lead", "a" * 65, "é", "a\nb",
                                   "dev/1", ".hidden", "a;rm -rf"])
def test_an_invalid_device_id_is_one_clear_line(value):
    with pytest.raises(ConfigError) as exc:
        check_device(value)
    assert "\n" not in str(exc.value) and "LORE_DEVICE=" in str(exc.value)


@settings(max_examples=200, derandomize=True)
@given(st.text(max_size=80))
def test_any_device_value_is_kept_or_refused_in_one_line(value):
    try:
        assert check_device(value) == value and value.isascii() and len(value) <= 64
        assert "/" not in value and ":" not in value and value[0].isalnum()
    except ConfigError as exc:
        assert "\n" not in str(exc)


def test_an_invalid_device_stops_commands_and_the_worker_but_not_the_hook(lore_home):
    bad = env(lore_home, LORE_DEVICE="my laptop/1")
    cmd = subprocess.run([LORE, "learn", "add", "Title", "Content"], env=bad,
                         capture_output=True, text=True, timeout=120)
    assert cmd.returncode == 1 and "Traceback" not in cmd.stderr
    assert cmd.stderr.strip().splitlines() == [
        "Error: LORE_DEVICE='my laptop/1' is not a valid device id; use 1 to 64 letters, digits, "
        "'.', '_' or '-', starting with a letter or digit (or unset it)"]
    assert not (lore_home / "lore.db").exists()
    del bad["LORE_WORKER_AUTOSTART"]
    hook = subprocess.run([LORE, "hook", "stop"], input='{"session_id": "s"}', env=bad,
                          capture_output=True, text=True, timeout=60)
    assert (hook.returncode, hook.stdout, hook.stderr) == (0, "", "")
    assert Queue(lore_home / "queue").depth() == 1  # queued all the same
    assert "could not start the worker: ConfigError: LORE_DEVICE=" in (
        lore_home / "logs" / "hooks.log").read_text()
    assert not worker_running(lore_home)
    run = subprocess.run([LORE, "worker", "run", "--once"], env=bad, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1 and run.stderr.startswith("Error: LORE_DEVICE=")
    assert Queue(lore_home / "queue").depth() == 1


# ---- workers that exit -----------------------------------------------------------------------

def wait_for(check, seconds: float = 60.0) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def test_a_worker_a_hook_started_exits_when_idle_and_the_next_hook_starts_another(lore_home):
    e = env(lore_home, LORE_WORKER_IDLE_EXIT="2")
    del e["LORE_WORKER_AUTOSTART"]
    q = Queue(lore_home / "queue")
    pids = []
    for n in (1, 2):
        out = subprocess.run([LORE, "hook", "stop"], input=json.dumps({"session_id": f"s{n}"}),
                             env=e, capture_output=True, text=True, timeout=60)
        assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
        assert wait_for(lambda n=n: len(done_lines(q)) == n), (lore_home / "logs" / "worker.log").read_text()
        pids.append(int((lore_home / "worker.pid").read_text() or 0))
        assert wait_for(lambda: not worker_running(lore_home), 60)
    assert pids[0] != pids[1]
    log = (lore_home / "logs" / "worker.log").read_text()
    assert log.count("idle for 2 s: exiting") == 2


def test_a_worker_gives_up_idling_when_an_event_arrives_as_it_lets_go(lore_home):
    """The hook queues, then finds the lock held and starts no worker; the worker lets go of the
    lock and looks once more: it sees the event and keeps serving."""
    w = worker(lore_home, idle_exit=0.0)
    w.acquire()
    try:
        Queue(lore_home / "queue").append("Stop", {"n": 1})
        assert w._still_idle() is False and worker_running(lore_home)
        w.queue.ack(next(iter(w.queue.take())))
        assert w._still_idle() is True and not worker_running(lore_home)
        other = worker(lore_home)  # the next hook's worker, before this one has closed
        other.acquire()
        w.release()
        assert other.status()["pid"] == os.getpid() and worker_running(lore_home)
        other.release()
    finally:
        w.release()


def test_an_idle_worker_in_process_returns(lore_home):
    w = worker(lore_home, idle_exit=0.5)
    Queue(lore_home / "queue").append("Stop", {"n": 1})

    def too_long(*_):
        raise TimeoutError("the idle worker did not exit")

    old = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(60)
    try:
        assert w.run() == 1  # not once: it returns only because it was idle
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert "idle for 0 s: exiting" in (lore_home / "logs" / "worker.log").read_text()


def test_a_worker_that_cannot_start_is_not_started_by_every_hook(lore_home):
    lore_home.mkdir()
    (lore_home / "config.yaml").write_text("search:\n  vectr_weight: 2\n")  # a typo: it exits
    e = env(lore_home)
    del e["LORE_WORKER_AUTOSTART"]
    for _ in range(5):
        out = subprocess.run([LORE, "hook", "stop"], input="{}", env=e, capture_output=True,
                             text=True, timeout=60)
        assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    assert wait_for(lambda: "vectr_weight" in (lore_home / "logs" / "worker.log").read_text())
    time.sleep(1)
    log = (lore_home / "logs" / "worker.log").read_text()
    assert log.count("Error: config") == 1, log  # one start, not five
    assert Queue(lore_home / "queue").depth() == 5


def test_a_bad_idle_setting_fails_open_in_the_hook_and_clearly_in_the_command(lore_home):
    e = env(lore_home, LORE_WORKER_IDLE_EXIT="ten minutes")
    del e["LORE_WORKER_AUTOSTART"]
    out = subprocess.run([LORE, "hook", "stop"], input="{}", env=e, capture_output=True,
                         text=True, timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    assert "LORE_WORKER_IDLE_EXIT='ten minutes' is not a number of seconds" in (
        lore_home / "logs" / "hooks.log").read_text()
    assert not worker_running(lore_home)
    run = subprocess.run([LORE, "worker", "run", "--idle-exit", "0"], env=env(lore_home),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "--idle-exit" in run.stderr


def test_the_test_finalizer_stops_workers_left_running(tmp_path):
    home = tmp_path / "other-home"
    proc = subprocess.Popen([LORE, "worker", "run"], env=env(home), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: worker_running(home))
        assert stop_workers(tmp_path) == [proc.pid]
        assert proc.wait(timeout=30) == 0 and not worker_running(home)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_worker_refuses_a_config_that_sets_a_tuning_constant(lore_home):
    # config.yaml cannot set a tuning constant: the worker refuses it in one line, as the CLI does.
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "config.yaml").write_text("search:\n  rrf_k: 30\n")
    res = subprocess.run([LORE, "worker", "run"], env=env(lore_home), capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        f"Error: config {lore_home / 'config.yaml'}: search.rrf_k is a tuning constant kept in "
        "the code (lore.recall.hybrid.SearchTuning.rrf_k), not a setting; remove it "
        "(docs/configuration.md#tuning-constants)"]
    assert sorted(p.name for p in lore_home.iterdir()) == ["config.yaml"]
