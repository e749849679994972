"""Secrets never at rest outside the redactor, and Lore's files private to their owner.

Every door (hooks and the queue, transcript ingest, lesson writes from any interface, import,
learning) is fed the same secrets; then every text column of the database, the queue files and
done.jsonl are searched for them. Modes: files 0600, folders 0700, on create and on upgrade.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FakeEmbedder
from lore import hooks
from lore.api import Lore
from lore.capture.queue import Queue
from lore.cli import cli
from lore.private import NOTICE_MARKER, home_notice
from lore.store.sqlite.migrations import MIGRATIONS

# Built from pieces so that no literal key-shaped string sits in the source.
AWS = "AKIA" + "Z7Q2M4XK9TBR3WPL"
DB_PASSWORD = "Pa55" + "word!x9"
PROSE_PASSWORD = "Tr0ub4dor" + "&3"
STAGING = "Hunter2" + "Staging!"
GITHUB = "ghp" + "_" + "R2d2C3p0L8k4M7n1B5v9X6z3Q0w4E8t2Y6u1"
SECRETS = (AWS, DB_PASSWORD, PROSE_PASSWORD, STAGING, GITHUB)
PROMPT = (f"No, use the password {PROSE_PASSWORD} for the staging box, not the default; "
          f"the staging db password is {STAGING} and DB_PASSWORD={DB_PASSWORD}, key {AWS}")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def leaked(conn, secrets: tuple[str, ...] | list[str] = SECRETS,
           holds: Callable[[str, str], bool] = lambda text, s: s in text) -> list[str]:
    """Every text cell of every table (FTS shadow tables included) that holds a secret."""
    found = []
    for (table,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'").fetchall():
        try:
            rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
        except Exception:  # noqa: BLE001 - virtual tables that cannot be scanned directly
            continue
        for row in rows:
            for cell in row:
                text = cell.decode("utf-8", "replace") if isinstance(cell, bytes) else str(cell)
                found += [f"{table}: {s}" for s in secrets if holds(text, s)]
    return found


def files_leaking(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file()
            and any(s in p.read_text(encoding="utf-8", errors="replace") for s in SECRETS)]


# ---- the hook path and the queue --------------------------------------------------------
def test_hook_queues_the_prompt_redacted_and_private(lore_home: Path, tmp_path: Path):
    line = {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": f"I used token={GITHUB} for the push."}]}}
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps(line) + "\n")
    payload = {"session_id": "s1", "transcript_path": str(transcript), "cwd": "/p",
               "prompt": PROMPT, "extra": {"tool_input": {"command": f"export KEY={AWS}"}}}
    hooks.run("user-prompt-submit", json.dumps(payload))
    queue = Queue(lore_home / "queue")
    [event] = list(queue.take())
    signals = event.payload["lore_signals"]
    assert signals["correction"] and "[REDACTED:password]" in signals["user_message"]
    assert event.payload["transcript_path"] == str(transcript)  # names are kept
    assert files_leaking(lore_home) == []
    for p in (lore_home, lore_home / "queue", lore_home / "queue" / "pending"):
        assert mode(p) == 0o700, p
    [pending] = list((lore_home / "queue" / "pending").iterdir())
    assert mode(pending) == 0o600
    queue.ack(event)
    assert mode(queue.done) == 0o600 and files_leaking(lore_home) == []
    queue.pending.joinpath("bad.json").write_text("{")
    list(queue.take())
    assert {mode(p) for p in queue.quarantine.iterdir()} == {0o600}
    assert mode(queue.quarantine) == 0o700


def test_hook_failure_log_is_private(lore_home: Path, monkeypatch):
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("[1, 2]"))
    assert hooks.main("stop") == 0
    log = lore_home / "logs" / "hooks.log"
    assert mode(log) == 0o600 and mode(log.parent) == 0o700


def test_a_home_lore_did_not_create_keeps_every_mode(lore_home: Path):
    """LORE_HOME pointed at an existing folder: a hook changes the mode of nothing in it (the
    user's files, folders, even a folder named like Lore's); only what Lore creates is 0600."""
    (lore_home / "projects" / "deep").mkdir(parents=True)
    (lore_home / "logs").mkdir()  # the user's own folder of that name
    theirs = [lore_home / "projects" / "notes.txt", lore_home / "projects" / "deep" / "run.sh",
              lore_home / "logs" / "app.log"]
    for p in theirs:
        p.write_text("mine")
    theirs[1].chmod(0o755)
    for d in (lore_home, lore_home / "projects", lore_home / "projects" / "deep",
              lore_home / "logs"):
        d.chmod(0o755)
    before = {p: mode(p) for p in [*theirs, *(p for p in lore_home.rglob("*") if p.is_dir()),
                                   lore_home]}
    hooks.run("session-end", json.dumps({"session_id": "s1", "reason": "exit"}))
    assert {p: mode(p) for p in before} == before
    [pending] = list((lore_home / "queue" / "pending").iterdir())
    assert mode(pending) == 0o600 and mode(lore_home / "queue") == 0o700


def test_database_files_are_private_and_an_old_one_is_tightened(settings):
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        lore.lessons.add("Use uv for environments", "uv is fast")
        db = settings.db_path
        assert mode(db) == 0o600 and mode(db.parent) == 0o700
        assert {mode(p) for p in db.parent.glob("lore.db-*")} == {0o600}
    db.chmod(0o644)
    settings.home.chmod(0o755)
    with Lore.open(settings, embedder=FakeEmbedder()):
        # Its own database is tightened; the home keeps the mode it was given.
        assert mode(db) == 0o600 and mode(settings.home) == 0o755


def test_a_home_others_can_read_is_pointed_out_once(settings):
    settings.home.mkdir(mode=0o700)
    assert home_notice(settings.home) is None  # private: nothing to say, nothing remembered
    assert not (settings.home / NOTICE_MARKER).exists()
    settings.home.chmod(0o755)
    said = home_notice(settings.home)
    assert said == (f"note: Lore's home {settings.home} can be read by other users (mode 0755); "
                    "the files Lore writes there are private (0600), but their names show: "
                    f"chmod 700 {settings.home} to hide them (said once)")
    assert home_notice(settings.home) is None and (settings.home / NOTICE_MARKER).exists()
    assert mode(settings.home) == 0o755


def test_the_notice_is_not_spent_where_nobody_reads_it(settings, capfd):
    """Off a terminal (a pipe, a log, an MCP client) nothing is printed and the one time is kept."""
    settings.home.mkdir(mode=0o755)
    settings.home.chmod(0o755)
    with Lore.open(settings, embedder=FakeEmbedder()):
        pass
    assert capfd.readouterr().err == "" and not (settings.home / NOTICE_MARKER).exists()


def test_export_and_config_written_by_lore_are_private(settings, tmp_path: Path):
    runner = CliRunner()
    obj = {"embedder": FakeEmbedder()}
    assert runner.invoke(cli, ["admin", "init"], obj=obj).exit_code == 0
    assert mode(settings.config_path) == 0o600
    out = tmp_path / "lessons.jsonl"
    res = runner.invoke(cli, ["admin", "export", "-o", str(out)], obj=obj)
    assert res.exit_code == 0, res.output
    assert mode(out) == 0o600


# ---- the other doors --------------------------------------------------------------------
def test_lesson_writes_from_any_interface_are_redacted(fake_lore):
    lesson = fake_lore.lessons.add(
        f"Staging db password is {STAGING}", f"connect with DB_PASSWORD={DB_PASSWORD}",
        evidence=[{"quote": PROMPT}], examples=[{"code": f"aws_key = '{AWS}'"}],
        preference={"preferred": f"token {GITHUB}"}, metadata={"note": f"password: {PROSE_PASSWORD}"})
    assert "[REDACTED:password]" in lesson.title
    fake_lore.lessons.update(lesson.id, content=f"now {GITHUB}")
    assert leaked(fake_lore.store.conn) == []
    assert fake_lore.store.conn.execute("SELECT count(*) FROM lessons_fts WHERE lessons_fts MATCH ?",
                                  ('"Hunter2Staging"',)).fetchone()[0] == 0


def test_import_is_redacted(fake_lore):
    line = json.dumps({"id": "01JD8X3Q5M4Z2Y7T6R1W0V9K8J", "title": f"key {AWS}",
                       "content": PROMPT, "evidence": [{"quote": f"password={DB_PASSWORD}"}]})
    report = fake_lore.lessons.import_lines([line])
    assert report.added == 1
    assert leaked(fake_lore.store.conn) == []


def test_a_correction_with_a_password_is_stored_without_it(fake_lore):
    out = fake_lore.learning.record(PROMPT, "I used the default password.", project="/p")
    assert out.lesson is not None
    assert leaked(fake_lore.store.conn) == []


def test_ingested_transcripts_are_redacted(fake_lore, tmp_path: Path):
    session = "11111111-2222-3333-4444-555555555555"
    def line(uuid: str, message: dict) -> str:
        return json.dumps({"type": message["role"], "uuid": uuid, "parentUuid": None,
                           "sessionId": session, "cwd": "/p", "timestamp": "2026-11-01T10:00:00Z",
                           "isSidechain": False, "message": message}) + "\n"
    folder = tmp_path / "projects" / "-p"
    folder.mkdir(parents=True)
    (folder / f"{session}.jsonl").write_text(
        line("u1", {"role": "user", "content": PROMPT})
        + line("a1", {"role": "assistant", "model": "m", "content": [
            {"type": "text", "text": f"Pushing with {GITHUB}"},
            {"type": "tool_use", "id": "t1", "name": "Bash",
             "input": {"command": f"AWS_ACCESS_KEY_ID={AWS} aws s3 ls"}}]}))
    report = fake_lore.conversations.ingest([tmp_path / "projects"], embed=False)
    assert report.messages == 2 and report.chunks >= 1
    assert leaked(fake_lore.store.conn) == []
    title = fake_lore.conversations.store.session(session)["title"]
    assert title.startswith("No, use the password [REDACTED:password]")


# ---- secrets stored by an older Lore ---------------------------------------------------
def test_migration_redacts_what_an_older_lore_stored(settings, monkeypatch):
    # Schema 5, plus the who-wrote-it columns every write of this release fills in.
    who = next(m for m in MIGRATIONS if m.__name__ == "m013_who_and_where")
    monkeypatch.setattr("lore.store.sqlite.migrations.MIGRATIONS", [*MIGRATIONS[:5], who])
    monkeypatch.setattr("lore.store.sqlite.migrations.SCHEMA_VERSION", 13)
    monkeypatch.setattr("lore.core.lessons.redact_value", lambda v: v)  # the old release stored as typed
    monkeypatch.setattr("lore.capture.ingest.redact", lambda v: v)
    monkeypatch.setattr("lore.capture.reading.redact", lambda v: v)
    monkeypatch.setattr("lore.capture.reading.redact_value", lambda v: v)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        lesson = lore.lessons.add(f"Staging db password is {STAGING}", f"DB_PASSWORD={DB_PASSWORD}",
                                 evidence=[{"quote": PROMPT}])
        old_hash = lesson.content_hash
        c = lore.store.conn
        c.execute("INSERT INTO corrections (event_id, session_id, project, user_message, at) "
                  "VALUES ('e1', 's1', '/p', ?, '2026-11-01')", (PROMPT,))
        c.execute("INSERT INTO corrections (event_id, session_id, project, user_message, at) "
                  "VALUES ('e2', 's1', '/p', ?, '2026-11-01')", (PROMPT.replace("Tr0", "Zz0"),))
        lore.conversations.add_turns("s1", "claude-code", "/p", [
            ("u1", "user", PROMPT, "2026-11-01T10:00:00Z"),
            ("a1", "assistant", f"pushed with {GITHUB}", "2026-11-01T10:00:01Z")])
        c.execute("INSERT INTO search_log (at, query) VALUES ('2026-11-01', ?)", (f"key {AWS}",))
        assert leaked(c)  # the old release kept them
        assert [r[0] for r in c.execute("SELECT rowid FROM lessons_fts WHERE lessons_fts MATCH ?",
                                        ('"Hunter2Staging"',))]
    monkeypatch.undo()
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        assert leaked(lore.store.conn) == []
        migrated = lore.lessons.get(lesson.id)
        assert migrated.title == "Staging db password is [REDACTED:password]"
        assert migrated.content_hash != old_hash  # the vector is stale: reembed picks it up
        assert lore.store.lessons_needing_vectors()
        assert [r[0] for r in lore.store.conn.execute(
            "SELECT rowid FROM lessons_fts WHERE lessons_fts MATCH ?", ('"Hunter2Staging"',))] == []
        assert [r[0] for r in lore.store.conn.execute(
            "SELECT rowid FROM lessons_fts WHERE lessons_fts MATCH 'staging'")]
        # two corrections that differ only in the secret are one once redacted
        assert lore.store.conn.execute("SELECT count(*) FROM corrections").fetchone()[0] == 1
        hits = lore.conversations.search("staging db password", limit=3)
        assert hits and all(STAGING not in json.dumps(h.to_dict()) for h in hits)


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_entry_point_sets_a_private_umask(umask: int, lore_home: Path, monkeypatch):
    from lore import entry

    old = os.umask(umask)
    try:
        monkeypatch.setattr("sys.argv", ["lore", "hook", "session-end"])
        monkeypatch.setattr("sys.stdin", __import__("io").StringIO("{}"))
        with pytest.raises(SystemExit):
            entry.main()
        assert os.umask(0o077) == 0o077
    finally:
        os.umask(old)


def test_a_redacted_edit_is_no_silent_fix_when_the_file_kept_it():
    """The agent's text is stored redacted; the file still holds the secret as written."""
    from lore.extract.silent import AgentWrite, check_write
    from lore.redact import redact

    written = f'DATABASE_URL = "postgres://app:{DB_PASSWORD}@db/app"\nTIMEOUT = 30\n'
    write = AgentWrite("/p/settings.py", "Write", None, redact(written))
    assert "[REDACTED:" in (write.new_text or "")
    assert check_write(write, written) is None
    fix = check_write(write, written.replace("TIMEOUT = 30", "TIMEOUT = 90"))
    assert fix is not None and DB_PASSWORD not in fix.user_text
