"""Hybrid recall: fusion, filters, usage stats, query safety, the vector stage."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.errors import InvalidInput
from lore.models import Filters
from lore.store import fts_query

NASTY = [
    'NEAR("a" "b")', '"unbalanced', "title:secret", "a AND OR NOT b", "*", "-x", "(((",
    "x' OR 1=1 --", "^start", "{col}: q", "😀 emoji", "", "   ", "AND", "NOT NOT", 'a"b"c',
    "a\x00b", "\\", "é ü ß 東京",
]


@pytest.mark.parametrize("text", NASTY)
def test_no_user_text_breaks_fts(fake_lore, text):
    fake_lore.lessons.add("Title with words", "content a b x start col q")
    fake_lore.search.query(text, track=False)  # must not raise
    fake_lore.search.query(text, mode="keyword", track=False)


def test_fts_query_quotes_every_term():
    assert fts_query('title:secret AND "x') == '"title" OR "secret" OR "x"'
    assert fts_query("how to fix the bug") == '"fix" OR "bug"'
    assert fts_query("the") == '"the"'  # only stop words: keep them
    assert fts_query("!!!") is None


def test_title_weighs_more_than_content(fake_lore):
    body = fake_lore.lessons.add("Unrelated heading", "here we mention websocket once")
    title = fake_lore.lessons.add("Websocket timeouts", "idle connections are dropped")
    hits = fake_lore.search.query("websocket", mode="keyword", track=False)
    assert [h.id for h in hits] == [title.id, body.id]


def test_rrf_score_parts_add_up(fake_lore):
    a = fake_lore.lessons.add("Nginx proxy timeout", "set proxy_read_timeout for websockets",
                             confidence="very-high")
    hits = fake_lore.search.query("nginx proxy timeout", track=False)
    p = hits[0].parts
    assert hits[0].id == a.id
    assert p.vector_rank == 1 and p.keyword_rank == 1
    k = 60
    assert p.rrf == pytest.approx(0.7 / (k + 1) + 0.3 / (k + 1))
    assert p.relevance == pytest.approx(1.0)
    assert p.confidence_bonus == pytest.approx(0.05)
    assert hits[0].score == pytest.approx(p.relevance + p.confidence_bonus + p.usage_bonus)


def test_usage_bonus_and_stats_follow_returned_results(fake_lore):
    a = fake_lore.lessons.add("Cache keys need the user id", "else users see each other")
    b = fake_lore.lessons.add("Cache invalidation on deploy", "flush on release")
    hits = fake_lore.search.query("cache user id", limit=1)
    assert [h.id for h in hits] == [a.id]
    assert fake_lore.lessons.get(a.id).usage_count == 1
    assert fake_lore.lessons.get(a.id).last_used is not None
    assert fake_lore.lessons.get(b.id).usage_count == 0  # candidate, but not returned
    fake_lore.search.query("cache user id", limit=1, track=False)
    assert fake_lore.lessons.get(a.id).usage_count == 1
    log = fake_lore.store.conn.execute("SELECT query, result_ids, interface FROM search_log").fetchall()
    assert len(log) == 1 and log[0][0] == "cache user id" and a.id in log[0][1]


def test_usage_bonus_is_capped(lore_home):
    s = make_settings(lore_home, tuning={"search.usage_saturation": 2})
    with Lore.open(s, embedder=FakeEmbedder()) as lore:
        lore.lessons.add("Retry with jitter", "backoff")
        for _ in range(5):
            lore.search.query("retry jitter")
        p = lore.search.query("retry jitter", track=False)[0].parts
        assert p.usage_bonus == pytest.approx(0.05)


def _seed(lore):
    ids = {}
    ids["global"] = lore.lessons.add("Run migrations before deploy", "deploy order matters",
                                    tags=["deploy"], confidence="high", source="tested").id
    ids["proj"] = lore.lessons.add("Deploy with the blue green script", "deploy via ./bg.sh",
                                  tags=["Deploy", "ops"], project="/srv/shop",
                                  confidence="low", source="hearsay", kind="project_rule").id
    ids["other"] = lore.lessons.add("Deploy docs site with netlify", "deploy on push",
                                   project="/srv/docs", tags=["docs"]).id
    ids["py"] = lore.lessons.add("Deploy python wheels", "deploy wheels to the index",
                                file_types=["py"], tags=["python"]).id
    ids["shared"] = lore.lessons.add("Never force push deploy branch", "deploy branch is shared",
                                    contexts=["shared team branch"],
                                    anti_contexts=["personal feature branch"]).id
    ids["personal"] = lore.lessons.add("Force push your own deploy branch freely",
                                      "deploy branch of your own", contexts=["personal feature branch"]).id
    ids["old"] = lore.lessons.add("Deploy by FTP", "deploy old way", status="superseded").id
    return ids


def _ids(hits):
    return {h.id for h in hits}


def test_filters_apply_before_ranking(fake_lore):
    ids = _seed(fake_lore)
    r = lambda **f: _ids(fake_lore.search.query("deploy", Filters(**f), limit=50, track=False))  # noqa: E731
    everything_active = {k for k in ids if k != "old"}
    assert r() == {ids[k] for k in everything_active}
    assert r(tags=("DEPLOY",)) == {ids["global"], ids["proj"]}
    assert r(kinds=("project_rule",)) == {ids["proj"]}
    assert r(sources=("tested",)) == {ids["global"]}
    assert r(min_confidence="high") == {ids["global"]}
    assert r(statuses=("superseded",)) == {ids["old"]}
    assert r(statuses=()) == {ids[k] for k in ids}
    # Scoping filters keep the scoped lessons and the unscoped ones.
    assert ids["proj"] in r(project="/srv/shop") and ids["other"] not in r(project="/srv/shop")
    assert ids["global"] in r(project="/srv/shop")
    assert ids["py"] in r(file_types=(".py",)) and ids["py"] not in r(file_types=("ts",))
    assert ids["global"] in r(file_types=("ts",))


def test_tag_filter_uses_aliases(lore_home):
    s = make_settings(lore_home, tag_aliases={"k8s": "kubernetes"})
    with Lore.open(s, embedder=FakeEmbedder()) as lore:
        a = lore.lessons.add("Pods restart", "liveness probe too strict", tags=["kubernetes"])
        assert _ids(lore.search.query("pods", Filters(tags=("K8s",)), track=False)) == {a.id}


def test_anti_context_excludes_by_default(fake_lore):
    ids = _seed(fake_lore)
    hits = _ids(fake_lore.search.query("force push deploy branch",
                                 Filters(contexts=("Personal  Feature Branch",)), limit=50,
                                 track=False))
    assert ids["personal"] in hits
    assert ids["shared"] not in hits  # anti-context matches: excluded
    assert ids["global"] in hits  # no contexts: applies everywhere


def test_anti_context_can_demote_instead(lore_home):
    s = make_settings(lore_home, search={"anti_context": "demote"},
                      tuning={"search.anti_context_factor": 0.25})
    with Lore.open(s, embedder=FakeEmbedder()) as lore:
        a = lore.lessons.add("Never force push", "force push rewrites history",
                            anti_contexts=["personal feature branch"])
        hits = lore.search.query("force push", Filters(contexts=("personal feature branch",)),
                           track=False)
        assert [h.id for h in hits] == [a.id]
        assert hits[0].parts.context_factor == 0.25
        assert hits[0].score == pytest.approx(hits[0].parts.total)


def test_invalid_filter_values_are_reported(fake_lore):
    with pytest.raises(InvalidInput, match="valid: very-low"):
        fake_lore.search.query("x", Filters(min_confidence="super"))
    with pytest.raises(InvalidInput, match="invalid source"):
        fake_lore.search.query("x", Filters(sources=("rumour",)))
    with pytest.raises(InvalidInput, match="invalid kind"):
        fake_lore.search.query("x", Filters(kinds=("nope",)))


def test_empty_database_and_no_match(fake_lore):
    assert fake_lore.search.query("anything") == []
    fake_lore.lessons.add("Alpha", "beta")
    assert fake_lore.search.query("zzzz qqqq", mode="keyword") == []


def _docs(n, seed=1):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)]
    return ([" ".join(rng.choice(words, 12)) for _ in range(n)],
            [" ".join(rng.choice(words, 4)) for _ in range(30)])


def test_sqlite_vec_path_agrees_with_the_memory_index(lore_home):
    """KNN in SQLite (int8, re-scored) must return what the exact in-memory scan returns."""
    docs, queries = _docs(400)
    memory = make_settings(lore_home, tuning={"search.vector_index": "memory"})
    sqlite = make_settings(lore_home, tuning={"search.vector_index": "sqlite-vec"})
    with Lore.open(memory, embedder=FakeEmbedder(dims=128)) as lore:
        for i, d in enumerate(docs):
            lore.lessons.add(f"doc {i}", d)
        want = [[h.id for h in lore.search.query(q, limit=10, mode="vector", track=False)]
                for q in queries]
    with Lore.open(sqlite, embedder=FakeEmbedder(dims=128)) as lore:
        got = [[h.id for h in lore.search.query(q, limit=10, mode="vector", track=False)]
               for q in queries]
        assert not lore.engine.vectors.loaded  # this path never loads the matrix
    overlap = np.mean([len(set(a) & set(b)) / max(len(a), 1) for a, b in zip(want, got, strict=True)])
    assert overlap >= 0.95


def test_memory_index_follows_writes_from_another_connection(settings):
    emb = FakeEmbedder()
    with Lore.open(settings, embedder=emb) as server, Lore.open(settings, embedder=emb) as cli:
        a = cli.lessons.add("alpha lesson", "first words")
        assert [h.id for h in server.search.query("alpha lesson", mode="vector", track=False)] == [a.id]
        assert server.engine.vectors.loaded
        b = cli.lessons.add("beta lesson", "second words")  # appended, not reloaded
        assert server.search.query("beta lesson", mode="vector", track=False)[0].id == b.id
        cli.lessons.update(a.id, title="gamma lesson")
        assert server.search.query("gamma lesson", mode="vector", track=False)[0].id == a.id
        cli.lessons.delete(b.id)
        hits = server.search.query("beta lesson", mode="vector", track=False)
        assert b.id not in [h.id for h in hits]
        assert server.engine.vectors.size == 1


@pytest.mark.parametrize("index", ["memory", "sqlite-vec"])
def test_selective_filter_still_finds_the_allowed_lesson(lore_home, index):
    s = make_settings(lore_home, tuning={"search.vector_index": index, "search.exact_below": 0})
    with Lore.open(s, embedder=FakeEmbedder()) as lore:
        for i in range(60):
            lore.lessons.add(f"generic lesson {i}", "common words everywhere")
        rare = lore.lessons.add("special lesson", "common words everywhere", tags=["rare"])
        hits = lore.search.query("common words", Filters(tags=("rare",)), mode="vector", track=False)
        assert [h.id for h in hits] == [rare.id]
        archived = lore.lessons.add("common words", "common words everywhere", status="archived")
        hits = lore.search.query("common words", mode="vector", limit=100, track=False)
        assert archived.id not in {h.id for h in hits} and len(hits) == 61


# ---- the real model: semantic claims ---------------------------------------------------

def test_paraphrase_found_by_meaning_not_keywords(lore):
    target = lore.lessons.add(
        "Use local file sessions instead of Redis",
        "The user rejected Redis for session storage; sessions are written to var/sessions.",
        kind="preference")
    lore.lessons.add("Pin the major version of numpy", "Floating dependency versions broke CI.")
    lore.lessons.add("Websocket idle timeout behind nginx", "Set proxy_read_timeout to 3600s.")
    query = "where should we keep login state between requests"
    assert lore.search.query(query, mode="keyword", track=False) == []
    hits = lore.search.query(query, track=False)
    assert hits and hits[0].id == target.id


def test_exact_identifier_found_by_keywords(lore):
    target = lore.lessons.add("psycopg OperationalError SSL SYSCALL EOF",
                             "Set keepalives_idle=30 on long-lived connections.")
    lore.lessons.add("Database connection pooling", "Use a pool per process.")
    hits = lore.search.query("SSL SYSCALL EOF", track=False)
    assert hits[0].id == target.id
    assert hits[0].parts.keyword_rank == 1


def test_a_busy_writer_does_not_fail_a_search(settings):
    """Another process holding the write lock delays statistics, never the search itself."""
    from lore.store.sqlite import connect
    from lore.store.sqlite import db as store_db

    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        a = lore.lessons.add("Lock test lesson", "body")
        other = connect(settings.db_path)
        other.execute("BEGIN IMMEDIATE")  # hold the write lock
        try:
            lore.store.conn.execute("PRAGMA busy_timeout = 50")
            original = store_db.LOCK_RETRIES
            store_db.LOCK_RETRIES = 1
            try:
                hits = lore.search.query("lock test")
            finally:
                store_db.LOCK_RETRIES = original
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert [h.id for h in hits] == [a.id]
        assert lore.lessons.get(a.id).usage_count == 0  # not counted, not failed
