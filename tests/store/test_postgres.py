"""Lore on a real PostgreSQL server with pgvector (the ``pg_url`` fixture): the CLI end to
end, the web API, the SessionStart hook, concurrent writers, the same search results as
SQLite with the real model, and whole-database copies in both directions."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_store_contract import fill, row

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.ids import new_id, now
from lore.models import Filters
from lore.store import open_store
from lore.store.postgres.migrations import SCHEMA_VERSION
from lore.store.protocol import COPY_TABLES


def with_password(url: str) -> str:
    """The same server with a password in the URL (trust authentication ignores it)."""
    return url.replace("postgres:@", "postgres:s3cret-pw@", 1)


def test_cli_end_to_end_with_a_database_url(run, pg_url, monkeypatch):
    url = with_password(pg_url)
    monkeypatch.setenv("LORE_DATABASE_URL", url)
    added = run("learn", "add", "Use pnpm, not npm", "The monorepo's lockfile is pnpm's; npm "
                "rewrites it.", "--tag", "build", "--kind", "project_rule")
    assert added.exit_code == 0, added.output
    lesson_id = added.stdout.strip()
    found = json.loads(run("search", "installing node packages in the monorepo",
                           "--json").stdout)
    assert found["results"][0]["id"] == lesson_id
    assert json.loads(run("recall", "show", lesson_id, "--json").stdout)["tags"] == ["build"]
    run("learn", "correction", "don't do that again", "--global",
        "--previous", "I rewrote the whole module.")
    [item] = json.loads(run("review", "--json").stdout)["waiting"]
    assert json.loads(run("review", "reject", item["id"], "--reason", "a one-off",
                          "--json").stdout)["status"] == "rejected"
    shown = run("config", "--json").stdout
    stats = run("stats", "--counts", "--json").stdout
    doctor = run("doctor")
    for text in (shown, stats, doctor.stdout + doctor.stderr):
        assert "s3cret-pw" not in text
    assert "postgres:***@" in json.loads(shown)["database"]
    assert json.loads(stats)["lessons"] == 2
    assert "postgres driver" in doctor.stdout and "2 lessons" in doctor.stdout
    # The lesson is in Postgres, not in a file of the home.
    assert not (Path(run("config", "--path").stdout.strip()).parent / "lore.db").exists()


def test_the_web_api_and_the_session_start_hook_read_postgres(pg_url, lore_home, monkeypatch,
                                                                real_embedder):
    import httpx

    from lore.hooks import session_context
    from server_util import running

    settings = make_settings(lore_home, database=pg_url)
    with Lore.open(settings, embedder=real_embedder) as lore:
        rule = lore.lessons.add("Sessions live in files", "Keep web sessions in local files, "
                               "not Redis.", kind="preference", status="active",
                               preference={"rejected": "Redis", "preferred": "local files"})
        with running(lore) as base:
            got = httpx.get(f"{base}/api/v1/search", params={"q": "where to keep sessions"})
        assert got.status_code == 200 and got.json()["results"][0]["id"] == rule.id
    monkeypatch.setenv("LORE_DATABASE_URL", pg_url)
    told, record = session_context("/any/project")
    assert told is not None and "Sessions live in files" in json.loads(told)[
        "hookSpecificOutput"]["additionalContext"]
    assert record is not None and record["shown"] == [rule.id]


def test_lore_serve_searches_postgres(pg_url, lore_home, tmp_path, real_embedder):
    """`lore serve` as its own process, given only LORE_DATABASE_URL."""
    import os
    import subprocess
    import sys
    import time

    import httpx

    from server_util import free_port

    with Lore.open(make_settings(lore_home, database=pg_url), embedder=real_embedder) as lore:
        rule = lore.lessons.add("Retry flaky network calls with backoff", CORPUS[5][1])
    port = free_port()
    env = {**os.environ, "LORE_DATABASE_URL": pg_url, "LORE_HOME": str(lore_home)}
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "lore"), "serve", "--port",
                             str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v1/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, \
                (tmp_path / "serve.log").read_text()
            time.sleep(0.3)
        got = httpx.get(f"http://127.0.0.1:{port}/api/v1/search",
                        params={"q": "payment provider timeouts"}, timeout=60)
        assert got.status_code == 200 and got.json()["results"][0]["id"] == rule.id
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()


def test_the_hook_fails_open_fast_when_the_server_is_away(monkeypatch):
    import time

    from lore import hooks

    monkeypatch.setattr(hooks, "ensure_worker", lambda: None)
    monkeypatch.setenv("LORE_DATABASE_URL", "postgresql://me:pw@10.255.255.1:5432/lore")
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO('{"cwd": "/p"}'))
    started = time.monotonic()
    assert hooks.main("SessionStart") == 0
    assert time.monotonic() - started < 6


def _writer(url: str, n: int, shared: str, out: Any) -> None:
    store = open_store(url)
    try:
        ids = []
        for i in range(n):
            lid = new_id()
            store.insert(row(lid, f"writer lesson {i} {lid}"))
            store.record_usage([shared], now())
            ids.append(lid)
        # Every process stores the same captured message: one row, whoever comes first.
        store.corrections.add_correction(event_id="same-event", session_id="s", project=None,
                                         user_message="no, use pnpm", proposal=None, files=[],
                                         at=now(), origin="hook")
        import numpy as np

        seqs = [store.seq_of(i) for i in ids]
        store.put_vectors([(s, "h", np.ones(8, dtype=np.float32).tobytes()) for s in seqs])
        out.put(ids)
    finally:
        store.close()


def test_eight_writers_lose_nothing_and_duplicate_nothing(pg_url):
    store = open_store(pg_url)
    shared = new_id()
    store.insert(row(shared, "Shared lesson"))
    store.close()  # no connection crosses the fork
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(pg_url, 15, shared, out)) for _ in range(8)]
    for p in procs:
        p.start()
    written = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    every = [i for ids in written for i in ids]
    store = open_store(pg_url)
    try:
        assert len(every) == len(set(every)) == 120
        assert store.count() == 121 and store.existing_ids(every) == set(every)
        assert store.get(shared).usage_count == 120  # no lost update
        assert store.corrections.list_corrections(None, 50, all_projects=True)[0]["event_id"] \
            == "same-event" and store.rows_in("corrections") == 1
        seqs = [s for s, _ in store.vectors_since(0)]
        assert len(seqs) == len(set(seqs)) == 120
        assert store.vector_versions()[0] == 8  # each writer's batch got its own version
    finally:
        store.close()


CORPUS = [
    ("Pin numpy below 2", "numpy 2 changed the C ABI; compiled extensions built against 1.x "
     "crash on import, so pin numpy<2 until every wheel is rebuilt."),
    ("Use pnpm in the monorepo", "The lockfile is pnpm's; running npm install rewrites it and "
     "breaks the workspace links."),
    ("Keep web sessions in files", "Redis was dropped for sessions: local file storage is "
     "enough for one server and has nothing to operate."),
    ("Run migrations in a transaction", "A schema change that fails half-way must leave "
     "nothing behind; wrap each migration in BEGIN/COMMIT."),
    ("Prefer pathlib over os.path", "pathlib.Path reads better and handles joins and suffixes "
     "without string surgery."),
    ("Retry flaky network calls with backoff", "HTTP calls to the payment provider time out "
     "under load; retry three times with exponential backoff and jitter."),
    ("Log in JSON lines", "Structured logs are parsed by the collector; free text lines are "
     "dropped by the pipeline."),
    ("Never commit secrets", "API keys go in the environment or the secret manager, never in "
     "the repository; the pre-commit hook scans for them."),
    ("Tests use a real database", "Mocks hid a broken SQL query twice; the test suite starts "
     "a real server on loopback instead."),
    ("Format with ruff", "ruff format replaces black and isort; run it before committing."),
    ("Dates are UTC in storage", "Store timestamps in UTC ISO 8601 and convert to local time "
     "only when displaying them to a person."),
    ("Cache the embedding model", "Loading the ONNX model costs seconds; keep one instance per "
     "process instead of loading it per request."),
    ("Use feature flags for risky changes", "Ship dark behind a flag, enable for staff first, "
     "then roll out by percentage."),
    ("Index foreign keys", "Postgres does not index referencing columns by itself; a delete on "
     "the parent scans the child table without one."),
    ("Write small pull requests", "Reviews of more than 400 lines miss bugs; split the work into "
     "steps that each build and pass the tests."),
    ("Docker images pin their base", "FROM python:3.12 moves under you; pin the digest so "
     "builds are reproducible."),
    ("Avoid N+1 queries", "Load the related rows in one query with a join or an IN list rather "
     "than one query per row in a loop."),
    ("Type hints on public functions", "mypy catches wrong call sites only where the function "
     "declares what it takes and returns."),
    ("Back up before a data migration", "Take a snapshot of the database before a migration "
     "that rewrites rows, and test the restore."),
    ("Time zones in cron jobs", "The scheduler runs in UTC; a job meant for 9am local time "
     "must be shifted when daylight saving changes."),
]
QUERIES = [
    "numpy version crash on import", "which package manager for the workspace",
    "where to store user sessions", "schema change failed half way", "joining file paths",
    "payment API timeouts", "log format for the collector", "api key in the repository",
    "should tests mock the database", "code formatter", "storing timestamps",
    "slow model loading", "rolling out a risky change gradually", "slow delete on parent table",
    "large code reviews", "reproducible docker builds", "too many queries in a loop",
    "static type checking", "backup before migration", "daylight saving and scheduled jobs",
]


def test_hybrid_search_finds_the_same_lessons_on_both_backends(pg_url, tmp_path, lore_home,
                                                               real_embedder):
    sqlite = make_settings(lore_home, database=str(tmp_path / "a.db"))
    pg = make_settings(lore_home, database=pg_url)
    top: dict[str, list[list[str]]] = {}
    for name, settings in (("sqlite", sqlite), ("postgres", pg)):
        with Lore.open(settings, embedder=real_embedder) as lore:
            titles = {}
            for title, content in CORPUS:
                titles[lore.lessons.add(title, content, status="active").id] = title
            top[name] = [[titles[r.id] for r in lore.search.query(q, limit=5, track=False)] for q in QUERIES]
    # Below 5 results when fewer pass the similarity floor: overlap of what each returned.
    overlaps = [len(set(a) & set(b)) / max(len(a), len(b), 1)
                for a, b in zip(top["sqlite"], top["postgres"], strict=True)]
    assert sum(overlaps) / len(overlaps) >= 0.9, overlaps
    firsts = sum(a[0] == b[0] for a, b in zip(top["sqlite"], top["postgres"], strict=True))
    assert firsts >= 18, (top["sqlite"], top["postgres"])


def _tables(store: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Every copied table's rows in its column order, sorted: the content, not the count."""
    out = {}
    for t in COPY_TABLES:
        cols = store.copy_columns(t)
        rows = [r for batch in store.export_rows(t, 500) for r in batch]
        out[t] = sorted((tuple(zip(cols, r, strict=True)) for r in rows), key=repr)
    return out


def test_migrate_to_postgres_and_back_loses_nothing(run, pg_url, tmp_path, lore_home,
                                                    monkeypatch):
    home_db = lore_home / "lore.db"
    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        fill(lore.store)
        lore.lessons.add("Added through the facade", "with its vector", tags=["facade"])
        original = _tables(lore.store)
        original_log = lore.store.sync.lesson_changes_after(0, 100)
    assert len(original_log) >= 4  # fill's lessons, the facade's, the merged tag's rewrites
    assert home_db.exists() and all(original[t] for t in ("lessons", "chunks", "corrections"))

    to_pg = run("admin", "migrate-to", pg_url, "--json")
    assert to_pg.exit_code == 0, to_pg.output
    assert json.loads(to_pg.stdout)["rows"]["lessons"] == 4
    refused = run("admin", "migrate-to", pg_url)
    assert refused.exit_code == 1 and "--force" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert run("admin", "migrate-to", pg_url, "--force").exit_code == 0

    pg = open_store(pg_url)
    try:
        assert _tables(pg) == original
        assert pg.has_vector_index() and pg.integrity() == "ok"
        # The change log is the source's (the sync cursors point into it): copying the lessons
        # added no change, and the next local change comes after every copied one.
        end = original_log[-1][0]
        assert pg.sync.lesson_changes_after(0, 100) == original_log
    finally:
        pg.close()

    back = tmp_path / "back.db"
    monkeypatch.setenv("LORE_DATABASE_URL", pg_url)
    result = run("admin", "migrate-to", str(back))
    assert result.exit_code == 0, result.output
    copy = open_store(back)
    try:
        assert _tables(copy) == original
        # The copy searches: keywords and vectors were rebuilt from the rows.
        assert copy.keyword_search(['"facade"'], (1.0, 1.0, 1.0), 5, Filters(statuses=()), 1000)
        assert copy.has_vector_index() and copy.vector_count() == 4
        assert copy.sync.lesson_changes_after(0, 100) == original_log
        for target in (copy, open_store(pg_url)):
            later = new_id()
            target.insert(row(later, "Written after the copy"))
            [(seq, lid)] = target.sync.lesson_changes_after(end, 5)
            assert seq > end and lid == later
            if target is not copy:
                target.close()
    finally:
        copy.close()
    monkeypatch.delenv("LORE_DATABASE_URL")
    with Lore.open(make_settings(lore_home, database=str(back)), embedder=FakeEmbedder()) as lore:
        assert lore.search.query("facade vector", limit=1)[0].title == "Added through the facade"


def test_a_server_that_does_not_answer_is_one_line(run, monkeypatch):
    monkeypatch.setenv("LORE_DATABASE_URL", "postgresql://me:pw@127.0.0.1:1/lore")
    result = run("search", "anything")
    assert result.exit_code == 1
    [line] = result.stderr.strip().splitlines()
    assert "cannot connect to the Postgres database postgresql://me:***@127.0.0.1:1/lore" in line
    assert "pw@" not in line


def test_a_wrong_url_and_a_missing_driver_are_one_line(run, monkeypatch, pg_url):
    monkeypatch.setenv("LORE_DATABASE_URL", pg_url + "&schema=Not-Valid")
    bad = run("search", "anything")
    assert bad.exit_code == 1 and len(bad.stderr.strip().splitlines()) == 1
    assert "schema name" in bad.stderr
    monkeypatch.setenv("LORE_DATABASE_URL", "postgresql://me@localhost/lore?sslmode=bogus")
    bad = run("search", "anything")
    assert bad.exit_code == 1 and len(bad.stderr.strip().splitlines()) == 1
    monkeypatch.setitem(__import__("sys").modules, "psycopg", None)
    missing = run("search", "anything")
    assert missing.exit_code == 1
    assert "pip install 'loreloop[postgres]'" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["lessons", "chunks"])
def test_keyword_index_rows_follow_deletes(pg_url, name):
    store = open_store(pg_url)
    try:
        got = fill(store)
        if name == "lessons":
            store.delete(got["ids"][0])
            assert store.count() == 2
            assert store.rows_in("lessons") == 2
        else:
            store.clear()
            assert store.conversations.stats()["chunks"] == 0 and store.count() == 0
        assert store.integrity() == "ok"
    finally:
        store.close()


def test_conversation_vectors_are_searched_by_the_server(pg_url, tmp_path, real_embedder):
    """On Postgres pgvector answers the vector stage: no index file is written anywhere and
    the vectors are not loaded into memory; a paraphrase is found by meaning alone."""
    home = tmp_path / "home"
    with Lore.open(make_settings(home, database=pg_url), embedder=real_embedder) as lore:
        conv = lore.conversations
        conv.add_turns("s-shop", "test", "/work/shop", [
            ("m1", "user", "the payments API returns ECONNRESET under load",
             "2026-11-01T10:00:00Z"),
            ("m2", "assistant", "raise the keep-alive timeout of the pool",
             "2026-11-01T10:01:00Z")])
        conv.add_turns("s-garden", "test", "/work/garden", [
            ("m3", "user", "the tomatoes need watering twice a week", "2026-11-01T10:00:00Z")])
        assert conv.embed_pending() == 2
        assert conv.refresh_index().startswith("no index")
        hits = conv.search("connections dropped by the payment service when busy",
                           mode="vector", limit=2)
        assert hits and hits[0].project == "/work/shop"
        scoped = conv.search("watering plants", mode="vector", project="/work/garden")
        assert [h.project for h in scoped] == ["/work/garden"]
        assert not conv.vectors.loaded  # pgvector answered, not the in-memory scan
    assert not [p for p in tmp_path.rglob("*") if ".chunks." in p.name]


def test_a_schema_made_before_sync_gets_it_on_open(pg_url):
    """A schema at 13 (who wrote it, with corrections.device) runs 11, 12 and 15 on open: its
    lessons are logged as changes not yet pushed, the column is not added twice."""
    store = open_store(pg_url)
    try:
        got = fill(store)
        conn = store.conn  # type: ignore[attr-defined]
        conn.execute("DROP TABLE lesson_changes, lesson_origins, lesson_history, sync_records, "
                     "sync_batches, schedule_runs")
        conn.execute("DROP FUNCTION lesson_changes_append() CASCADE")
        conn.execute("ALTER TABLE analysis_sessions DROP COLUMN start_commit, "
                     "DROP COLUMN start_branch, DROP COLUMN start_git")
        conn.execute("DELETE FROM schema_migrations WHERE version IN (11, 12, 15)")
    finally:
        store.close()
    again = open_store(pg_url)
    try:
        assert sorted(lid for _, lid in again.sync.lesson_changes_after(0, 10)) == sorted(
            got["ids"])
        assert again.schema_version() == SCHEMA_VERSION
        assert again.analysis.record_start("s9", None, now(), "d" * 40, "main", "commit")
        assert again.analysis.schedule_runs(5) == []
    finally:
        again.close()


def _chunks_with_vectors(store: Any, vecs: np.ndarray, projects: list[str]) -> list[int]:
    """One chunk a vector, in the given projects (round robin), with its vector stored."""
    conv = store.conversations
    ids = []
    for n in range(len(vecs)):
        project = projects[n % len(projects)]
        sid = f"s{projects[0]}{n}"
        conv.upsert_session(sid, "claude-code", project, "dev", None, None, None)
        seq = conv.insert_message({
            "uuid": f"u{projects[0]}{n}", "session_id": sid, "parent_uuid": None,
            "role": "user", "speaker": "user", "text": f"turn {n}", "tool_calls": "[]",
            "timestamp": now(), "is_sidechain": 0, "agent_id": None, "is_meta": 0,
            "injected": 0})
        assert seq is not None
        ids.append(conv.insert_chunk(sid, project, [seq], None, None, "user", f"turn {n}"))
    conv.put_vectors([(cid, f"h{cid}", v.tobytes()) for cid, v in zip(ids, vecs, strict=True)])
    return ids


def _exact_order(vecs: np.ndarray, ids: list[int], query: np.ndarray, k: int) -> list[int]:
    sims = vecs @ query
    return [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-sims[i], ids[i]))[:k]]


def test_chunk_vectors_are_searched_through_an_hnsw_index(pg_url):
    """Migration 16 makes the HNSW index; `nearest` is planned on it and, on a set small
    enough for the search to see every vector, gives the exact order, in one project only that
    project's chunks, and a project with fewer chunks than asked for all of them, exactly."""
    from lore.store.postgres.migrations import CHUNK_VECTOR_INDEX_NAME
    from lore.store.postgres.tables import NEAREST, NEAREST_IN_PROJECT

    rng = np.random.default_rng(4)
    vecs = rng.normal(size=(300, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store = open_store(pg_url)
    try:
        conn = store.conn  # type: ignore[attr-defined]
        [(definition,)] = conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = "
                                       "'chunk_vectors' AND indexname = ?",
                                       (CHUNK_VECTOR_INDEX_NAME,)).fetchall()
        assert "USING hnsw" in definition and "vector_cosine_ops" in definition
        assert store.schema_version() >= 16
        ids = _chunks_with_vectors(store, vecs[:290], ["/a", "/b"])
        small = _chunks_with_vectors(store, vecs[290:], ["/small"])
        ids_all, conv = ids + small, store.conversations
        conn.execute("ANALYZE chunk_vectors")
        query = vecs[7] + 0.5 * vecs[100]
        query /= np.linalg.norm(query)
        for sql, params in ((NEAREST, (query, 20)), (NEAREST_IN_PROJECT, (query, 1000, "/a", 20))):
            with store.atomic():
                conn.execute("SET LOCAL enable_seqscan = off")  # as a large table is planned
                plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params))
            assert f"Index Scan using {CHUNK_VECTOR_INDEX_NAME}" in plan, plan
        got = conv.nearest(query.tobytes(), 20, None)
        assert [c for c, _ in got] == _exact_order(vecs, ids_all, query, 20)
        assert got[0][1] == pytest.approx(float(vecs[ids_all.index(got[0][0])] @ query),
                                          abs=1e-5)
        in_a = [i for n, i in enumerate(ids) if n % 2 == 0]
        a_vecs = vecs[[n for n in range(290) if n % 2 == 0]]
        got_a = [c for c, _ in conv.nearest(query.tobytes(), 20, "/a")]
        assert got_a == _exact_order(a_vecs, in_a, query, 20)
        assert set(got_a) <= set(in_a)
        got_small = [c for c, _ in conv.nearest(query.tobytes(), 20, "/small")]
        assert got_small == _exact_order(vecs[290:], small, query, 20)  # all ten
        # Another model's vectors (not the index's dimensions) are compared exactly.
        other = _chunks_with_vectors(store, vecs[:3, :8] * 2, ["/other"])
        assert [c for c, _ in conv.nearest(vecs[1, :8].tobytes(), 3, "/other")][0] == other[1]
    finally:
        store.close()


def test_a_keyword_in_more_chunks_than_the_bound_ranks_the_newest(pg_url):
    """Terms are pruned on the planner's estimates; a word in more chunks than max_postings
    ranks only the matches among the newest chunks (about max_postings of them), and a rarer
    word keeps its place among the terms."""
    rng = np.random.default_rng(2)
    vecs = rng.normal(size=(60, 8)).astype(np.float32)
    store = open_store(pg_url)
    try:
        ids = _chunks_with_vectors(store, vecs, ["/a", "/b"])
        conv = store.conversations
        for n, cid in enumerate(ids):
            rare = " kubernetes" if n == 3 else ""
            conv.set_context(cid, [f"we deploy the service{rare}"], [], "", f"h{cid}")
        store.conn.execute("ANALYZE chunks_fts")  # type: ignore[attr-defined]
        weights = (1.0, 0.0, 0.1, 0.2)
        every = conv.keyword_search(['"deploy"'], weights, 100, None, 1000)
        assert sorted(c for c, _ in every) == sorted(ids)
        bounded = [c for c, _ in conv.keyword_search(['"deploy"'], weights, 100, None, 20)]
        assert 10 <= len(bounded) <= 30 and min(bounded) > ids[-1] - 40
        assert set(bounded) == {c for c in ids if c >= min(bounded)}
        in_b = [c for c, _ in conv.keyword_search(['"deploy"'], weights, 100, "/b", 20)]
        assert in_b and set(in_b) <= set(bounded) and set(in_b) <= set(ids[1::2])
        # The rare word is kept and the common one dropped: the old chunk is found.
        found = conv.keyword_search(['"deploy"', '"kubernetes"'], weights, 100, None, 20)
        assert [c for c, _ in found] == [ids[3]]
    finally:
        store.close()


@pytest.mark.parametrize("url", ["postgresql://[::1", "postgresql://me:pw@[::1/lore",
                                 "postgresql://me:pw@[::1]:99999/lore",
                                 "postgresql://me:pw@host:port/lore",
                                 "postgres://me:pw@[fe80::1%eth0/lore",
                                 "postgresql://me:pw@host/lore?schema=x&schema=Not-Valid"])
def test_a_malformed_url_is_one_line_without_its_password(run, monkeypatch, url):
    # No server needed: the URL is refused before anything connects.
    monkeypatch.setenv("LORE_DATABASE_URL", url)
    bad = run("search", "anything")
    assert bad.exit_code == 1, bad.output
    [line] = bad.stderr.strip().splitlines()
    assert "Traceback" not in bad.output and "pw" not in line
    assert "database URL" in line
