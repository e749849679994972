"""Conversation search on Postgres at 10,000, 100,000 and 1,000,000 chunks.

    python -m bench.postgres_scale_bench --sizes 10000 100000 1000000 --queries 100
    python -m bench.postgres_scale_bench --sizes 100000 --data ~/.cache/lore-bench/pg   # kept

A PostgreSQL server with pgvector is started from the pgserver wheel (the dev extra) in a
temporary folder (or in ``--data``, kept and reused: a size already loaded is not loaded again).
Each size has a schema of its own. The corpus is bench/scale_bench.py's: the chunk texts of
bench/corpus.py in sessions of 1,000 one-turn chunks in seven projects, two turns of context each
side, the date in words; the vectors are bench/scale_corpus.py's cached ``chunks-N.npy``
(memory-mapped). Everything is loaded in bulk (COPY), then the keyword index and the chunk
vector index are built with the product's own definitions.

Measured with 100 real queries embedded live, the query embedding alone as the baseline of the
same run: warm search through the product (every project, one project), the keyword stage
alone, the vector stage alone (``nearest``) with its recall@10 against exact search over the same
vectors, the server's memory (resident and proportional set of its processes, shared_buffers),
load and build times, sizes. Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from bench.corpus import make_corpus, make_queries
from bench.harness import Report
from bench.scale_bench import PER_SESSION, PROJECTS, pct
from bench.scale_corpus import chunk_text, vectors

ONE = "/work/p3"
STAMP = "2026-10-01T00:00:00Z"


def fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs):.1f} / {pct(xs, 0.9):.1f}"


def raw(url: str) -> Any:
    """A psycopg connection to the schema of ``url`` (for the bulk load and the sizes)."""
    import psycopg
    from pgvector.psycopg import register_vector

    from lore.store.postgres import split_url

    dsn, schema = split_url(url)
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
    conn.execute(f'SET search_path TO "{schema}", public')
    register_vector(conn)
    return conn


def load(url: str, n: int) -> dict[str, float]:
    """The chunks, their keyword index and their vectors of ``n`` chunks, in bulk."""
    from lore.store import open_store
    from lore.store.postgres.migrations import CHUNK_VECTOR_INDEX, CHUNK_VECTOR_INDEX_NAME

    open_store(url).close()  # the schema, by the product's migrations
    conn = raw(url)
    times: dict[str, float] = {}
    docs = make_corpus(n)
    texts = [chunk_text(d) for d in docs]
    t0 = time.perf_counter()
    conn.execute(f"DROP INDEX IF EXISTS {CHUNK_VECTOR_INDEX_NAME}")
    conn.execute("DROP INDEX IF EXISTS idx_chunks_fts")
    with conn.cursor() as cur:
        with cur.copy("COPY sessions (id, agent, project, device, started_at, ended_at, "
                      "message_count, speakers) FROM STDIN") as copy:
            for s in range(0, n, PER_SESSION):
                copy.write_row((f"session-{s}", "bench", project_of(s), "bench", STAMP, STAMP,
                                min(PER_SESSION, n - s), "user"))
        with cur.copy("COPY chunks (id, session_id, project, first_seq, last_seq, started_at, "
                      "ended_at, speakers, text, ctx_before, ctx_after, content_hash) "
                      "FROM STDIN") as copy:
            for i in range(n):
                s = i - i % PER_SESSION
                end = min(s + PER_SESSION, n)
                before, after = texts[max(s, i - 2):i], texts[i + 1:min(end, i + 3)]
                copy.write_row((i + 1, f"session-{s}", project_of(s), i + 1, i + 1, STAMP,
                                STAMP, "user", texts[i], json.dumps(before), json.dumps(after),
                                f"bench-{i}"))
    times["texts_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    # The same document as the store's index_chunk: text (A), date in words (B), context (C).
    conn.execute("SET maintenance_work_mem = '1GB'")
    conn.execute(
        "INSERT INTO chunks_fts (chunk_id, doc) SELECT c.id, "
        "setweight(to_tsvector('english', c.text), 'A') || "
        "setweight(to_tsvector('english', '1 October, 2026'), 'B') || "
        "setweight(to_tsvector('english', coalesce((SELECT string_agg(x, E'\\n') FROM "
        "jsonb_array_elements_text(c.ctx_before::jsonb || c.ctx_after::jsonb) x), '')), 'C') "
        "FROM chunks c")
    conn.execute("CREATE INDEX idx_chunks_fts ON chunks_fts USING gin (doc)")
    times["keywords_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    vecs = vectors(n)
    with conn.cursor() as cur:
        with cur.copy("COPY chunk_vectors (chunk_id, content_hash, version, embedding) "
                      "FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["bigint", "text", "bigint", "vector"])
            for i in range(n):
                copy.write_row((i + 1, f"bench-{i}", 1, np.asarray(vecs[i])))
    conn.execute("INSERT INTO meta (key, value) VALUES ('chunk_vectors_version', '1') "
                 "ON CONFLICT (key) DO UPDATE SET value = excluded.value")
    times["vectors_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    conn.execute("SET maintenance_work_mem = '4GB'")  # the graph built in memory
    conn.execute(CHUNK_VECTOR_INDEX)
    times["index_s"] = time.perf_counter() - t0
    conn.execute("ANALYZE")
    conn.execute("INSERT INTO meta (key, value) VALUES ('bench_loaded', %s)",
                 (json.dumps({"n": n, **times}),))
    conn.close()
    return times


def drop(url: str) -> None:
    """The size's schema gone, with what an earlier load left in it."""
    from lore.store.postgres import split_url

    conn = raw(url)
    conn.execute(f'DROP SCHEMA IF EXISTS "{split_url(url)[1]}" CASCADE')
    conn.close()


def project_of(session_start: int) -> str:
    return f"/work/p{(session_start // PER_SESSION) % PROJECTS}"


def loaded(url: str, n: int) -> dict[str, float] | None:
    from lore.store.postgres import split_url

    conn = raw(url)
    try:
        exists = conn.execute("SELECT 1 FROM pg_tables WHERE schemaname = %s AND "
                              "tablename = 'meta'", (split_url(url)[1],)).fetchone()
        row = conn.execute("SELECT value FROM meta WHERE key = 'bench_loaded'").fetchone() \
            if exists else None
    finally:
        conn.close()
    done = json.loads(row[0]) if row else None
    return done if done and done.get("n") == n else None


def sizes(url: str) -> dict[str, float]:
    from lore.store.postgres.migrations import CHUNK_VECTOR_INDEX_NAME

    conn = raw(url)
    try:
        mb = {name: conn.execute(f"SELECT pg_total_relation_size('{name}') / 1e6").fetchone()[0]
              for name in ("chunks", "chunks_fts", "chunk_vectors")}
        mb["vector_index"] = conn.execute(
            f"SELECT pg_relation_size('{CHUNK_VECTOR_INDEX_NAME}') / 1e6").fetchone()[0]
        mb["keyword_index"] = conn.execute(
            "SELECT pg_relation_size('idx_chunks_fts') / 1e6").fetchone()[0]
        mb["shared_buffers"] = conn.execute("SHOW shared_buffers").fetchone()[0]
    finally:
        conn.close()
    return mb


def server_memory(data: Path) -> tuple[float, float]:
    """The resident and proportional set sizes (MB) of the server and all its processes."""
    root = int((data / "postmaster.pid").read_text().split()[0])
    pids = [root]
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]) == root:
                    pids.append(int(p.name))
            except (OSError, IndexError, ValueError):
                continue
    rss = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            continue
    return rss / 1024, pss / 1024


def measure(url: str, home: Path, data: Path, n: int, queries: list[str]) -> dict[str, Any]:
    from lore.api import Lore
    from lore.config import Config, Settings
    from lore.recall.conversations import query_terms

    settings = Settings(config=Config.model_validate({"database": url}), home=home,
                        config_path=home / "config.yaml")
    out: dict[str, Any] = {}
    with Lore.open(settings) as lore:
        lore.engine.embedding.record_model()
        conv = lore.conversations
        store, cfg = conv.store, conv.tuning
        embed = lore.engine.embedding.query_function()
        embed("warm up")
        for q in queries[:5]:
            conv.search(q, project=None)
            conv.search(q, project=ONE)

        def timed(fn: Any) -> list[float]:
            ms = []
            for q in queries:
                t = time.perf_counter()
                fn(q)
                ms.append((time.perf_counter() - t) * 1000)
            return ms

        out["embed"] = timed(embed)
        out["every"] = timed(lambda q: conv.search(q, project=None, limit=5))
        out["project"] = timed(lambda q: conv.search(q, project=ONE, limit=5))
        weights = (cfg.text_weight, 0.0, cfg.date_weight, cfg.context_weight)

        def keyword(q: str, project: str | None) -> list[tuple[int, float]]:
            return store.keyword_search(query_terms(q, [])[0], weights, cfg.candidates, project,
                                        cfg.keyword_max_postings)

        out["keyword"] = timed(lambda q: keyword(q, None))
        out["keyword_project"] = timed(lambda q: keyword(q, ONE))
        qv = {q: np.asarray(embed(q), dtype=np.float32).tobytes() for q in queries}
        hits: dict[str, list[int]] = {}
        hits_p: dict[str, list[int]] = {}

        def vsearch(q: str, project: str | None, into: dict[str, list[int]]) -> None:
            into[q] = [c for c, _ in store.nearest(qv[q], cfg.candidates, project) or []][:10]

        out["vector"] = timed(lambda q: vsearch(q, None, hits))
        out["vector_project"] = timed(lambda q: vsearch(q, ONE, hits_p))
        out["rss"], out["pss"] = server_memory(data)  # with the searching connection open
    mat = vectors(n)
    mine = np.flatnonzero((np.arange(n) // PER_SESSION) % PROJECTS == int(ONE[-1]))
    rec, rec_p = [], []
    for q in queries:
        v = np.frombuffer(qv[q], dtype=np.float32)
        sims = np.empty(n, dtype=np.float32)
        for s in range(0, n, 200_000):
            sims[s:s + 200_000] = mat[s:s + 200_000] @ v
        rec.append(len(set((np.argsort(-sims)[:10] + 1).tolist()) & set(hits[q])) / 10)
        top_p = mine[np.argsort(-sims[mine])[:10]] + 1
        rec_p.append(len(set(top_p.tolist()) & set(hits_p[q])) / 10)
    out["recall"], out["recall_project"] = float(np.mean(rec)), float(np.mean(rec_p))
    return out


ROWS = [
    ("warm search through the product, every project", lambda r: fmt(r["every"])),
    ("warm search, one project (a seventh)", lambda r: fmt(r["project"])),
    ("keyword stage alone, every project", lambda r: fmt(r["keyword"])),
    ("keyword stage alone, one project", lambda r: fmt(r["keyword_project"])),
    ("vector stage alone (`nearest`, top 100), every project", lambda r: fmt(r["vector"])),
    ("vector stage alone, one project", lambda r: fmt(r["vector_project"])),
    ("recall@10 of the vector stage vs exact search, every project / one project",
     lambda r: f"{r['recall']:.3f} / {r['recall_project']:.3f}"),
    ("query embedding alone (baseline, same run)", lambda r: fmt(r["embed"])),
    ("search ÷ embedding (medians, every project)",
     lambda r: f"{statistics.median(r['every']) / statistics.median(r['embed']):.1f}×"),
    ("server memory after the searches, the searching connection open: resident / "
     "proportional (all its processes)",
     lambda r: f"{r['rss']:,.0f} / {r['pss']:,.0f} MB"),
    ("shared_buffers", lambda r: r["sizes"]["shared_buffers"]),
    ("chunks + keyword table / vector table (with their indexes)",
     lambda r: f"{r['sizes']['chunks'] + r['sizes']['chunks_fts']:,.0f} / "
               f"{r['sizes']['chunk_vectors']:,.0f} MB"),
    ("vector index / keyword (GIN) index",
     lambda r: f"{r['sizes']['vector_index']:,.0f} / {r['sizes']['keyword_index']:,.0f} MB"),
    ("load: texts (COPY) / keyword index / vectors (COPY) / vector index build",
     lambda r: " / ".join(f"{r['load'][k]:,.0f} s" for k in
                          ("texts_s", "keywords_s", "vectors_s", "index_s"))),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--data", type=Path, help="the server's folder, kept and reused "
                    "(default: a temporary folder, removed at the end)")
    ap.add_argument("--load-only", action="store_true")
    ap.add_argument("--reload", action="store_true", help="load the sizes again")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import pgserver

    warnings.simplefilter("ignore")
    folder = args.data or Path(tempfile.mkdtemp(prefix="lore-pg-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(folder / "data", cleanup_mode="stop")
    queries = make_queries(args.queries)
    results: dict[int, dict[str, Any]] = {}
    try:
        for n in args.sizes:
            uri = server.get_uri()
            url = f"{uri}{'&' if '?' in uri else '?'}schema=bench_{n}"
            done = None if args.reload else loaded(url, n)
            if done is None:
                drop(url)
                done = load(url, n)
            print(f"# {n:,}: loaded {done}", file=sys.stderr, flush=True)
            if args.load_only:
                continue
            home = Path(tempfile.mkdtemp(prefix="lore-pg-home-"))
            r = measure(url, home, folder / "data", n, queries)
            shutil.rmtree(home, ignore_errors=True)
            r["sizes"], r["load"] = sizes(url), done
            results[n] = r
            print(f"# {n:,}: " + ", ".join(f"{k} {v}" for k, v in r.items()
                                           if not isinstance(v, list)), file=sys.stderr,
                  flush=True)
    finally:
        server.cleanup()
        if args.data is None:
            shutil.rmtree(folder, ignore_errors=True)
    if not results:
        return
    print(f"{args.queries} queries, median / p90 ms\n")
    print("| | " + " | ".join(f"{n:,} chunks" for n in results) + " |")
    print("|---|" + "---|" * len(results))
    for label, cell in ROWS:
        print(f"| {label} | " + " | ".join(str(cell(results[n])) for n in results) + " |")
    report = Report("postgres_scale_bench", **vars(args))
    for n, r in results.items():
        report.record(r, f"{n:,} chunks")
    report.write()


if __name__ == "__main__":
    main()
