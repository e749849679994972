"""The store protocol as a backend must keep it, through the protocol's methods only.

Parametrised by backend: an SQLite file and a schema on a real PostgreSQL server with
pgvector (the ``pg_url`` fixture); both must pass the same checks.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lore.errors import InvalidInput, NotFound
from lore.ids import new_id, now
from lore.models import CodeExample, Edge, Evidence, Filters, TradeOff
from lore.store import Store, open_store, protocol, rows
from lore.store.protocol import LessonRow
from tables import history


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "contract.db")
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(location: str) -> Iterator[Store]:
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
    for proto, impl in ((protocol.Store, store), (protocol.LessonStore, store),
                        (protocol.CopyStore, store),
                        (protocol.ConversationStore, store.conversations),
                        (protocol.CorrectionStore, store.corrections),
                        (protocol.SessionStore, store.sessions),
                        (protocol.AnalysisStore, store.analysis),
                        (protocol.SyncStore, store.sync),
                        (protocol.TokenStore, store.tokens),
                        (protocol.GuardStore, store.guards)):
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
    hits = store.keyword_search(['"uv"'], (1.0, 1.0, 1.0), 10, Filters(tags=("tools",)), 1000,
                                anti_contexts_exclude=True)
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
    assert got[1].edges == got[2].edges and got[0].edges == ()  # both ends hold the edge
    assert [(e.from_id, e.to_id, e.relation) for e in got[1].edges] == [
        (ids[0], ids[1], "contradicts")]
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
    with store.atomic():
        store.record_usage([a], now())  # usage is not a change to sync
    assert sync.lesson_changes_after(changes[-1][0], 10) == []

    store.conversations.upsert_session("s1", "claude-code", "/p", "laptop", None, None, "t")
    seq = store.conversations.insert_message({
        "uuid": "u1", "session_id": "s1", "parent_uuid": None, "role": "user", "speaker": "user",
        "text": "hello", "tool_calls": "[]", "timestamp": None, "is_sidechain": 0,
        "agent_id": None, "is_meta": 0, "injected": 0})
    store.conversations.insert_edit({"session_id": "s1", "message_uuid": "u1", "tool": "Edit",
                                     "file_path": "a.py", "file_type": "py", "old_text": "a",
                                     "new_text": "b", "timestamp": None, "succeeded": 1})
    store.set_identity("ann", "HERE")  # a local capture is stamped with this home's device
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
    assert [c["event_id"] for c in sync.corrections_after(0, 10)] == ["e1"]  # stamped, still ours
    assert {c["event_id"]: c["device"] for c in store.corrections.list_corrections(
        None, 10, all_projects=True)} == {"e1": "HERE", "dev:e9": "DEV"}

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
    assert [(h["device"], h["data"]) for h in history(store, a)] == [("DEV", {"title": "old"})]
    assert history(store, b) == []


def test_pending_lessons_are_counted_once_each_and_only_when_written_here(store):
    """What `lore sync --status` shows: one per changed lesson, not per change; a version sync
    wrote here (its origin) is not pushed back, a later local edit is; a lesson deleted here is
    one deletion to push, one whose deletion sync brought is not."""
    store.set_identity("ana", "DEV-1")
    sync = store.sync
    mine, pulled, gone, elsewhere = new_id(), new_id(), new_id(), new_id()
    with store.atomic():
        for lid in (mine, pulled, gone, elsewhere):
            store.insert(row(lid, f"Lesson {lid[-4:]}"))
        store.replace(store.seq_of(mine), row(mine, "Edited twice"))
    assert sync.pending_count("lessons", 0) == 4
    with store.atomic():
        sync.set_origin(pulled, "OTHER", store.get(pulled).updated_at)  # as a pull leaves it
        store.delete(gone)
        store.delete(elsewhere)  # as a pulled deletion leaves it: deleted, the tombstone theirs
        sync.record_deletion(elsewhere, "2026-01-01T00:00:00.000Z", "OTHER")
    assert sync.pending_count("lessons", 0) == 2  # mine, and the deletion of gone
    assert sync.deletions([gone, elsewhere, mine])[gone][1] == "DEV-1"
    assert sync.deletions([elsewhere])[elsewhere] == ("2026-01-01T00:00:00.000Z", "OTHER")
    end = sync.lesson_changes_after(0, 100)[-1][0]
    assert sync.pending_count("lessons", end) == 0
    edited = row(pulled, "Edited here after the pull")
    edited.values["updated_at"] = "2999-01-01T00:00:00.000Z"
    with store.atomic():
        store.replace(store.seq_of(pulled), edited)
    assert sync.pending_count("lessons", end) == 1 and sync.pending_count("lessons", 0) == 3


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

    # Dropping every vector (a model change) is a reset: caches and index files start again.
    version = conv.vector_versions()[0]
    conv.drop_vectors()
    assert conv.vector_total() == 0 and conv.vector_backlog() == 3
    assert conv.vector_versions() == (version + 1, version + 1)
    assert conv.vectors_since(-1) == []

    # The backend's own nearest-neighbour search: pgvector on Postgres; none on SQLite, where
    # the index file beside the database (or an exact scan) answers instead.
    unit = [np.array(v, dtype=np.float32).tobytes() for v in ([1, 0], [0.6, 0.8], [0, 1])]
    conv.put_vectors([(cid, f"hash-{n}", unit[n]) for n, cid in enumerate(ids)])
    got = conv.nearest(unit[0], 2, None)
    if "://" not in store.location:
        assert got is None
        return
    assert [c for c, _ in got] == ids[:2]
    assert got[0][1] == pytest.approx(1.0) and got[1][1] == pytest.approx(0.6)
    assert [c for c, _ in conv.nearest(unit[0], 5, "/b")] == [ids[2]]
    assert conv.nearest(unit[0], 5, "/none") == []


# ---- the whole protocol, group by group --------------------------------------------------
def fill(store: Store) -> dict[str, Any]:
    """Rows in every table a copy carries, written through the protocol only."""
    a, b, c = new_id(), new_id(), new_id()
    rng = np.random.default_rng(7)
    with store.atomic():
        seqs = [store.insert(row(a, "Pin numpy below 2", ("deps", "python"))),
                store.insert(row(b, "Use uv for installs", ("deps", "tools"))),
                store.insert(LessonRow(
                    id=c, values={**row(c, "Sessions in files").values, "kind": "preference",
                                  "source": "correction", "pref_rejected": "Redis",
                                  "pref_preferred": "files",
                                  "metadata": '{"learning": {"occurrences": 3}}'},
                    tags=("web",), contexts=("flask",), anti_contexts=("django",),
                    file_types=("py",), examples=(CodeExample(code="x = 1", language="python"),),
                    trade_offs=(TradeOff(type="pro", description="simple"),),
                    evidence=(Evidence(quote="no, files", session_id="s1", context="Redis?"),)))]
    store.create_vector_index(64)
    vecs = rng.standard_normal((3, 64)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store.put_vectors([(s, f"h{i}", vecs[i].tobytes()) for i, s in enumerate(seqs)])
    store.add_edge(Edge(a, b, "related_to", now()))
    store.merge_tag("tools", "tooling")
    store.record_usage([a, a, b], now())
    store.log_search(now(), "numpy pin", {"tags": []}, [a], 1.5, "cli")
    conv = store.conversations
    with store.atomic():
        conv.upsert_session("s1", "claude-code", "/p", "dev", "main", "/t/s1.jsonl", "first")
        m1 = conv.insert_message({
            "uuid": "u1", "session_id": "s1", "parent_uuid": None, "role": "user",
            "speaker": "user", "text": "please use pnpm for the build", "tool_calls": "[]",
            "timestamp": "2025-03-01T10:00:00Z", "is_sidechain": 0, "agent_id": None,
            "is_meta": 0, "injected": 0})
        m2 = conv.insert_message({
            "uuid": "u2", "session_id": "s1", "parent_uuid": "u1", "role": "assistant",
            "speaker": "assistant", "text": "switching the build to pnpm", "tool_calls": "[]",
            "timestamp": "2025-03-01T10:01:00Z", "is_sidechain": False, "agent_id": None,
            "is_meta": 0, "injected": 0})
        assert m1 is not None and m2 is not None
        chunk = conv.insert_chunk("s1", "/p", [m1, m2], "2025-03-01T10:00:00Z",
                                  "2025-03-01T10:01:00Z", "user assistant",
                                  "user: please use pnpm for the build\nassistant: switching")
        conv.set_context(chunk, [], ["later turn"], "march 2025 saturday", "ch1")
        conv.refresh_session("s1")
        conv.insert_edit({"session_id": "s1", "message_uuid": "u2", "tool": "Edit",
                          "file_path": "/p/build.sh", "file_type": "sh", "old_text": "npm",
                          "new_text": "pnpm", "timestamp": "2025-03-01T10:01:00Z",
                          "succeeded": 1})
        conv.save_file_state(protocol.FileState("/t/s1.jsonl", "claude-code", 100, 100, "hh",
                                                "tt"), now(), 2, 0, 0)
    conv.put_vectors([(chunk, "ch1", vecs[0].tobytes())])
    cid = store.corrections.add_correction(
        event_id="e1", session_id="s1", project="/p", user_message="no, use files",
        proposal="I'll add Redis", files=["/p/app.py"], at="2025-03-01T10:02:00Z", origin="hook")
    assert cid is not None
    store.corrections.set_verdict(cid, status="extracted", label="preference",
                                  correction_type="explicit", durable=True, probability=0.9,
                                  cues=["no,"], lesson_id=c, action="created")
    store.sessions.insert_snapshot("e2", "s1", "/p", now(), {"trigger": "auto"})
    store.sessions.insert_context_load("e3", "s1", "/p", now(),
                                       {"shown": [a], "dropped": [b], "chars": 10})
    store.analysis.record_start("s1", "/p", "2025-03-01T09:59:00Z", "c" * 40, "main", "commit")
    store.analysis.record_schedule_run({"trigger": "schedule", "started_at": now(),
                                        "finished_at": now(), "duration_ms": 5, "outcome": "ok",
                                        "summary": {"analysed": 1}})
    sync = store.sync
    sync.add_synced_corrections([{
        "event_id": "dev:e5", "session_id": None, "project": "/q", "user_message": "not that",
        "assistant_proposal": None, "files": "[]", "at": now(), "origin": "hook",
        "message_uuid": None, "proposal_uuid": None, "diff": None, "correction_type": None,
        "device": "DEV"}])
    sync.add_records("DEV", "b1", now(), [("lesson", b, "h1")])
    sync.add_batch("DEV", "b1", now(), 1, 1)
    sync.set_origin(b, "DEV", "2025-03-01T10:00:00.000Z")
    sync.add_history({"lesson_id": b, "device": "DEV2", "updated_at": "2025-02-01T00:00:00.000Z",
                      "at": now(), "outcome": "replaced", "winner_device": "DEV",
                      "winner_updated_at": "2025-03-01T10:00:00.000Z", "data": {"title": "x"}})
    store.analysis.record_run({"event_id": "e4", "at": now(), "trigger": "command",
                               "session_id": "s1", "project": "/p", "outcome": "analysed",
                               "reason": "", "lesson_ids": [a], "created": 1})
    store.tokens.insert_token({"id": "t1", "name": "ci", "scope": "read", "salt": "s",
                               "secret_hash": "h", "created_at": now()})
    return {"ids": (a, b, c), "seqs": seqs, "chunk": chunk, "correction": cid, "vecs": vecs}


def test_lesson_reads_filters_and_reference_values(store):
    got = fill(store)
    a, b, c = got["ids"]
    sa, sb, sc = got["seqs"]
    assert store.meta("app") == "lore" and store.meta("nope") is None
    store.set_meta("k", "v1")
    store.set_meta("k", "v2")
    assert store.meta("k") == "v2"
    store.delete_meta("k")
    assert store.meta("k") is None
    assert [i.name for i in store.reference("confidence")][0] == "very-low"
    assert {"correction", "manual"} <= {i.name for i in store.reference("source")}
    assert "preference" in {i.name for i in store.reference("kind")}
    with pytest.raises(InvalidInput):
        store.check_reference("kind", "nonsense")
    assert store.confidence_for_score(0.72) == "high" and store.max_confidence_ordinal() == 5
    assert store.seq_of(a) == sa and store.titles([a, c])[c] == ("Sessions in files", "preference")
    with pytest.raises(NotFound):
        store.seq_of(new_id())
    lesson = store.get(c)
    assert lesson.contexts == ("flask",) and lesson.anti_contexts == ("django",)
    assert lesson.examples[0].code == "x = 1" and lesson.trade_offs[0].type == "pro"
    assert lesson.preference is not None and lesson.preference.preferred == "files"
    assert [x.id for x in store.iter_lessons()] == [a, b, c]
    scoped = Filters(contexts=("django",), file_types=("py",))
    allowed = store.allowed_seqs(scoped, anti_contexts_exclude=True)
    assert c not in {store.brief([s])[s]["id"] for s in allowed} and len(allowed) == 2
    both = Filters(contexts=("flask", "django"))
    assert sc in store.allowed_seqs(both)  # an anti-context: demoted by ranking, not left out
    assert sc not in store.allowed_seqs(both, anti_contexts_exclude=True)
    assert store.seqs_matching([sa, sb, sc], scoped, anti_contexts_exclude=True) == set(allowed)
    assert store.seqs_matching([sa, sb, sc], Filters(min_confidence="medium", project="/p")) \
        == {sa, sb, sc}
    assert store.seqs_matching([sa, sb, sc], Filters(statuses=("rejected",))) == set()
    assert store.anti_context_hits([sa, sc], ["django"]) == {sc}
    assert store.contents([sa])[sa] == "Pin numpy below 2 body"
    assert store.brief([sa])[sa]["ordinal"] == 3
    everything = Filters(statuses=())
    hits = store.keyword_search(['"numpy"', '"installs"'], (3.0, 2.0, 1.0), 10, everything, 1000)
    assert {s for s, _ in hits} == {sa, sb}
    titled = store.keyword_search(['"files"'], (3.0, 2.0, 1.0), 10, everything, 1000)
    assert titled[0][0] == sc  # a title hit ranks first


def test_vectors_graph_tags_usage_and_statistics(store):
    got = fill(store)
    a, b, c = got["ids"]
    sa, sb, sc = got["seqs"]
    vecs = got["vecs"]
    assert store.has_vector_index() and store.vector_count() == 3
    assert store.knn(vecs[2].tobytes(), 1) == [sc]
    assert dict(store.vectors_for([sb]))[sb] == vecs[1].tobytes()
    assert [s for s, _ in store.vectors_since(0)] == [sa, sb, sc]
    version = store.vector_versions()[0]
    assert store.vectors_since(version) == []
    assert [t[0] for t in store.lessons_needing_vectors()] == [sa, sb, sc]  # hashes differ
    assert [(e.from_id, e.to_id) for e in store.neighbours([b], [])] == [(a, b)]
    assert store.add_edge(Edge(b, c, "supersedes", now())) and not store.add_edge(
        Edge(b, c, "supersedes", now()))
    assert [(r[0], r[1]) for r in store.walk(a, 2, [], "out")] == [(b, 1), (c, 2)]
    assert [r[0] for r in store.walk(c, 2, ["supersedes"], "in")] == [b]
    assert store.tag_aliases() == {"tools": "tooling"}
    assert dict(store.tag_counts()) == {"deps": 2, "python": 1, "tooling": 1, "web": 1}
    assert store.most_used(5)[0] == (a, "Pin numpy below 2", 2)
    store.merge_usage(sb, 7, "2999-01-01T00:00:00Z")
    assert store.get(b).usage_count == 7 and store.get(b).last_used == "2999-01-01T00:00:00Z"
    assert store.top_queries(3) == [("numpy pin", 1)]
    counts = store.lesson_counts()
    assert counts["kind"] == {"learning": 2, "preference": 1} and set(counts) == {
        "kind", "status", "confidence", "project", "source"}
    assert sum(counts["status"].values()) == sum(counts["source"].values()) == 3
    assert store.edge_count() == 2 and store.search_count() == 1
    store.drop_vectors()
    assert store.vector_count() == 0 and store.vector_versions()[1] > 0
    assert store.size_bytes() > 0 and store.schema_version() >= 13


def test_conversation_tables(store):
    got = fill(store)
    conv, chunk = store.conversations, got["chunk"]
    assert conv.file_state("/t/s1.jsonl").offset == 100
    assert conv.session("s1")["message_count"] == 2
    assert conv.session("s1")["speakers"] in ("user assistant", "assistant user")
    assert conv.stats()["chunks"] == 1 and conv.chunk_ids("/p") == [chunk]
    assert conv.scope_speakers("/p") and conv.chunks_needing_vectors() == []
    assert conv.chunk_first_uuids([chunk]) == {chunk: "u1"}
    assert conv.chunk_rows([chunk])[chunk]["agent"] == "claude-code"
    # for ranking: words (spaces and line breaks + 1) and the last 16 characters
    assert conv.chunk_meta([chunk]) == {chunk: ("2025-03-01T10:01:00Z", "user assistant", "s1", 9,
                                                "stant: switching")}
    assert [m["uuid"] for m in conv.neighbours(chunk, 1, 1)] == ["u1", "u2"]
    assert conv.turns_around("s1", 2, 2, 1) == (["please use pnpm for the build"], [])
    assert [r["id"] for r in conv.chunks_to_contextualise("s1", chunk, 2)] == [chunk]
    assert conv.keyword_search(['"pnpm"'], (1.0, 0.0, 0.5, 0.5), 5, "/p", 1000)[0][0] == chunk
    assert conv.keyword_search(['"march"'], (1.0, 0.0, 0.5, 0.5), 5, None, 1000)[0][0] == chunk
    assert conv.keyword_search(['"pnpm"'], (1.0, 0.0, 0.5, 0.5), 5, "/other", 1000) == []
    assert [i for i, _ in conv.vectors_since(0)] == [chunk] and conv.vector_versions()[0] == 1
    assert dict(conv.vectors_for([chunk]))[chunk] == got["vecs"][0].tobytes()
    assert conv.insert_message({
        "uuid": "u1", "session_id": "s1", "parent_uuid": None, "role": "user", "speaker": "user",
        "text": "again", "tool_calls": "[]", "timestamp": None, "is_sidechain": 0,
        "agent_id": None, "is_meta": 0, "injected": 0}) is None
    assert conv.stats() == {"sessions": 1, "messages": 2, "chunks": 1, "file_edits": 1, "files": 1}


def test_an_imported_session_is_removed_whole(store):
    got = fill(store)
    conv, chunk = store.conversations, got["chunk"]
    assert conv.sessions_of(project="/p") == [("s1", "first")]
    assert conv.sessions_of(source_file="/t/s1.jsonl") == [("s1", "first")]
    version = conv.vector_versions()[0]
    assert conv.delete_sessions(["s1", "no-such"]) == 2
    assert conv.session("s1") is None and conv.sessions_of(project="/p") == []
    assert conv.keyword_search(['"pnpm"'], (1.0, 0.0, 0.5, 0.5), 5, None, 1000) == []
    assert conv.vectors_for([chunk]) == [] and conv.file_state("/t/s1.jsonl") is None
    assert conv.stats() == {"sessions": 0, "messages": 0, "chunks": 0, "file_edits": 0, "files": 0}
    # Copies of the vectors in memory are read again.
    assert conv.vector_versions() == (version + 1, version + 1)
    assert conv.delete_sessions([]) == 0


def test_unsettled_messages_of_sessions_are_dropped(store):
    cor = store.corrections
    with store.atomic():
        ids = [cor.add_correction(event_id=f"e{n}", session_id=sid, project="/p", user_message=f"m{n}",
                                  proposal=None, files=(), at="2026-01-01", origin="hook")
               for n, sid in enumerate(["own", "own", "own", "user"])]
        cor.set_judge_attempt(ids[1], "unjudged", "unanswered 3: left out")
        cor.set_verdict(ids[2], status="learned", label="correction", correction_type=None,
                        durable=True, probability=0.9, cues=(), lesson_id=None, action="created")
        assert cor.drop_unsettled(["own", "nobody"]) == 2
    assert [cor.correction(i) is not None for i in ids] == [False, False, True, True]
    assert cor.unjudged() == (0, None)


def test_corrections_sessions_analysis_and_tokens(store):
    got = fill(store)
    a, b, c = got["ids"]
    corr, cid = store.corrections, got["correction"]
    assert corr.correction(cid)["label"] == "preference" and corr.pending(5) == []
    assert [r["id"] for r in corr.list_corrections("/p", 5)] == [cid]
    assert corr.list_corrections(None, 5) == []
    assert [r["id"] for r in corr.list_corrections(None, 5, all_projects=True,
                                                   labels=["preference"])] == [cid]
    assert [r["id"] for r in corr.rule_candidates("/p")] == [c]
    assert corr.learned_rule_ids() == [c]
    assert corr.preferences("/p", all_projects=False, file_type="py", statuses=["active"],
                            limit=5) == [c]
    edits = corr.unchecked_edits(session_id="s1")
    assert [e["file_path"] for e in edits] == ["/p/build.sh"]
    corr.mark_edits_checked([edits[0]["id"]], now())
    assert corr.unchecked_edits(project="/p") == []
    assert corr.message("u1")["project"] == "/p"
    assert [r["lesson_id"] for r in corr.learned_corrections()] == [c]
    assert [s["id"] for s in corr.session_spans()] == ["s1"]
    assert corr.sessions_mentioning("PNPM") == {"s1"}
    ses = store.sessions
    rules = ses.rules_and_preferences("/p", 10, "active", min_seen=3)
    assert [r["id"] for r in rules] == [c]
    assert ses.rules_and_preferences("/p", 10, "active", min_seen=4) == []
    assert [r["id"] for r in ses.other_lessons("/p", 10)] == [a, b] or \
        {r["id"] for r in ses.other_lessons("/p", 10)} == {a, b}
    assert ses.session_files("s1") == ["/p/build.sh"]
    assert not ses.insert_snapshot("e2", "s1", "/p", now(), {})
    assert ses.context_loads("s1", 5)[0]["shown"] == [a]
    assert not ses.insert_context_load("e3", "s1", "/p", now(), {})
    an = store.analysis
    assert not an.record_start("s1", "/p", now()) and an.started_at("s1") == "2025-03-01T09:59:00Z"
    assert an.session_corrections("s1") == [("no, use files", None)]
    assert an.has_run("e4") and not an.has_run("e5")
    assert an.record_run({"event_id": "e4", "at": now(), "trigger": "command", "outcome": "skipped",
                   "reason": "again"}) == 0  # the same event: stored once
    summary = an.run_summary("/p")
    assert summary["sessions_seen"] == 1 and summary["outcomes"] == {"analysed": 1}
    assert summary["last_run"]["lesson_ids"] == [a] and summary["created"] == 1
    assert an.learned_by_kind(("correction",), None) == {"preference": {"active": 1}}
    tok = store.tokens
    assert tok.token("t1")["scope"] == "read" and [t["id"] for t in tok.list_tokens()] == ["t1"]
    tok.touch_token("t1", "2025-01-01")
    assert tok.revoke_token("t1", now()) and not tok.revoke_token("t1", now())


def test_who_wrote_it_and_who_may_find_it(location):
    mine = open_store(location)
    mine.set_identity("ana", "laptop-1")
    theirs = open_store(location)
    theirs.set_identity("ben", "desk-2")
    try:
        learned, shared = new_id(), new_id()
        mine.insert(LessonRow(id=learned, values={**row(learned, "Ana's rule").values,
                                                  "source": "correction"},
                              tags=(), contexts=(), anti_contexts=(), file_types=(), examples=(),
                              trade_offs=(), evidence=()))
        mine.insert(row(shared, "Team rule"))
        mine.add_edge(Edge(learned, shared, "related_to", now()))
        for s, sees in ((mine, {learned, shared}), (theirs, {shared})):
            assert {s.brief([q])[q]["id"] for q in s.allowed_seqs(Filters())} == sees
            assert {r["id"] for r in s.sessions.other_lessons(None, 10)} == sees
        with pytest.raises(InvalidInput):
            mine.set_visibility(learned, "everyone")
        with pytest.raises(NotFound):
            mine.set_visibility(new_id(), "team")
        mine.set_visibility(learned, "team")
        assert len(theirs.allowed_seqs(Filters())) == 2
        cid = theirs.corrections.add_correction(event_id="e9", session_id=None, project=None,
                                                user_message="no", proposal=None, files=[],
                                                at=now(), origin="manual")
        assert cid is not None
        rows = {t: list(mine.export_rows(t, 100))[0] for t in ("lessons", "corrections")}
        cols = {t: mine.copy_columns(t) for t in rows}
        by = {r[cols["lessons"].index("id")]: r for r in rows["lessons"]}
        assert by[learned][cols["lessons"].index("author")] == "ana"
        assert by[learned][cols["lessons"].index("device")] == "laptop-1"
        assert by[shared][cols["lessons"].index("visibility")] == "team"
        assert rows["corrections"][0][cols["corrections"].index("author")] == "ben"
    finally:
        mine.close()
        theirs.close()


def test_every_read_that_returns_lessons_leaves_out_another_users_personal_ones(location):
    """One condition in the store: rule lookups (preferences, `lore apply`), id checks and the
    graph never hand ben what ana keeps personal; ana and a store without a user see all."""
    stores = {name: open_store(location) for name in ("ana", "ben", "nobody")}
    stores["ana"].set_identity("ana", "laptop-1")
    stores["ben"].set_identity("ben", "desk-2")
    mine, hub, far = new_id(), new_id(), new_id()
    try:
        ana = stores["ana"]
        with ana.atomic():
            for lid, title, source in ((mine, "Ana's rule", "correction"), (hub, "Team hub", None),
                                       (far, "Beyond Ana's rule", None)):
                values = {**row(lid, title).values, "kind": "preference", "source": source}
                ana.insert(LessonRow(id=lid, values=values, tags=(), contexts=(),
                                     anti_contexts=(), file_types=(), examples=(),
                                     trade_offs=(), evidence=()))
            ana.add_edge(Edge(hub, mine, "related_to", now()))
            ana.add_edge(Edge(mine, far, "related_to", now()))
        everything = {mine, hub, far}
        for name, sees in (("ana", everything), ("ben", {hub, far}), ("nobody", everything)):
            s = stores[name]
            assert s.visible_ids([mine, hub, far, new_id()]) == sees, name
            assert set(s.corrections.preferences(None, all_projects=True, file_type=None,
                                                 statuses=("active",), limit=10)) == sees, name
            walked = {(r[0], r[1], r[3]) for r in s.walk(far, 3, [], "both")}
            # hub is reached from far only through mine
            assert walked == ({(mine, 1, "in"), (hub, 2, "in")} if mine in sees else set()), name
            edges = {(e.from_id, e.to_id) for e in s.neighbours([hub, mine, far], [])}
            assert edges == ({(hub, mine), (mine, far)} if mine in sees else set()), name
    finally:
        for s in stores.values():
            s.close()


def conforms(value: Any, hint: Any) -> bool:
    """Whether a value read from a backend is of the type a row's TypedDict declares."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin in (types.UnionType, typing.Union):
        return any(conforms(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if typing.is_typeddict(hint):
        return isinstance(value, dict) and not problems(value, hint)
    if origin is not None:  # list[str], dict[str, Any], set[str]
        return isinstance(value, origin)
    if hint in (int, float) and isinstance(value, bool):
        return False
    if hint is float:
        return isinstance(value, (int, float))
    return isinstance(value, hint)


def problems(row: Any, shape: Any) -> list[str]:
    """How ``row`` differs from ``shape`` (a TypedDict): missing or extra keys, wrong types."""
    hints = typing.get_type_hints(shape)
    out = [f"missing {k}" for k in sorted(shape.__required_keys__ - set(row))]
    out += [f"unexpected {k}" for k in sorted(set(row) - set(hints))]
    out += [f"{k}={row[k]!r} is not {hints[k]}" for k in sorted(set(row) & set(hints))
            if not conforms(row[k], hints[k])]
    return out


def test_every_row_a_backend_returns_is_of_its_declared_type(store):
    """The typed rows of ``lore.store.rows`` are what each backend really returns: the keys
    each query yields and the types of their values (mypy trusts the store on both)."""
    got = fill(store)
    a, b, c = got["ids"]
    chunk, cid = got["chunk"], got["correction"]
    conv = store.conversations
    with store.atomic():
        conv.insert_message({
            "uuid": "u3", "session_id": "s1", "parent_uuid": "u2", "role": "assistant",
            "speaker": "assistant", "text": "running it", "timestamp": "2025-03-01T10:03:00Z",
            "tool_calls": '[{"id": "t", "name": "Bash", "input": {"command": "pnpm i"}}]',
            "is_sidechain": 0, "agent_id": None, "is_meta": 0, "injected": 0})
        conv.upsert_session("s2", "claude-code", "/p", "dev", None, None, None)
        conv.insert_edit({"session_id": "s2", "message_uuid": "u9", "tool": "Write",
                          "file_path": "/p/x.py", "file_type": "py", "old_text": None,
                          "new_text": "x = 1", "timestamp": "2025-03-02T10:00:00Z",
                          "succeeded": None})
        store.guards.insert_check({
            "id": "k1", "lesson_id": c, "command": "^redis", "path": None, "content": None,
            "tool": None, "mode": "block", "status": "active", "origin": "user", "note": "",
            "created_at": now(), "updated_at": now(), "reviewed_at": None})
        store.guards.add_events([{
            "event_id": "ev1:k1", "check_id": "k1", "lesson_id": c, "session_id": "s1",
            "project": "/p", "at": now(), "tool": "Bash", "outcome": "blocked",
            "matched": "redis-server"}])
    summary = store.analysis.run_summary("/p")
    reads: list[tuple[str, Any, list[Any]]] = [
        ("brief", rows.LessonBrief, list(store.brief(got["seqs"]).values())),
        ("chunks_to_contextualise", rows.ChunkToContextualise,
         conv.chunks_to_contextualise("s1", chunk, 2)),
        ("chunk_rows", rows.ChunkRow, list(conv.chunk_rows([chunk]).values())),
        ("neighbours", rows.NeighbourTurn, conv.neighbours(chunk, 1, 1)),
        ("session", rows.SessionRow, [conv.session("s1")]),
        ("correction", rows.Correction, [store.corrections.correction(cid)]),
        ("list_corrections", rows.Correction,
         store.corrections.list_corrections(None, 5, all_projects=True)),
        ("rule_candidates", rows.RuleCandidate, store.corrections.rule_candidates("/p")),
        ("unchecked_edits", rows.UncheckedEdit, store.corrections.unchecked_edits()),
        ("message", rows.ImportedMessage, [store.corrections.message("u1")]),
        ("learned_corrections", rows.LearnedCorrection,
         store.corrections.learned_corrections()),
        ("session_spans", rows.SessionSpan, store.corrections.session_spans()),
        ("rules_and_preferences", rows.ContextRule,
         store.sessions.rules_and_preferences("/p", 10)),
        ("other_lessons", rows.OtherLesson, store.sessions.other_lessons("/p", 10)),
        ("context_loads", rows.ContextLoad, store.sessions.context_loads("s1", 5)),
        ("session_start", rows.SessionStart, [store.analysis.session_start("s1")]),
        ("run_summary", rows.RunSummary, [summary]),
        ("last_run", rows.AnalysisRun, [summary["last_run"]]),
        ("lesson_activity", rows.LessonActivity,
         store.analysis.lesson_activity("2000-01-01T00:00:00")),
        ("lessons_added", rows.LessonsAdded, store.analysis.lessons_added("2000-01-01")),
        ("schedule_runs", rows.ScheduleRun, store.analysis.schedule_runs(5)),
        ("token", rows.Token, [store.tokens.token("t1")]),
        ("list_tokens", rows.Token, store.tokens.list_tokens()),
        ("corrections_after", rows.OwnCorrection, store.sync.corrections_after(0, 10)),
        ("messages_after", rows.PushedMessage, store.sync.messages_after(0, 10)),
        ("edits_after", rows.PushedEdit, store.sync.edits_after(0, 10)),
        ("sessions_of", rows.SessionRecord, store.sync.sessions_of(["s1", "s2"])),
        ("batch", rows.Batch, [store.sync.batch("DEV", "b1")]),
        ("check", rows.Check, [store.guards.check("k1")]),
        ("checks", rows.Check, store.guards.checks()),
        ("events", rows.CheckEvent, store.guards.events()),
        ("tool_calls", rows.ToolCallTurn, store.guards.tool_calls(None, None)),
        ("turns_after", rows.LaterTurn, store.guards.turns_after("s1", 0, 5)),
        ("hook_edits", rows.HookEdit, store.guards.hook_edits(None, None)),
        ("loaded_sessions", rows.LoadedSession, store.guards.loaded_sessions()),
    ]
    for name, shape, found in reads:
        assert found and all(r is not None for r in found), f"{name} read nothing"
        for r in found:
            assert not problems(r, shape), f"{name} ({shape.__name__}): {problems(r, shape)}"
    assert a in {r["id"] for r in store.sessions.other_lessons("/p", 10)}


def test_a_row_of_another_shape_is_told_apart():
    """The check above can fail: a missing key, an extra one and a wrong type are named."""
    good = {"id": "x", "title": "t", "kind": "learning"}
    assert problems(good, rows.OtherLesson) == []
    assert problems({"id": "x", "title": "t"}, rows.OtherLesson) == ["missing kind"]
    assert problems({**good, "seq": 1}, rows.OtherLesson) == ["unexpected seq"]
    assert problems({**good, "title": None}, rows.OtherLesson) == [
        "title=None is not <class 'str'>"]
    assert problems({"seq": True, "role": "user", "text": "", "is_meta": 0, "injected": 0},
                    rows.LaterTurn) == ["seq=True is not <class 'int'>"]


def test_ids_are_found_by_their_start(store):
    a, b = "01JD8X3Q5M0000000000000001", "01JD8X3Q5M0000000000000002"
    c = "01JD9Z0000000000000000000Z"
    with store.atomic():
        for lid in (a, b, c):
            store.insert(row(lid, f"Rule {lid[-1]}"))
    assert store.ids_with_prefix("01JD8X", 5) == [a, b]
    assert store.ids_with_prefix("01JD9Z") == [c]
    assert store.ids_with_prefix(c) == [c] and store.ids_with_prefix("01JD7") == []
    assert store.ids_with_prefix("01JD", 1) == [a]
    assert store.guards.check_ids_with_prefix("01JD8X") == []
