"""Session evidence in conversation search: the turns of the session that answers best come
forward together, without changing the order inside a session."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lore.errors import ConfigError
from lore.recall import conversations as recall
from lore.tuning import replace

AT = datetime(2026, 11, 2, tzinfo=UTC)
TS = "2026-11-01T10:00:00Z"


def sessions(lore) -> dict[str, int]:
    """Session B's one turn is stored first, so it wins a tie on the chunk id."""
    conv = lore.conversations
    conv.add_turns("b", "test", "/p", [("b1", "user", "the cache was flushed on friday", TS)],
                   per_turn=True)
    conv.add_turns("a", "test", "/p", [
        ("a1", "user", "the kafka consumer lag grew after the deploy", TS),
        ("a2", "assistant", "raising max.poll.interval fixed it", TS),
    ], per_turn=True)
    uuids = conv.first_uuids(list(range(1, 10)))
    return {uuid: cid for cid, uuid in uuids.items()}


def fused(lore, weight: float, keyword: list[tuple[int, float]]) -> list[recall.ConversationHit]:
    tuning = replace(recall.CONVERSATIONS, {"session_weight": weight})
    return recall.fuse(lore.conversations.store, tuning, "kafka lag", keyword, [], None,
                       limit=10, min_score=0.0, decay=False, mode="hybrid", at=AT)


def test_a_turn_of_the_best_session_outranks_an_equal_turn_elsewhere(lore):
    ids = sessions(lore)
    keyword = [(ids["a1"], -10.0), (ids["b1"], -5.0), (ids["a2"], -5.0)]
    flat = fused(lore, 0.0, keyword)
    assert [h.chunk_id for h in flat] == [ids["a1"], ids["b1"], ids["a2"]]
    assert all(h.parts["session_bonus"] == 0 for h in flat)
    pooled = fused(lore, 0.75, keyword)
    assert [h.chunk_id for h in pooled] == [ids["a1"], ids["a2"], ids["b1"]]
    bonus = {h.chunk_id: h.parts["session_bonus"] for h in pooled}
    assert bonus[ids["a1"]] == bonus[ids["a2"]] == pytest.approx(0.75)
    assert bonus[ids["b1"]] == pytest.approx(0.75 * 0.5)


def test_the_default_search_pools_sessions_and_explains_it(lore):
    sessions(lore)
    lore.conversations.embed_pending()
    hits = lore.conversations.search("kafka consumer lag", project="/p", now_=AT)
    assert hits[0].session_id == "a"
    assert hits[0].parts["session_bonus"] > 0
    assert hits[0].score >= hits[0].parts["relevance"] + hits[0].parts["session_bonus"]


def test_a_negative_session_weight_is_refused():
    with pytest.raises(ConfigError, match="session_weight must be at least 0"):
        replace(recall.CONVERSATIONS, {"session_weight": -0.1})


def test_best_per_session_keeps_the_best_and_never_goes_below_zero():
    best = recall.best_per_session({1: 0.4, 2: 0.9, 3: -0.2}, {1: "a", 2: "a", 3: "b"})
    assert best == {"a": 0.9, "b": 0.0}


def test_order_inside_a_session_never_changes(lore):
    """The session term adds the same to every turn of a session: inside it, turns keep the
    order of their own score (relevance and length)."""
    ids = sessions(lore)
    chunks = [ids["a1"], ids["a2"], ids["b1"]]

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.floats(min_value=0.01, max_value=50.0), min_size=3, max_size=3),
           st.floats(min_value=0.0, max_value=3.0))
    def check(bm25: list[float], weight: float) -> None:
        keyword = sorted(((cid, -b) for cid, b in zip(chunks, bm25, strict=True)),
                         key=lambda t: t[1])
        hits = fused(lore, weight, keyword)
        assert sorted(h.chunk_id for h in hits) == sorted(chunks)
        in_a = [h for h in hits if h.session_id == "a"]
        own = [h.parts["relevance"] + h.parts["length_bonus"] for h in in_a]
        assert own == sorted(own, reverse=True)
        for h in hits:
            assert h.parts["session_bonus"] == pytest.approx(
                weight * max(x.parts["relevance"] for x in hits if x.session_id == h.session_id),
                abs=1e-5)

    check()
