"""The store protocol as a backend must keep it, through the protocol's methods only.

Parametrised by backend location: SQLite today; a Postgres backend adds its URL here (or in
its own package's tests) and must pass the same checks.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lore.ids import new_id, now
from lore.models import Edge, Evidence, Filters
from lore.store import Store, open_store, protocol
from lore.store.protocol import LessonRow


@pytest.fixture(params=["sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    location = {"sqlite": str(tmp_path / "contract.db")}[request.param]
    s = open_store(location)
    yield s
    s.close()


def row(lesson_id: str, title: str, tags: tuple[str, ...] = ()) -> LessonRow:
    stamp = now()
    values: dict[str, Any] = {name: None for name in protocol.TEXT_FIELDS}
    values.update(title=title, content=f"{title} body", kind="learning", status="active",
                  confidence="medium", metadata="{}", created_at=stamp, updated_at=stamp,
                  content_hash=f"h-{title}")
    values.update({c: None for c in protocol.PREFERENCE_COLUMNS})
    return LessonRow(id=lesson_id, values=values, tags=tags, contexts=(), anti_contexts=(),
                     file_types=(), examples=(), trade_offs=(),
                     evidence=(Evidence(quote="the user said so"),))


def test_every_protocol_method_is_implemented(store):
    for proto, impl in ((protocol.Store, store), (protocol.ConversationStore, store.conversations),
                        (protocol.CorrectionStore, store.corrections),
                        (protocol.SessionStore, store.sessions), (protocol.AnalysisStore, store.analysis),
                        (protocol.SyncStore, store.sync)):
        for name, member in vars(proto).items():
            if name.startswith("_") or not callable(member):
                continue
            wanted = list(inspect.signature(member).parameters)[1:]
            got = list(inspect.signature(getattr(impl, name)).parameters)
            assert got == wanted, f"{type(impl).__name__}.{name}{got} != {wanted}"


def test_lessons_round_trip_index_and_delete(store):
    a, b = new_id(), new_id()
    with store.atomic():
        seq_a = store.insert(row(a, "Pin numpy", ("deps",)))
        store.insert(row(b, "Use uv", ("deps", "tools")))
    assert store.get(a).tags == ("deps",) and store.get(a).evidence[0].quote == "the user said so"
    assert store.count() == 2 and store.existing_ids([a, b, new_id()]) == {a, b}
    where, params = store.filter_sql(Filters(tags=("tools",)), anti_contexts_exclude=True)
    hits = store.keyword_search(['"uv"'], (1.0, 1.0, 1.0), 10, where, params, 1000)
    assert [store.brief([s])[s]["id"] for s, _ in hits] == [b]
    store.replace(seq_a, row(a, "Pin numpy below 2", ("deps",)))
    assert store.get(a).title == "Pin numpy below 2"
    assert dict(store.tag_counts())["deps"] == 2
    store.delete(b)
    assert store.count() == 1


def test_get_many_reads_whole_lessons_in_the_order_asked(store):
    ids = [new_id() for _ in range(3)]
    with store.atomic():
        for i, lid in enumerate(ids):
            store.insert(row(lid, f"Rule {i}", (f"t{i}",)))
    assert store.add_edge(Edge(ids[0], ids[1], "contradicts", now()))
    asked = [ids[2], new_id(), ids[0], ids[1]]
    got = store.get_many(asked)
    assert [x.id for x in got] == [ids[2], ids[0], ids[1]]  # an unknown id is left out
    assert got == [store.get(i) for i in (ids[2], ids[0], ids[1])]
    assert got[1].edges == got[2].edges == (store.edges_of(ids[0])[0],)
    assert store.edges_of_many([ids[1], ids[2]]) == {ids[1]: store.edges_of(ids[1])}
    assert store.get_many([]) == []


def test_a_failed_transaction_leaves_nothing_and_savepoints_nest(store):
    a = new_id()
    with pytest.raises(RuntimeError), store.atomic():
        store.insert(row(a, "Half written"))
        raise RuntimeError("boom")
    assert store.count() == 0
    with store.atomic():
        store.insert(row(a, "Kept"))
        with pytest.raises(RuntimeError), store.atomic():
            store.insert(row(new_id(), "Rolled back alone"))
            raise RuntimeError("inner")
    assert store.count() == 1


def test_vectors_edges_and_versions(store):
    a, b = new_id(), new_id()
    seq_a, seq_b = store.insert(row(a, "A")), store.insert(row(b, "B"))
    vec = np.ones(64, dtype=np.float32) / 8.0
    store.create_vector_index(64)
    before = store.vector_versions()[0]
    store.put_vectors([(seq_a, "h-A", vec.tobytes()), (seq_b, "h-B", vec.tobytes())])
    assert store.vector_versions()[0] > before and store.vector_count() == 2
    assert sorted(store.knn(vec.tobytes(), 2)) == sorted([seq_a, seq_b])
    assert store.add_edge(Edge(a, b, "supersedes", now()))
    assert [r[0] for r in store.walk(a, 1, [], "out")] == [b]
    assert store.remove_edges(a, b, None) == 1


def test_conversations_corrections_and_sessions(store):
    with store.atomic():
        store.conversations.upsert_session("s1", "claude-code", "/p", "dev", None, None, "t")
        seq = store.conversations.insert_message({
            "uuid": "u1", "session_id": "s1", "parent_uuid": None, "role": "user",
            "speaker": "user", "text": "no, use pnpm", "tool_calls": "[]", "timestamp": now(),
            "is_sidechain": 0, "agent_id": None, "is_meta": 0, "injected": 0})
    assert seq is not None and store.conversations.stats()["messages"] == 1
    cid = store.corrections.add_correction(event_id="e1", session_id="s1", project="/p",
                                           user_message="no, use pnpm", proposal=None, files=[],
                                           at=now(), origin="hook")
    assert cid is not None and store.corrections.pending(10)[0]["id"] == cid
    assert store.corrections.add_correction(event_id="e1", session_id="s1", project="/p",
                                            user_message="no, use pnpm", proposal=None, files=[],
                                            at=now(), origin="hook") is None
    assert store.sessions.insert_snapshot("e2", "s1", "/p", now(), {"trigger": "auto"})
    assert store.integrity() == "ok" and not store.read_only


def test_session_starts_keep_the_first_start_and_its_commit(store):
    sha = "a" * 40
    assert store.analysis.record_start("s1", "/p", "2026-01-01T10:00:00Z", sha, "main", "commit")
    assert not store.analysis.record_start("s1", "/p", "2026-01-01T11:00:00Z", "b" * 40, "main", "commit")
    assert store.analysis.record_start("s2", None, "2026-01-01T12:00:00Z")  # no commit recorded
    assert store.analysis.session_start("s1") == {
        "session_id": "s1", "project": "/p", "started_at": "2026-01-01T10:00:00Z",
        "start_commit": sha, "start_branch": "main", "start_git": "commit"}
    assert store.analysis.session_start("s2")["start_commit"] is None
    assert store.analysis.session_start("nope") is None
    assert store.analysis.started_at("s1") == "2026-01-01T10:00:00Z"
    assert store.analysis.run_summary("/p")["last_session_start"]["session_id"] == "s1"
    assert store.analysis.run_summary(None)["last_session_start"]["session_id"] == "s2"


def test_sync_change_log_cursors_dedup_origins_and_history(store):
    sync = store.sync
    a, b = new_id(), new_id()
    with store.atomic():
        store.insert(row(a, "Pin numpy"))
        store.insert(row(b, "Use uv"))
        store.replace(store.seq_of(a), row(a, "Pin numpy below 2"))
    changes = sync.lesson_changes_after(0, 10)
    assert [lid for _, lid in changes] == [a, b, a]
    assert [s for s, _ in changes] == sorted(s for s, _ in changes)  # a monotonic sequence
    assert sync.lesson_changes_after(changes[0][0], 1) == [changes[1]]
    assert sync.pending_count("lessons", changes[1][0]) == 1
    assert sync.stream_end("lessons") == changes[-1][0]
    with store.atomic():
        store.record_usage([a], now())  # usage is not a change to sync
    assert sync.stream_end("lessons") == changes[-1][0]

    store.conversations.upsert_session("s1", "claude-code", "/p", "laptop", None, None, "t")
    seq = store.conversations.insert_message({
        "uuid": "u1", "session_id": "s1", "parent_uuid": None, "role": "user", "speaker": "user",
        "text": "hello", "tool_calls": "[]", "timestamp": None, "is_sidechain": 0,
        "agent_id": None, "is_meta": 0, "injected": 0})
    store.conversations.insert_edit({"session_id": "s1", "message_uuid": "u1", "tool": "Edit",
                                     "file_path": "a.py", "file_type": "py", "old_text": "a",
                                     "new_text": "b", "timestamp": None, "succeeded": 1})
    store.corrections.add_correction(event_id="e1", session_id="s1", project="/p",
                                     user_message="no, use b", proposal=None, files=["a.py"],
                                     at=now(), origin="hook")
    assert [m["uuid"] for m in sync.messages_after(0, 10)] == ["u1"] and seq is not None
    assert sync.messages_after(seq, 10) == []
    assert [e["file_path"] for e in sync.edits_after(0, 10)] == ["a.py"]
    assert [c["event_id"] for c in sync.corrections_after(0, 10)] == ["e1"]
    assert [s["id"] for s in sync.sessions_of(["s1", "s1", "nope"])] == ["s1"]
    # A correction received from another device is stored once and never pushed on.
    other = {"event_id": "dev:e9", "session_id": None, "project": None, "user_message": "x",
             "assistant_proposal": None, "files": "[]", "at": now(), "origin": "hook",
             "message_uuid": None, "proposal_uuid": None, "diff": None, "correction_type": None,
             "device": "DEV"}
    assert sync.add_synced_corrections([other, other]) == 1
    assert sync.add_synced_corrections([other]) == 0
    assert sync.pending_count("corrections", 0) == 1

    assert sync.add_records("DEV", "b1", now(), [("message", "u1", "h1"), ("message", "u1", "h1"),
                                                 ("edit", "u1", "h1")]) == [True, False, True]
    assert sync.add_records("DEV", "b2", now(), [("message", "u1", "h1"),
                                                 ("message", "u1", "h2")]) == [False, True]
    assert sync.add_records("OTHER", "b2", now(), []) == []
    assert sync.record_count() == 3 and sync.record_count("DEV") == 3 and sync.record_count("X") == 0
    assert sync.batch("DEV", "b1") is None
    sync.add_batch("DEV", "b1", now(), 3, 2)
    assert sync.batch("DEV", "b1")["stored"] == 2  # type: ignore[index]

    assert sync.origins([a, b]) == {}
    sync.set_origin(a, "DEV", "2026-01-01T00:00:00.000Z")
    sync.set_origin(a, "DEV2", "2026-01-02T00:00:00.000Z")
    assert sync.origins([a, b]) == {a: ("DEV2", "2026-01-02T00:00:00.000Z")}
    sync.add_history({"lesson_id": a, "device": "DEV", "updated_at": "2026-01-01T00:00:00.000Z",
                      "at": now(), "outcome": "replaced", "winner_device": "DEV2",
                      "winner_updated_at": "2026-01-02T00:00:00.000Z", "data": {"title": "old"}})
    assert [(h["device"], h["data"]) for h in sync.history(a)] == [("DEV", {"title": "old"})]
    assert sync.history(b) == []


def test_schedule_runs_newest_first_with_their_summary(store):
    first = {"trigger": "schedule", "started_at": "2026-11-20T03:00:00.000Z",
             "finished_at": "2026-11-20T03:00:02.500Z", "duration_ms": 2500, "outcome": "ok",
             "summary": {"ingested": {"files": 3}, "rescored": 2}}
    store.analysis.record_schedule_run(first)
    store.analysis.record_schedule_run({"trigger": "api", "started_at": "2026-11-21T03:00:00.000Z",
                                        "outcome": "failed", "error": "the model cannot load"})
    runs = store.analysis.schedule_runs(5)
    assert [r["trigger"] for r in runs] == ["api", "schedule"]
    assert runs[0]["error"] == "the model cannot load" and runs[0]["summary"] == {}
    assert runs[1]["summary"] == first["summary"] and runs[1]["duration_ms"] == 2500
    assert len(store.analysis.schedule_runs(1)) == 1


def test_lesson_activity_is_learned_rules_created_or_reviewed_since(store):
    old, new, reviewed, plain = new_id(), new_id(), new_id(), new_id()
    learning = '{"learning": {"occurrences": 1}}'
    review = ('{"learning": {"review": {"action": "reject", "at": "2026-11-20T09:00:00.000Z", '
              '"reason": "one-off"}, "rejected_reason": "one-off"}}')
    for lid, title, created, updated, metadata in (
            (old, "old", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", learning),
            (new, "new", "2026-11-22T00:00:00.000Z", "2026-11-22T00:00:00.000Z", learning),
            (reviewed, "reviewed", "2026-01-02T00:00:00.000Z", "2026-11-20T09:00:00.000Z", review),
            (plain, "plain", "2026-11-22T10:00:00.000Z", "2026-11-22T10:00:00.000Z", "{}")):
        r = row(lid, title)
        r.values.update(created_at=created, updated_at=updated, metadata=metadata)
        r.values["project"] = "/p" if lid == plain else None
        store.insert(r)
    found = {a["id"]: a for a in store.analysis.lesson_activity("2026-11-01")}
    assert set(found) == {new, reviewed}
    assert found[reviewed]["review"]["action"] == "reject"
    assert found[reviewed]["rejected_reason"] == "one-off"
    assert found[new]["review"] is None
    added = {(a["day"], a["project"], a["count"]) for a in store.analysis.lessons_added("2026-11-01")}
    assert added == {("2026-11-22", None, 1), ("2026-11-22", "/p", 1)}


def test_chunk_vectors_backlog_pages_and_projects(store):
    conv = store.conversations
    ids = []
    with store.atomic():
        for n, project in enumerate(["/a", "/a", "/b"]):
            conv.upsert_session(f"s{n}", "claude-code", project, "dev", None, None, None)
            seq = conv.insert_message({
                "uuid": f"u{n}", "session_id": f"s{n}", "parent_uuid": None, "role": "user",
                "speaker": "user", "text": f"text {n}", "tool_calls": "[]", "timestamp": now(),
                "is_sidechain": 0, "agent_id": None, "is_meta": 0, "injected": 0})
            assert seq is not None
            cid = conv.insert_chunk(f"s{n}", project, [seq], None, None, "user", f"text {n}")
            conv.set_context(cid, [], [], "", f"hash-{n}")
            ids.append(cid)
    assert conv.vector_backlog() == 3 and conv.vector_total() == 0
    assert [r[0] for r in conv.chunks_needing_vectors(2)] == ids[:2]
    conv.put_vectors([(ids[0], "hash-0", b"\x00" * 8), (ids[1], "stale", b"\x01" * 8)])
    assert conv.vector_backlog() == 2 and conv.vector_total() == 2  # one missing, one stale
    assert [r[0] for r in conv.chunks_needing_vectors()] == ids[1:]
    assert conv.vectors_page(-1, 1) == [(ids[0], b"\x00" * 8)]
    assert conv.vectors_page(ids[0], 10) == [(ids[1], b"\x01" * 8)]
    assert conv.in_project(ids, "/a") == set(ids[:2]) and conv.in_project(ids, "/c") == set()
