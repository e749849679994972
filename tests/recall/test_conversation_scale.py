"""Conversation memory at scale: the chunk index file (faiss lists, 8-bit codes) against exact search, kept in
step with the vectors and rebuilt when missing or stale; the embedding backlog a first import
leaves to the worker; an interrupted import resumed without duplicates."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import make_settings
from lore.api import Lore
from lore.recall.vectors import ChunkIndex, MemoryIndex
from lore.worker import Worker

DIMS = 48


def clustered(n: int, seed: int = 3) -> np.ndarray:
    """Unit vectors in 60 clusters (the same 60 whatever the seed): neighbours exist, as with
    real embeddings, and a query drawn with another seed asks about what is stored."""
    centres = np.random.default_rng(3).normal(size=(60, DIMS))
    rng = np.random.default_rng(seed)
    v = centres[rng.integers(0, 60, n)] + rng.normal(scale=0.35, size=(n, DIMS))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def add_chunks(lore: Lore, n: int, start: int = 0, project: str = "/work/p") -> list[int]:
    conv = lore.conversations
    per = 500
    for s in range(start, start + n, per):
        turns = [(f"t{i}", "user", f"turn number {i}", "2026-10-01T00:00:00Z")
                 for i in range(s, min(s + per, start + n))]
        conv.add_turns(f"s{s}", "test", f"{project}{(s // per) % 2}", turns, per_turn=True)
    return [r[0] for r in conv.store.chunks_needing_vectors()]


def put(lore: Lore, ids: list[int], vecs: np.ndarray) -> None:
    """Vectors for chunks, with the chunks' own hashes (so they are not in the backlog)."""
    store = lore.conversations.store
    hashes = dict(store.conn.execute("SELECT id, content_hash FROM chunks").fetchall())
    store.put_vectors([(cid, hashes[cid], v.tobytes()) for cid, v in zip(ids, vecs, strict=True)])


def exact(ids: list[int], vecs: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    sims = vecs @ q
    return [ids[i] for i in np.argsort(-sims)[:k]]


@pytest.fixture
def indexed(fake_lore: Lore, tmp_path: Path):
    ids = add_chunks(fake_lore, 2000)
    vecs = clustered(len(ids))
    put(fake_lore, ids, vecs)
    index = fake_lore.conversations.index
    assert index.path is not None and index.path.parent == Path(fake_lore.store.location).parent
    assert index.refresh(fake_lore.conversations.store) == "no index below 20000 vectors"
    index.MIN_SIZE = 1000  # as if this were a large database
    assert index.refresh(fake_lore.conversations.store) == "rebuilt"
    assert index.refresh(fake_lore.conversations.store) == "in step"
    return fake_lore, ids, vecs


def test_the_index_finds_what_exact_search_finds(indexed):
    lore, ids, vecs = indexed
    store, index = lore.conversations.store, lore.conversations.index
    queries = clustered(40, seed=9)
    hits = 0
    for q in queries:
        got = index.search(store, q, 10, None)
        assert got is not None
        hits += len({c for c, _ in got} & set(exact(ids, vecs, q, 10)))
        # Scores are exact cosines from the stored vectors, best first.
        row = {c: v for c, v in zip(ids, vecs, strict=True)}
        assert [s for _, s in got] == pytest.approx([float(row[c] @ q) for c, _ in got],
                                                    abs=1e-5)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    assert hits / (10 * len(queries)) >= 0.98


def test_one_project_is_searched_within_it(indexed):
    lore, ids, vecs = indexed
    store, index = lore.conversations.store, lore.conversations.index
    mine = store.chunk_ids("/work/p1")
    pos = {c: i for i, c in enumerate(ids)}
    sub = np.vstack([vecs[pos[c]] for c in mine])
    hits = 0
    for q in clustered(20, seed=11):
        got = index.search(store, q, 10, "/work/p1")
        assert got is not None and {c for c, _ in got} <= set(mine)
        hits += len({c for c, _ in got} & set(exact(mine, sub, q, 10)))
    assert hits / 200 >= 0.98


def test_new_vectors_are_searched_before_the_graph_holds_them(indexed):
    lore, ids, vecs = indexed
    store, index = lore.conversations.store, lore.conversations.index
    new_ids = add_chunks(lore, 50, start=10_000)
    q = clustered(1, seed=21)[0]
    # The best possible matches, each a little apart (a graph of identical points is degenerate).
    near = np.tile(q, (len(new_ids), 1)) + np.random.default_rng(3).normal(0, 0.03, (len(new_ids), len(q)))
    put(lore, new_ids, (near / np.linalg.norm(near, axis=1, keepdims=True)).astype(np.float32))
    assert index.refresh(store) == "50 vectors scored beside the index"
    got = index.search(store, q, 10, None)
    assert got is not None and {c for c, _ in got} <= set(new_ids)
    # A chunk embedded again (its text changed) is scored with its new vector.
    put(lore, [ids[0]], q[None, :])
    got = index.search(store, q, 60, None)
    assert got is not None and ids[0] in {c for c, _ in got}
    assert index.refresh(store, force=True) == "added 51 vectors"
    assert json.loads(index.meta_path.read_text())["version"] == store.vector_versions()[0]
    got = index.search(store, q, 60, None)
    # Now in the graph: 51 near-ties an approximate search may miss one or two of.
    want = {*new_ids, ids[0]}
    assert got is not None and len({c for c, _ in got} & want) >= 0.95 * len(want)


def test_a_missing_stale_or_broken_index_is_rebuilt(indexed):
    lore, ids, _ = indexed
    store, index = lore.conversations.store, lore.conversations.index
    q = clustered(1, seed=5)[0]
    before = index.search(store, q, 10, None)

    def same(got):  # a rebuilt graph may differ a little (it is built on several threads)
        return got is not None and len({c for c, _ in got} & {c for c, _ in before}) >= 9

    index.path.unlink()
    assert index.search(store, q, 10, None) is None  # the search falls back to exact
    assert index.refresh(store) == "rebuilt"
    assert same(index.search(store, q, 10, None))
    index.path.write_bytes(b"not a graph")
    assert index.search(store, q, 10, None) is None
    assert index.refresh(store, force=True) == "rebuilt"
    # Vectors removed since the graph was written (a reset): not used, then rebuilt.
    bumped = str(store.vector_versions()[0] + 1)
    with store.conn:
        store.conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                               [("chunk_vectors_reset", bumped), ("chunk_vectors_version", bumped)])
    assert index.search(store, q, 10, None) is None
    assert index.refresh(store) == "rebuilt"
    assert same(index.search(store, q, 10, None))


def test_search_uses_the_index_and_falls_back_to_exact(indexed):
    lore, ids, vecs = indexed
    conv = lore.conversations
    q = vecs[7]
    lore.engine.embedding.query_function = lambda: (lambda text: q)  # the query's vector, given
    hits = conv.search("anything", project=None, limit=5, mode="vector", decay=False)
    assert hits[0].chunk_id == ids[7]
    assert not conv.vectors.loaded  # the graph answered: nothing was loaded into memory
    conv.index.remove()
    again = conv.search("anything", project=None, limit=5, mode="vector", decay=False)
    assert [h.chunk_id for h in again] == [h.chunk_id for h in hits]
    assert conv.vectors.loaded


def test_memory_index_and_graph_agree_on_the_top(indexed):
    lore, ids, vecs = indexed
    store, index = lore.conversations.store, lore.conversations.index
    memory = MemoryIndex()
    memory.sync(store)
    agree = 0
    for q in clustered(20, seed=13):
        got = index.search(store, q, 5, None)
        assert got is not None
        agree += got[0] == memory.search(q, 5)[0]
    assert agree >= 18  # the same best hit, with the same exact score, nearly always


def test_an_unindexable_location_has_no_index(fake_lore):
    assert ChunkIndex(None).refresh(fake_lore.conversations.store) == \
        "no index (the database is not a file)"


def transcript_lines(n: int, session: str = "22222222-3333-4444-5555-666666666666") -> str:
    topics = ["the websocket drops behind nginx", "postgres deadlock in the nightly import",
              "the cache key misses the tenant", "flaky timezone test in CI"]
    out = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"turn {i}: {topics[i % len(topics)]}, step {i // len(topics)}"
        message = ({"role": "user", "content": text} if role == "user" else
                   {"role": "assistant", "model": "m", "content": [{"type": "text", "text": text}]})
        out.append(json.dumps({
            "type": role, "uuid": f"m-{i:05d}", "parentUuid": f"m-{i - 1:05d}" if i else None,
            "sessionId": session, "cwd": "/work/shop", "timestamp": "2026-11-01T10:00:00Z",
            "version": "2.1.0", "isSidechain": False, "message": message}) + "\n")
    return "".join(out)


def test_an_interrupted_import_resumes_without_duplicates(fake_lore, tmp_path, monkeypatch,
                                                          settings):
    import lore.capture.ingest as ingest

    monkeypatch.setattr(ingest, "COMMIT_EVERY", 50)
    folder = tmp_path / "projects" / "-work-shop"
    folder.mkdir(parents=True)
    (folder / "22222222-3333-4444-5555-666666666666.jsonl").write_text(transcript_lines(400))
    calls = []

    def stop_after_two_batches(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the file

    conv = fake_lore.conversations
    with pytest.raises(KeyboardInterrupt):
        conv.ingest([tmp_path / "projects"], embed=False, progress=stop_after_two_batches)
    partial = conv.stats()
    assert 0 < partial["messages"] < 400
    report = conv.ingest([tmp_path / "projects"], embed=False)
    assert report.duplicates == 0 and report.messages == 400 - partial["messages"]
    whole = conv.stats()
    # The same file imported in one go, into another database, gives the same memory.
    other = Lore.open(make_settings(tmp_path / "other"))
    try:
        other.conversations.ingest([tmp_path / "projects"], embed=False)
        assert other.conversations.stats() | {"files": 1} == whole | {"files": 1}
        texts = [r[0] for r in other.store.conn.execute("SELECT text FROM chunks ORDER BY id")]
    finally:
        other.close()
    assert [r[0] for r in fake_lore.store.conn.execute(
        "SELECT text FROM chunks ORDER BY id")] == texts


def test_the_worker_drains_the_backlog_and_search_covers_it(fake_lore, tmp_path, settings):
    folder = tmp_path / "projects" / "-work-shop"
    folder.mkdir(parents=True)
    (folder / "22222222-3333-4444-5555-666666666666.jsonl").write_text(transcript_lines(40))
    conv = fake_lore.conversations
    report = conv.ingest([tmp_path / "projects"], embed=False)
    assert report.chunks and conv.backlog() == report.chunks
    # Keyword search works at once; the explanation says the vector side is missing.
    hits = conv.search("websocket nginx", project=None, limit=3)
    assert hits and all(h.parts["vector"].startswith("not embedded yet") for h in hits)
    worker = Worker(settings, fake_lore)
    assert worker.backlog()["chunks"] == report.chunks
    while worker.embed_backlog():
        pass
    assert conv.backlog() == 0
    assert worker.backlog() | {"rate": None} == {"chunks": 0, "rate": None, "eta_seconds": 0.0}
    assert json.loads(worker.rate_file.read_text())["rate"] > 0
    hits = conv.search("websocket nginx", project=None, limit=3)
    assert hits and all("vector" not in h.parts and h.parts["similarity"] for h in hits)


def test_worker_run_embeds_the_backlog_between_events(fake_lore, tmp_path, settings):
    folder = tmp_path / "projects" / "-work-shop"
    folder.mkdir(parents=True)
    (folder / "22222222-3333-4444-5555-666666666666.jsonl").write_text(transcript_lines(10))
    fake_lore.conversations.ingest([tmp_path / "projects"], embed=False)
    assert fake_lore.conversations.backlog() > 0
    Worker(settings, fake_lore).run(once=True)
    assert fake_lore.conversations.backlog() == 0


def test_ingest_leaves_a_large_backlog_to_the_worker_and_status_shows_it(run, tmp_path,
                                                                          monkeypatch):
    import lore.cli.ingest_cmd as ingest_cmd
    import lore.worker as worker

    started = []
    monkeypatch.setattr(ingest_cmd, "FOREGROUND_CHUNKS", 0)
    monkeypatch.setattr(worker, "start_background", lambda settings: started.append(1) or 4242)
    folder = tmp_path / "projects" / "-work-shop"
    folder.mkdir(parents=True)
    (folder / "22222222-3333-4444-5555-666666666666.jsonl").write_text(transcript_lines(40))
    out = run("ingest", str(tmp_path / "projects"), "--json")
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    assert started and report["embedded"] == 0 and report["left_to_embed"] == report["chunks"] > 0
    status = run("worker", "status", "--json")
    backlog = json.loads(status.stdout)["embedding_backlog"]
    assert backlog["chunks"] == report["chunks"] and backlog["eta_seconds"] is None
    text = run("worker", "status").output
    assert f"{report['chunks']} passages" in text
    found = run("recall", "conversations", "websocket nginx", "--project", "all", "--explain")
    assert "not embedded yet" in found.output
    # --wait embeds here, however many.
    run("ingest", str(tmp_path / "projects"), "--wait")
    assert json.loads(run("worker", "status", "--json").stdout)["embedding_backlog"]["chunks"] == 0


def test_an_index_of_an_earlier_kind_is_replaced(indexed):
    lore, _, _ = indexed
    conv = lore.conversations
    base = Path(lore.store.location)
    old = [base.with_name(base.name + s) for s in (".chunks.usearch", ".chunks.usearch.json")]
    for p in old:
        p.write_bytes(b"an HNSW graph of an earlier version")
    conv.refresh_index()
    assert not any(p.exists() for p in old)
    assert conv.index.path.exists() and conv.index.path.name.endswith(".chunks.faiss")


def test_the_index_is_retrained_when_it_has_grown(indexed):
    lore, ids, vecs = indexed
    store, index = lore.conversations.store, lore.conversations.index
    rec = index.record()
    assert rec["trained"] == len(ids) and rec["lists"] == index.lists_for(len(ids))
    assert set(rec["projects"]) == {"/work/p0", "/work/p1"}
    more = add_chunks(lore, 4 * len(ids), start=20_000, project="/work/q")
    put(lore, more, clustered(len(more), seed=17))
    assert index.refresh(store) == "rebuilt"  # four times what the lists were trained on
    rec = index.record()
    assert rec["trained"] == rec["count"] == 5 * len(ids)
    assert {"/work/q0", "/work/q1"} <= set(rec["projects"])
    q = clustered(1, seed=19)[0]
    got = index.search(store, q, 10, "/work/q1")
    assert got and {c for c, _ in got} <= set(store.chunk_ids("/work/q1"))


def test_a_project_new_since_the_index_was_built_is_searched(indexed):
    lore, _, _ = indexed
    store, index = lore.conversations.store, lore.conversations.index
    new_ids = add_chunks(lore, 30, start=30_000, project="/work/new")
    put(lore, new_ids, clustered(len(new_ids), seed=23))
    assert "/work/new0" not in index.record()["projects"]
    got = index.search(store, clustered(1, seed=29)[0], 5, "/work/new0")
    assert got and {c for c, _ in got} <= set(new_ids)


def test_probing_grows_with_the_lists_and_reads_a_bounded_share():
    assert ChunkIndex.probes_for(45, 2_000) == 45  # small: every list
    assert ChunkIndex.probes_for(1_000, 1_000_000) == 63  # 1/16 of the lists
    assert ChunkIndex.probes_for(316, 100_000) == 104  # ~32,768 codes
    assert ChunkIndex.probes_for(0, 0) == 0


def test_a_common_word_scores_its_newest_rows_and_a_rare_one_all(fake_lore):
    conv = fake_lore.conversations
    turns = [(f"w{i}", "user", f"deploy step {i}" + (" flamingo" if i < 3 else ""),
              "2026-10-01T00:00:00Z") for i in range(600)]
    conv.add_turns("s-window", "test", "/work/w", turns, per_turn=True)
    store = conv.store
    weights = (1.0, 0.0, 1.0, 0.3)
    ids = [r[0] for r in store.conn.execute("SELECT id FROM chunks ORDER BY id")]
    common = store.keyword_search(['"deploy"'], weights, 1000, None, 100)
    assert {c for c, _ in common} == set(ids[-100:])  # the newest 100 of 600
    assert len(store.keyword_search(['"deploy"'], weights, 1000, None, 1000)) == 600
    rare = store.keyword_search(['"deploy"', '"flamingo"'], weights, 10, None, 100)
    # The rare word, kept alone, found in the oldest rows (its own turns first, then the turns
    # that have it in their context).
    assert {c for c, _ in rare[:3]} == set(ids[:3]) and {c for c, _ in rare} <= set(ids[:5])
    within = store.keyword_search(['"deploy"'], weights, 1000, "/work/w", 100)
    assert {c for c, _ in within} == set(ids[-100:])


def test_a_prefetched_query_vector_is_the_one_asked_for():
    from lore.embed import prefetch

    calls = []

    def embed(text):
        calls.append(text)
        return np.full(3, len(text), dtype=np.float32)

    get = prefetch(embed, "four")
    assert get("four").tolist() == [4.0] * 3
    assert get("sixsix").tolist() == [6.0] * 3  # another text: embedded when asked
    assert calls == ["four", "sixsix"]


def test_a_large_import_reads_in_a_second_process_with_the_same_result(fake_lore, tmp_path,
                                                                       monkeypatch):
    import lore.capture.ingest as ingest

    folder = tmp_path / "projects" / "-work-shop"
    folder.mkdir(parents=True)
    (folder / "22222222-3333-4444-5555-666666666666.jsonl").write_text(transcript_lines(300))
    (folder / "33333333-3333-4444-5555-666666666666.jsonl").write_text(transcript_lines(
        120, session="33333333-3333-4444-5555-666666666666").replace('"m-', '"n-'))
    (folder / "44444444-3333-4444-5555-666666666666.jsonl").write_bytes(b"not json\n" * 3)
    monkeypatch.setattr(ingest, "COMMIT_EVERY", 50)
    monkeypatch.setattr(ingest, "PROCESS_BYTES", 0)  # every import is "large"
    started = []
    real = ingest.ReadingProcess.submit
    monkeypatch.setattr(ingest.ReadingProcess, "submit",
                        lambda self, jobs, every: started.append(len(jobs)) or real(self, jobs, every))
    calls = []

    def stop_after_three_parts(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 3:
            raise KeyboardInterrupt

    conv = fake_lore.conversations
    with pytest.raises(KeyboardInterrupt):
        conv.ingest([tmp_path / "projects"], embed=False, progress=stop_after_three_parts)
    assert started == [3]
    partial = conv.stats()["messages"]
    assert 0 < partial < 420
    report = conv.ingest([tmp_path / "projects"], embed=False)
    assert report.duplicates == 0 and report.messages == 420 - partial
    assert report.malformed == 3 and conv.stats()["messages"] == 420
    # The same files read on a thread, into another database, give the same memory.
    monkeypatch.setattr(ingest, "PROCESS_BYTES", 1 << 60)
    other = Lore.open(make_settings(tmp_path / "other"))
    try:
        again = other.conversations.ingest([tmp_path / "projects"], embed=False)
        assert again.messages == 420 and again.malformed == 3
        texts = [r[0] for r in other.store.conn.execute("SELECT text FROM chunks ORDER BY id")]
    finally:
        other.close()
    assert sorted(r[0] for r in fake_lore.store.conn.execute("SELECT text FROM chunks")) == \
        sorted(texts)


def test_an_unreadable_file_in_a_large_import_is_skipped_and_the_rest_read(fake_lore, tmp_path,
                                                                           monkeypatch):
    import lore.capture.ingest as ingest
    import lore.capture.reading as reading

    folder = tmp_path / "projects" / "-work-shop"
    folder.mkdir(parents=True)
    bad = folder / "22222222-3333-4444-5555-666666666666.jsonl"
    bad.write_text(transcript_lines(30))
    (folder / "33333333-3333-4444-5555-666666666666.jsonl").write_text(transcript_lines(
        40, session="33333333-3333-4444-5555-666666666666").replace('"m-', '"n-'))
    monkeypatch.setattr(ingest, "PROCESS_BYTES", 0)
    real = reading.ReadingProcess.submit

    def submit(self, jobs, every):  # the first file vanishes after it was planned
        bad.unlink()
        return real(self, jobs, every)

    monkeypatch.setattr(reading.ReadingProcess, "submit", submit)
    report = fake_lore.conversations.ingest([tmp_path / "projects"], embed=False)
    assert [p for p, _ in report.skipped] == [str(bad)]
    assert report.messages == 40


def test_without_faiss_a_large_memory_is_searched_exactly(indexed, monkeypatch):
    """faiss comes with the `scale` extra: a lean install searches every vector exactly, gets
    the same top results, and the writer says how to make it faster instead of failing."""
    import lore.recall.vectors as vectors

    lore, ids, vecs = indexed
    conv = lore.conversations
    q = vecs[11]
    lore.engine.embedding.query_function = lambda: (lambda text: q)
    with_index = conv.search("anything", project=None, limit=5, mode="vector", decay=False)
    monkeypatch.setattr(vectors, "faiss_available", lambda: False)
    assert "loreloop[scale]" in conv.index.refresh(conv.store, force=True)
    exact_hits = conv.search("anything", project=None, limit=5, mode="vector", decay=False)
    assert exact_hits[0].chunk_id == ids[11] == with_index[0].chunk_id
    assert conv.vectors.loaded  # answered by the exact scan in memory
