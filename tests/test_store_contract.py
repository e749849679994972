"""The store protocol as a backend must keep it, through the protocol's methods only.

Parametrised by backend: an SQLite file and a schema on a real PostgreSQL server with
pgvector (the ``pg_url`` fixture); both must pass the same checks.
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
    for proto, impl in ((protocol.Store, store), (protocol.ConversationStore, store.conversations),
                        (protocol.CorrectionStore, store.corrections),
                        (protocol.SessionStore, store.sessions)):
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
