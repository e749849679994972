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
                        (protocol.SessionStore, store.sessions),
                        (protocol.AnalysisStore, store.analysis)):
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
