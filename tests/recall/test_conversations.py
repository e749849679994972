"""Conversation memory: incremental import, dedup, rewritten files, scoping, decay, LoCoMo eval."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lore.errors import InvalidInput

SESSION = "11111111-2222-3333-4444-555555555555"


def record(uuid: str, role: str, text: str, *, parent: str | None = None,
           session: str = SESSION, cwd: str = "/work/shop", ts: str = "2026-11-01T10:00:00Z") -> str:
    message = ({"role": "user", "content": text} if role == "user" else
               {"role": "assistant", "model": "m", "content": [{"type": "text", "text": text}]})
    return json.dumps({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": session,
                       "cwd": cwd, "gitBranch": "main", "timestamp": ts, "version": "2.1.0",
                       "isSidechain": False, "message": message}) + "\n"


def transcript(folder: Path, name: str, lines: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(lines))
    return path


def test_import_is_incremental_and_idempotent(lore, tmp_path):
    project = tmp_path / "projects" / "-work-shop"
    path = transcript(project, f"{SESSION}.jsonl", [
        record("u1", "user", "The websocket drops after sixty seconds behind nginx"),
        record("a1", "assistant", "Set proxy_read_timeout to 3600s in the nginx location block",
               parent="u1"),
    ])
    conv = lore.conversations
    first = conv.ingest([tmp_path / "projects"])
    assert (first.files, first.messages, first.chunks) == (1, 2, 1)
    assert first.embedded == 1
    again = conv.ingest([tmp_path / "projects"])
    assert (again.unchanged, again.messages) == (1, 0)
    with path.open("a") as fh:  # the session goes on: only the new lines are read
        fh.write(record("u2", "user", "Also the redis cache never invalidates", parent="a1"))
    more = conv.ingest([tmp_path / "projects"])
    assert (more.files, more.messages, more.duplicates) == (1, 1, 0)
    stats = conv.store.stats()
    assert stats["messages"] == 3 and stats["sessions"] == 1
    session = conv.store.session(SESSION)
    assert session["project"] == "/work/shop" and session["git_branch"] == "main"
    assert session["message_count"] == 3 and session["device"]


def test_partial_last_line_is_read_later(lore, tmp_path):
    full = record("u2", "user", "second message about kafka consumer lag")
    path = transcript(tmp_path / "p", f"{SESSION}.jsonl",
                      [record("u1", "user", "first message"), full[:30]])
    conv = lore.conversations
    assert conv.ingest([path]).messages == 1
    with path.open("a") as fh:
        fh.write(full[30:])
    report = conv.ingest([path])
    assert report.messages == 1 and report.malformed == 0
    assert conv.store.stats()["messages"] == 2


def test_rewritten_file_is_read_again_without_duplicates(lore, tmp_path):
    path = transcript(tmp_path / "p", f"{SESSION}.jsonl",
                      [record("u1", "user", "alpha topic"), record("a1", "assistant", "beta answer")])
    conv = lore.conversations
    conv.ingest([path])
    path.write_text(record("u1", "user", "alpha topic") + record("x9", "user", "gamma new"))
    report = conv.ingest([path])
    assert report.rewritten == 1
    assert (report.messages, report.duplicates) == (1, 1)
    assert conv.store.stats()["messages"] == 3


def test_resumed_session_copies_are_stored_once(lore, tmp_path):
    folder = tmp_path / "p"
    old = "aaaaaaaa-0000-0000-0000-000000000000"
    new = "bbbbbbbb-0000-0000-0000-000000000000"
    transcript(folder, f"{old}.jsonl", [record("u1", "user", "why is the build slow", session=old),
                                        record("a1", "assistant", "webpack cache is off",
                                               session=old)])
    transcript(folder, f"{new}.jsonl", [record("u1", "user", "why is the build slow", session=old),
                                        record("a1", "assistant", "webpack cache is off",
                                               session=old),
                                        record("u3", "user", "turn it on then", session=new)])
    report = lore.conversations.ingest([folder])
    assert (report.messages, report.duplicates) == (3, 2)


def test_bad_inputs_are_reported_not_fatal(lore, tmp_path):
    folder = tmp_path / "p"
    transcript(folder, "empty.jsonl", [])
    (folder / "garbage.jsonl").write_bytes(b"\x00\xff\xfe binary \x89PNG\n{not json}\n")
    transcript(folder, "summary-only.jsonl", [json.dumps(
        {"type": "summary", "summary": "Fixing the flaky test", "leafUuid": "zz"}) + "\n"])
    report = lore.conversations.ingest([folder, tmp_path / "missing"])
    assert ("%s" % (tmp_path / "missing"), "no such file or folder") in report.skipped
    assert report.malformed >= 2
    assert report.messages <= 1  # the summary at most


def test_search_scopes_by_project_and_reads_context(lore, tmp_path):
    conv = lore.conversations
    conv.add_turns("s-shop", "test", "/work/shop", [
        ("m1", "user", "the payments API returns ECONNRESET under load", "2026-11-01T10:00:00Z"),
        ("m2", "assistant", "raise the keep-alive timeout of the pool", "2026-11-01T10:01:00Z"),
    ])
    conv.add_turns("s-blog", "test", "/work/blog", [
        ("m3", "user", "ECONNRESET when deploying the blog", "2026-11-01T10:00:00Z"),
    ])
    conv.embed_pending()
    hits = conv.search("ECONNRESET", project="/work/shop")
    assert {h.project for h in hits} == {"/work/shop"}
    everywhere = conv.search("ECONNRESET", project=None)
    assert {h.project for h in everywhere} == {"/work/shop", "/work/blog"}
    ctx = conv.turns(hits[0].chunk_id, before=1, after=1)
    assert [m["text"] for m in ctx["messages"]][0].startswith("the payments API")
    with pytest.raises(InvalidInput):
        conv.search("x", limit=0)


def test_memory_decay_favours_recent_conversations(lore):
    conv = lore.conversations
    conv.add_turns("old", "test", "/p", [("o1", "user", "we picked postgres for the queue",
                                           "2025-01-01T00:00:00Z")])
    conv.add_turns("new", "test", "/p", [("n1", "user", "we picked postgres for the queue",
                                           "2026-11-01T00:00:00Z")])
    conv.embed_pending()
    at = datetime(2026, 11, 2, tzinfo=UTC)
    ranked = conv.search("postgres queue", project="/p", now_=at)
    assert ranked[0].session_id == "new"
    assert ranked[0].parts["decay_bonus"] > ranked[1].parts["decay_bonus"]
    flat = conv.search("postgres queue", project="/p", now_=at, decay=False)
    assert all(h.parts["decay_bonus"] == 0 for h in flat)


def test_locomo_evaluation_on_a_tiny_file(run, tmp_path, lore_home):
    data = [{
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a greyhound called Pixel."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! I started pottery classes."},
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [
                {"speaker": "Ann", "dia_id": "D2:1", "text": "Pixel learned to sit this week."},
            ],
        },
        "qa": [
            {"question": "What is the name of Ann's dog?", "answer": "Pixel",
             "evidence": ["D1:1"], "category": 4},
            {"question": "What hobby did Bo start?", "answer": "pottery", "evidence": ["D1:2"],
             "category": 1},
            {"question": "Broken evidence", "answer": "x", "evidence": ["D9:9"], "category": 2},
        ],
    }]
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    out = run("eval", "locomo", str(path), "--json")
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["recall@5"] == 100.0 and result["recall@10"] == 100.0
    assert result["questions"] == 2 and result["dropped_evidence"] == 1
    assert set(result["baselines"]) == {"keyword", "vector"}
    assert set(result["categories"]) == {"single-hop", "multi-hop"}
    [(conversation, figures)] = result["conversations"].items()
    assert figures == {"recall@5": 100.0, "recall@10": 100.0, "questions": 2}
    assert conversation == data[0].get("sample_id", "conv")
    assert result["config"]["session_weight"] == 0.5 and result["config"]["decay"] is True
    # a measurement varies a constant by its name; a bad value is one line
    varied = run("eval", "--tune", "conversations.session_weight=0", "locomo", str(path), "--json")
    assert varied.exit_code == 0 and json.loads(varied.stdout)["config"]["session_weight"] == 0.0
    wrong = run("eval", "--tune", "conversations.session_weight=much", "locomo", str(path))
    assert wrong.exit_code == 1 and wrong.stderr.strip().splitlines() == [
        "Error: tuning: conversations.session_weight must be a number (got 'much')"]
    assert run("eval", "--tune", "nokey", "locomo", str(path)).exit_code == 2
    shown = run("eval", "locomo", str(path))
    assert "conversation" in shown.output and conversation in shown.output
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    failed = run("eval", "locomo", str(bad))
    assert failed.exit_code == 1 and "not in the LoCoMo format" in failed.stderr


def test_ingest_and_search_from_the_command_line(run, tmp_path):
    folder = tmp_path / "projects" / "-work-shop"
    transcript(folder, f"{SESSION}.jsonl", [
        record("u1", "user", "migrations fail on the CI database with a lock timeout"),
        record("a1", "assistant", "run them with lock_timeout set and retry", parent="u1"),
    ])
    out = run("ingest", str(tmp_path / "projects"), "--json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["messages"] == 2
    found = run("recall", "conversations", "lock timeout in CI", "--project", "all", "--json")
    hits = json.loads(found.stdout)["results"]
    assert hits and hits[0]["session_id"] == SESSION and hits[0]["project"] == "/work/shop"
    turns = run("recall", "show", str(hits[0]["chunk_id"]), "--json")
    assert json.loads(turns.stdout)["messages"][0]["text"].startswith("migrations fail")
    missing = run("ingest", str(tmp_path / "nope"))
    assert missing.exit_code == 1 and "no such file or folder" in missing.stderr


def test_watch_imports_files_as_they_change(tmp_path, lore_home):
    import os
    import subprocess
    import sys
    import time

    lore_bin = str(Path(sys.executable).parent / "lore")
    folder = tmp_path / "projects" / "-work-shop"
    path = transcript(folder, f"{SESSION}.jsonl", [record("u1", "user", "first line")])
    env = {**os.environ, "LORE_HOME": str(lore_home)}
    proc = subprocess.Popen([lore_bin, "ingest", "--watch", "--no-embed", str(tmp_path / "projects")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2.5)  # initial import and the watcher's start
        with path.open("a") as fh:
            fh.write(record("u2", "user", "a zebra crossing appeared in the logs", parent="u1"))
        deadline = time.time() + 20
        found = []
        while time.time() < deadline and not found:
            time.sleep(0.5)
            out = subprocess.run([lore_bin, "recall", "conversations", "zebra crossing",
                                  "--project", "all", "--mode", "keyword", "--json"],
                                 env=env, capture_output=True, text=True)
            if out.returncode == 0:
                found = json.loads(out.stdout)["results"]
        assert found, "the watcher did not import the appended line"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_project_without_conversations_searches_every_project_and_says_so(run, tmp_path,
                                                                             monkeypatch):
    source = transcript(tmp_path / "t", "a.jsonl", [
        record("u1", "user", "the websocket drops behind nginx after sixty seconds"),
        record("a1", "assistant", "Raise proxy_read_timeout in the nginx site.", parent="u1")])
    assert run("ingest", str(source)).exit_code == 0
    here = tmp_path / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    res = run("recall", "conversations", "websocket nginx timeout")
    assert res.exit_code == 0
    assert "no past conversations of" in res.output and "every project" in res.output
    assert "proxy_read_timeout" in res.output or "websocket" in res.output
    data = json.loads(run("recall", "conversations", "websocket nginx", "--json").output)
    assert data["no_conversations_in"] == str(here.resolve()) and data["results"]
    # A project that has conversations, none of them matching: no fallback.
    monkeypatch.chdir(tmp_path)
    inside = json.loads(run("recall", "conversations", "websocket", "--project", "/work/shop",
                            "--json").output)
    assert "no_conversations_in" not in inside and inside["project"] == "/work/shop"
