"""The length prior and the question penalty of conversation search: a chunk of a few words
("Thanks!") gains less than one that says something, past the cap a longer chunk gains nothing
more, and a chunk that ends by asking ranks below one that answers."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lore.recall import conversations as recall
from lore.store.sqlite import conversations as sqlconv
from lore.tuning import replace

TUNING = recall.CONVERSATIONS

AT = datetime(2026, 11, 2, tzinfo=UTC)
TS = "2026-11-01T10:00:00Z"
SHORT = "pizza, yes!"
LONG = ("we ordered pizza for the whole team after the release went out on friday night and "
        "everyone stayed to watch the dashboards")
PASTED = " ".join(["pizza"] + [f"line{i}" for i in range(400)])


def store_turns(lore) -> dict[str, int]:
    """Three sessions of one turn each; the short turn is stored first, so it wins ties."""
    conv = lore.conversations
    for name, text in (("short", SHORT), ("long", LONG), ("pasted", PASTED)):
        conv.add_turns(name, "test", "/p", [(name, "user", text, TS)], per_turn=True)
    return {uuid: cid for cid, uuid in conv.first_uuids(list(range(1, 10))).items()}


def fused(lore, keyword: list[tuple[int, float]], mode: str = "hybrid",
          vector: list[tuple[int, float]] | None = None) -> list[recall.ConversationHit]:
    tuning = replace(TUNING, {"session_weight": 0.0})
    return recall.fuse(lore.conversations.store, tuning, "pizza", keyword, vector or [], None,
                       limit=10, min_score=0.0, decay=False, mode=mode, at=AT)


def test_the_prior_grows_with_the_words_up_to_the_cap():
    assert recall.length_prior(0) == 0.0
    assert recall.length_prior(3) == pytest.approx(TUNING.length_weight * math.log(4))
    cap = TUNING.length_cap_words
    assert recall.length_prior(cap) == recall.length_prior(cap + 1) == recall.length_prior(10**6)
    assert recall.length_prior(-5) == 0.0  # never negative, whatever the store says


@given(st.integers(min_value=-10, max_value=10**5), st.integers(min_value=-10, max_value=10**5))
def test_the_prior_is_bounded_and_never_favours_the_shorter(a: int, b: int):
    lo, hi = sorted((a, b))
    assert 0.0 <= recall.length_prior(lo) <= recall.length_prior(hi)
    assert recall.length_prior(hi) <= TUNING.length_weight * math.log1p(TUNING.length_cap_words)


def test_the_store_counts_words_as_the_prior_reads_them(lore):
    """Spaces and line breaks + 1; a text of LONG_BYTES or more counts as LONG_WORDS unread."""
    conv = lore.conversations
    ids = store_turns(lore)
    lines = "first line of output\nsecond line\n third"
    conv.add_turns("lines", "test", "/p", [("lines", "assistant", lines, TS)], per_turn=True)
    ids.update({uuid: cid for cid, uuid in conv.first_uuids(list(range(1, 10))).items()})
    meta = conv.store.chunk_meta(list(ids.values()))
    words = {uuid: meta[cid][3] for uuid, cid in ids.items()}
    assert len(PASTED.encode()) >= sqlconv.LONG_BYTES > len(LONG.encode())
    assert words == {"short": 2, "long": len(LONG.split()), "pasted": sqlconv.LONG_WORDS,
                     "lines": 8}
    assert sqlconv.LONG_WORDS >= TUNING.length_cap_words  # a long text gets the full prior


def test_an_equal_match_in_a_longer_turn_ranks_first_and_says_why(lore):
    ids = store_turns(lore)
    keyword = [(ids["short"], -4.0), (ids["long"], -4.0)]
    hits = fused(lore, keyword)
    assert [h.chunk_id for h in hits] == [ids["long"], ids["short"]]
    bonus = {h.chunk_id: h.parts["length_bonus"] for h in hits}
    assert bonus[ids["long"]] == pytest.approx(recall.length_prior(len(LONG.split())), abs=1e-6)
    assert bonus[ids["short"]] == pytest.approx(recall.length_prior(2), abs=1e-6)
    for h in hits:
        assert h.score == pytest.approx(h.parts["relevance"] + h.parts["length_bonus"], abs=1e-6)


def test_a_pasted_log_gains_no_more_than_a_turn_at_the_cap(lore):
    ids = store_turns(lore)
    long_words = len(LONG.split())
    assert long_words < TUNING.length_cap_words < 401
    hits = fused(lore, [(ids["long"], -4.0), (ids["pasted"], -4.0)])
    bonus = {h.chunk_id: h.parts["length_bonus"] for h in hits}
    assert bonus[ids["pasted"]] == pytest.approx(
        recall.length_prior(TUNING.length_cap_words), abs=1e-6)
    # a match better by more than the difference of their priors still wins over a longer one
    gap = recall.length_prior(TUNING.length_cap_words) - recall.length_prior(long_words)
    hits = fused(lore, [(ids["long"], -8.0), (ids["pasted"], -2.0)])  # relevance 1 and 0.25
    assert 0.75 > gap and hits[0].chunk_id == ids["long"]


@pytest.mark.parametrize("mode", ["keyword", "vector"])
def test_a_single_retriever_ranks_by_its_own_score_alone(lore, mode):
    ids = store_turns(lore)
    keyword = [(ids["short"], -4.0), (ids["long"], -4.0)] if mode == "keyword" else []
    vector = [(ids["short"], 0.5), (ids["long"], 0.5)] if mode == "vector" else []
    hits = fused(lore, keyword, mode, vector)
    assert [h.chunk_id for h in hits] == [ids["short"], ids["long"]]  # the tie: stored first
    assert all(h.parts["length_bonus"] == 0 for h in hits)


def test_the_search_explains_the_prior(lore):
    store_turns(lore)
    lore.conversations.embed_pending()
    hits = lore.conversations.search("pizza", project="/p", now_=AT, limit=3)
    assert {h.session_id for h in hits} == {"short", "long", "pasted"}
    assert all(h.parts["length_bonus"] > 0 for h in hits)
    assert all(h.score >= h.parts["relevance"] + h.parts["length_bonus"] - 1e-6 for h in hits)


@pytest.mark.parametrize(("tail", "expected"), [
    ("How was the trip?", True), ('did you say "why?"', True), ("(really?)\n\n", True),
    ("It was great, thanks.", False), ("what? no, it was fine", False), ("", False),
])
def test_a_chunk_asks_when_its_text_ends_with_a_question_mark(tail: str, expected: bool):
    assert recall.asks(tail) is expected


def test_a_turn_that_only_asks_ranks_below_the_one_that_answers(lore):
    conv = lore.conversations
    conv.add_turns("q", "test", "/p", [
        ("ask", "user", "Which database did we pick for the queue in the end?", TS),
        ("answer", "assistant", "We picked the database Postgres for the queue in the end.", TS),
    ], per_turn=True)
    ids = {uuid: cid for cid, uuid in conv.first_uuids(list(range(1, 10))).items()}
    meta = conv.store.chunk_meta([ids["ask"], ids["answer"]])
    assert recall.asks(meta[ids["ask"]][4]) and not recall.asks(meta[ids["answer"]][4])
    keyword = [(ids["ask"], -5.0), (ids["answer"], -4.5)]  # the question matches better
    hits = fused(lore, keyword)
    assert [h.chunk_id for h in hits] == [ids["answer"], ids["ask"]]
    penalty = {h.chunk_id: h.parts["question_penalty"] for h in hits}
    assert penalty == {ids["ask"]: TUNING.question_penalty, ids["answer"]: 0.0}
    for mode in ("keyword", "vector"):  # one retriever alone ranks by its own score
        single = fused(lore, keyword if mode == "keyword" else [], mode,
                       [(ids["ask"], 0.6), (ids["answer"], 0.5)] if mode == "vector" else None)
        assert single[0].chunk_id == ids["ask"]
        assert all(h.parts["question_penalty"] == 0 for h in single)


def test_a_long_chunk_is_not_judged_by_its_end(lore):
    conv = lore.conversations
    text = PASTED + " so shall we ship it?"
    conv.add_turns("big", "test", "/p", [("big", "assistant", text, TS)], per_turn=True)
    cid = next(c for c, u in conv.first_uuids(list(range(1, 10))).items() if u == "big")
    words, tail = conv.store.chunk_meta([cid])[cid][3:]
    assert (words, tail) == (sqlconv.LONG_WORDS, "")
    hits = fused(lore, [(cid, -1.0)])
    assert hits[0].parts["question_penalty"] == 0.0


@given(st.text(max_size=40), st.text(alphabet=" \t\n)\"'", max_size=5))
def test_asking_is_read_past_closing_characters_only(text: str, closing: str):
    assert recall.asks(text + "?" + closing)
    assert not recall.asks(text + "?." + closing)
