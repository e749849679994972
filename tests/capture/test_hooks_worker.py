"""Hooks append to the queue and never fail; the worker drains it as the single writer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import make_settings
from lore.capture.queue import Queue
from lore.capture.signals import might_teach
from lore.errors import AlreadyRunning
from lore.worker import Worker

LORE = str(Path(sys.executable).parent / "lore")
FIXTURE = (Path(__file__).parents[1] / "fixtures" / "transcripts" / "d-kimuson-claude-code-viewer")


def hook(event: str, stdin: str, home: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([LORE, "hook", event], input=stdin, capture_output=True, text=True,
                          env={**os.environ, "LORE_HOME": str(home), **env}, timeout=30)


@pytest.mark.parametrize("text", [
    "No, don't use Redis, use local file sessions instead",
    "Don't use class components, write hooks",
    "Use pytest instead of unittest",
    "Actually, I prefer tabs here",
    "that's not what I asked for",
    "Never commit the generated lock file",
])
def test_the_prefilter_passes_corrections(text):
    assert might_teach(text)


@pytest.mark.parametrize("text", [
    "Perfect, thanks!", "Looks good", "Can you add a test for the parser?", "", "   ",
    "run the test suite", "great, ship it",
])
def test_the_prefilter_drops_messages_without_a_teaching_word(text):
    assert not might_teach(text)


def test_hook_queues_an_event_silently(lore_home):
    out = hook("session-end", json.dumps({"session_id": "s1", "reason": "exit"}), lore_home)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    [event] = list(Queue(lore_home / "queue").take())
    assert event.kind == "SessionEnd" and event.payload["session_id"] == "s1"


def test_hooks_fail_open(lore_home, tmp_path):
    bad = hook("stop", "this is not json", lore_home)
    assert (bad.returncode, bad.stdout) == (0, "")
    assert "hook stop failed" in (lore_home / "logs" / "hooks.log").read_text()
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    unwritable = hook("stop", "{}", blocked)  # LORE_HOME is a file: nothing can be written
    assert (unwritable.returncode, unwritable.stdout, unwritable.stderr) == (0, "", "")
    off = hook("stop", "{}", lore_home, LORE_DISABLED="1")
    assert off.returncode == 0
    assert Queue(lore_home / "queue").depth() == 0


def test_stop_hook_flags_a_correction_from_the_transcript_tail(lore_home, tmp_path):
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "Add authentication"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "I'll use JWT with Redis session storage."}]}},
        {"type": "user", "message": {"role": "user",
                                     "content": "No, don't use Redis. Use local file sessions."}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Got it, local files."}]}},
    ]
    transcript.write_text("".join(json.dumps(x) + "\n" for x in lines))
    payload = {"session_id": "s1", "transcript_path": str(transcript), "stop_hook_active": False,
               "last_assistant_message": "Got it, local files."}
    assert hook("stop", json.dumps(payload), lore_home).returncode == 0
    [event] = list(Queue(lore_home / "queue").take())
    sig = event.payload["lore_signals"]
    assert sig["correction"] is True
    assert sig["user_message"].startswith("No, don't use Redis")
    assert "Redis session storage" in sig["assistant_proposal"]


def test_queue_with_concurrent_writers_loses_and_duplicates_nothing(lore_home):
    code = ("import sys\nfrom pathlib import Path\nfrom lore.capture.queue import Queue\n"
            "q = Queue(Path(sys.argv[1]))\n"
            "for i in range(300):\n    q.append('Stop', {'writer': sys.argv[2], 'i': i})\n")
    root = lore_home / "queue"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(root), str(w)]) for w in range(4)]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    q = Queue(root)
    seen = [(e.payload["writer"], e.payload["i"]) for e in q.take()]
    assert len(seen) == 1200 and len(set(seen)) == 1200
    order = [i for w, i in seen if w == "0"]
    assert order == sorted(order)  # each writer's events come back in order


def test_corrupt_entry_is_quarantined_and_does_not_block(lore_home):
    q = Queue(lore_home / "queue")
    q.append("Stop", {"n": 1})
    (q.pending / "00000000000000000001-1-aaaaaa.json").write_text("{corrupt")
    q.append("Stop", {"n": 2})
    taken = [e.payload["n"] for e in q.take()]
    assert taken == [1, 2]
    [(name, reason)] = q.quarantined()
    assert name.startswith("00000000000000000001") and "JSONDecodeError" in reason


def test_worker_imports_the_transcript_of_a_session_end(lore_home, real_embedder):
    from lore.api import Lore

    transcript = next(FIXTURE.rglob("*.jsonl"))
    settings = make_settings(lore_home)
    hook("session-end", json.dumps({"session_id": "x", "transcript_path": str(transcript)}),
         lore_home)
    hook("session-end", json.dumps({"session_id": "x", "transcript_path": str(transcript)}),
         lore_home)  # delivered twice: handled idempotently
    with Lore.open(settings, embedder=real_embedder) as lore:
        worker = Worker(settings, lore)
        assert worker.run(once=True) == 2
        stats = lore.conversations.store.stats()
        assert stats["messages"] > 0 and stats["files"] == 1
        st = worker.status()
        assert st["queue_depth"] == 0 and st["last_processed"]["kind"] == "SessionEnd"


def test_one_worker_per_home_and_sigterm_stops_it(lore_home):
    env = {**os.environ, "LORE_HOME": str(lore_home)}
    proc = subprocess.Popen([LORE, "worker", "run"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        settings = make_settings(lore_home)
        deadline = time.time() + 20
        while time.time() < deadline and not Worker(settings).status()["running"]:
            time.sleep(0.2)
        assert Worker(settings).status()["running"]
        with pytest.raises(AlreadyRunning):
            Worker(settings).acquire()
        second = subprocess.run([LORE, "worker", "run", "--once"], env=env, capture_output=True,
                                text=True, timeout=30)
        assert second.returncode == 1 and "already running" in second.stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        assert not Worker(settings).status()["running"]
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_deleted_pid_file_lets_no_second_worker_run(lore_home):
    """The attack: `rm worker.pid` while a worker ran, then `lore worker run`: the second
    worker locked a new pid file and both took events (100 of 240 handled twice). The lock is
    on the queue folder now: with the pid file gone the worker still counts as running, a
    second worker refuses, a hook starts none, the first writes its pid file again, and 60
    events queued meanwhile are each handled once."""
    from lore.home import worker_running

    env = {**os.environ, "LORE_HOME": str(lore_home)}
    proc = subprocess.Popen([LORE, "worker", "run"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    settings = make_settings(lore_home)
    pid_file = lore_home / "worker.pid"
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not Worker(settings).status()["running"]:
            time.sleep(0.2)
        assert Worker(settings).status()["pid"] == proc.pid
        pid_file.unlink()
        assert worker_running(lore_home) and Worker(settings).status()["running"]
        with pytest.raises(AlreadyRunning):
            Worker(settings).acquire()
        second = subprocess.Popen([LORE, "worker", "run"], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            assert second.wait(timeout=60) == 1
            assert "already running" in second.stderr.read()
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
        q = Queue(lore_home / "queue")
        for n in range(60):
            q.append("Stop", {"session_id": f"s{n}"})
        deadline = time.time() + 120
        while time.time() < deadline and (q.depth() or not pid_file.exists()):
            time.sleep(0.2)
        assert q.depth() == 0 and int(pid_file.read_text()) == proc.pid
        ids = [json.loads(line)["id"] for line in q.done.read_bytes().splitlines()]
        assert len(ids) == len(set(ids)) == 60
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert not worker_running(lore_home)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_session_start_context_is_scoped_budgeted_and_marked(lore_home, tmp_path):
    from conftest import FakeEmbedder
    from lore.api import Lore

    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        lore.lessons.add("Use file sessions", "x", kind="preference", project="/work/shop",
                        preference={"context": "auth", "rejected": "Redis", "preferred": "files"})
        lore.lessons.add("Run ruff before committing", "CI fails otherwise", kind="project_rule")
        lore.lessons.add("Other project rule", "y", kind="project_rule", project="/work/blog")
        for i in range(40):
            lore.lessons.add(f"Lesson number {i} about something", "z", project="/work/shop")
        lore.lessons.add("Use pnpm, not npm", "Use pnpm instead of npm.", kind="preference",
                        status="proposed", project="/work/shop",
                        preference={"rejected": "npm", "preferred": "pnpm"},
                        metadata={"learning": {"occurrences": 2, "untyped": ""}})
        # A proposed rule seen once waits for review instead of reaching the session.
        lore.lessons.add("Use yarn, not npm", "Use yarn instead of npm.", kind="preference",
                        status="proposed", project="/work/shop",
                        preference={"rejected": "npm", "preferred": "yarn"},
                        metadata={"learning": {"occurrences": 1}})
        text = lore.apply.session_context("/work/shop", max_chars=900)
        assert text.startswith("<lore-context>") and text.endswith("</lore-context>")
        assert len(text) <= 900
        assert "- Use file sessions\n" in text and "Run ruff" in text
        assert "auth" not in text  # the agent turn a rule corrected is never told as its context
        assert "Other project rule" not in text
        assert "Use pnpm, not npm (unconfirmed)" in text and "Use yarn" not in text
        assert (text.index("Use file sessions") < text.index("Use pnpm, not npm (unconfirmed)")
                < text.index("Lesson number"))
        assert "more item(s) not shown" in text and "lore_search" in text
        assert lore.apply.session_context("/nowhere/else", max_chars=4000).count("\n- ") == 1  # global only
    empty = Lore.open(make_settings(tmp_path / "empty"), embedder=FakeEmbedder())
    assert empty.apply.session_context("/work/shop") == ""
    empty.close()


def test_session_start_hook_prints_context_and_nothing_without_a_database(lore_home):
    first = hook("session-start", json.dumps({"session_id": "s1", "cwd": "/p"}), lore_home)
    assert (first.returncode, first.stdout) == (0, "")  # no database yet: nothing to say
    from conftest import FakeEmbedder
    from lore.api import Lore

    with Lore.open(make_settings(lore_home), embedder=FakeEmbedder()) as lore:
        lore.lessons.add("Prefer pytest", "not unittest", kind="project_rule", project="/p")
    out = hook("session-start", json.dumps({"session_id": "s2", "cwd": "/p"}), lore_home)
    data = json.loads(out.stdout)
    assert data["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Prefer pytest" in data["hookSpecificOutput"]["additionalContext"]
    subprocess.run([LORE, "worker", "stop"], env={**os.environ, "LORE_HOME": str(lore_home)},
                   capture_output=True, timeout=30)  # the hook started one


def test_worker_records_a_correction_once(lore_home, tmp_path):
    from conftest import FakeEmbedder
    from lore.api import Lore

    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(x) + "\n" for x in [
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "I'll add Redis for the cache."}]}},
        {"type": "user", "message": {"role": "user", "content": "No, don't use Redis here"}},
    ]))
    payload = json.dumps({"session_id": "s1", "cwd": "/p", "transcript_path": str(transcript)})
    hook("stop", payload, lore_home)
    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        worker = Worker(settings, lore)
        [event] = list(worker.queue.take())
        worker.handle(event)
        worker.handle(event)  # at-least-once delivery: the second time changes nothing
        rows = lore.store.conn.execute("SELECT user_message, assistant_proposal, project "
                                 "FROM corrections").fetchall()
        assert [tuple(r) for r in rows] == [("No, don't use Redis here",
                                             "I'll add Redis for the cache.", "/p")]


def test_worker_records_edits_and_compaction_snapshots(lore_home, tmp_path):
    from conftest import FakeEmbedder
    from lore.api import Lore

    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(x) + "\n" for x in [
        {"type": "user", "message": {"role": "user", "content": "Refactor the parser"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "TodoWrite", "input": {"todos": [
                {"content": "split the lexer", "status": "in_progress"}]}}]}},
    ]))
    hook("post-tool-use", json.dumps({
        "session_id": "s1", "cwd": "/p", "tool_name": "MultiEdit",
        "tool_input": {"file_path": "/p/parse.py", "edits": [
            {"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}]}}),
        lore_home)
    hook("pre-compact", json.dumps({"session_id": "s1", "cwd": "/p", "trigger": "auto",
                                    "transcript_path": str(transcript)}), lore_home)
    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        worker = Worker(settings, lore)
        assert worker.run(once=True) == 2
        edits = lore.store.conn.execute("SELECT file_path, old_text, new_text, file_type "
                                  "FROM file_edits ORDER BY id").fetchall()
        assert [tuple(e) for e in edits] == [("/p/parse.py", "a", "b", "py"),
                                             ("/p/parse.py", "c", "d", "py")]
        [snap] = lore.store.conn.execute("SELECT data FROM snapshots").fetchall()
        data = json.loads(snap[0])
        assert data["current_tasks"][0]["content"] == "split the lexer"
        assert data["files_in_progress"] == ["/p/parse.py"]
        assert data["last_request"] == "Refactor the parser"


def test_events_queued_while_the_worker_is_down_survive_a_kill(lore_home, tmp_path):
    """kill -9 mid-run: unhandled events stay pending and are handled once on restart."""
    env = {**os.environ, "LORE_HOME": str(lore_home)}
    for i in range(30):
        hook("user-prompt-submit", json.dumps({"session_id": "s", "prompt": f"p{i}"}), lore_home)
    proc = subprocess.Popen([LORE, "worker", "run"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    proc.kill()  # SIGKILL: no clean-up at all
    proc.wait(timeout=10)
    q = Queue(lore_home / "queue")
    done_before = sum(1 for _ in open(q.done)) if q.done.exists() else 0
    # The event in hand at the kill may already be in done.jsonl and still pending.
    assert done_before + q.depth() in (30, 31)
    subprocess.run([LORE, "worker", "run", "--once"], env=env, check=True, capture_output=True,
                   timeout=60)
    handled = [json.loads(line)["payload"]["prompt"] for line in open(q.done)]
    assert q.depth() == 0 and sorted(set(handled)) == sorted(f"p{i}" for i in range(30))
    assert len(handled) <= 31  # at most the event in hand at the kill is seen twice


def test_prompt_hook_flags_a_correction_and_it_is_stored_once(lore_home, tmp_path):
    from conftest import FakeEmbedder
    from lore.api import Lore

    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "assistant", "message": {
        "role": "assistant", "content": [{"type": "text", "text": "I'll add Redis."}]}}) + "\n")
    base = {"session_id": "s1", "cwd": "/p", "transcript_path": str(transcript)}
    hook("user-prompt-submit", json.dumps({**base, "prompt": "No, don't use Redis here"}),
         lore_home)
    hook("user-prompt-submit", json.dumps({**base, "prompt": "Add a test please"}), lore_home)
    transcript.write_text(transcript.read_text() + json.dumps(
        {"type": "user", "message": {"role": "user", "content": "No, don't use Redis here"}}) + "\n")
    hook("stop", json.dumps(base), lore_home)  # the same correction, seen again at Stop
    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        Worker(settings, lore).run(once=True)
        rows = lore.store.conn.execute("SELECT user_message, assistant_proposal FROM corrections")
        assert [tuple(r) for r in rows] == [("No, don't use Redis here", "I'll add Redis.")]


def test_eval_corrections_on_a_small_labelled_file(run, tmp_path):
    rows = [
        {"id": "a", "text": "No, don't use Redis, use files instead", "label": "correction",
         "durable": True},
        {"id": "b", "text": "I prefer tabs over spaces in this repo", "label": "preference",
         "durable": True, "prev_agent": "I've set up the session store with Redis."},
        {"id": "c", "text": "No bugs found, thanks", "label": "none", "durable": False},
        {"id": "d", "text": "run the tests", "label": "none", "durable": False},
        {"id": "e", "text": "that is wrong, the port is 8080", "label": "none", "durable": False},
        {"id": "f", "text": "there are scripts for this in tools/", "label": "correction",
         "durable": False},
    ]
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = run("eval", "corrections", str(path), "--json", "--show-errors")
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert (result["precision"], result["recall"]) == (1.0, 0.667)
    assert result["messages"] == 6 and [e["id"] for e in result["errors"]] == ["f"]
    assert result["confusion"]["correction -> none"] == 1 and "messages_per_second" in result
    pre = json.loads(run("eval", "corrections", str(path), "--json", "--detector",
                         "prefilter").stdout)
    assert pre["recall"] >= result["recall"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x"}\n')
    failed = run("eval", "corrections", str(bad))
    assert failed.exit_code == 1 and "needs 'text' and a 'label'" in failed.stderr
