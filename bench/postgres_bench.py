"""Search on the Postgres backend at scale: warm hybrid search, the HNSW vector stage and its
recall against exact search, the keyword stage, with the query embedding as the same-run
baseline.

    python -m bench.postgres_bench                          # 10k and 100k lessons, own server
    python -m bench.postgres_bench --sizes 10000 --url postgresql://me@host/db

Without --url a PostgreSQL server with pgvector is started from the pgserver wheel (the dev
extra) in a temporary folder. Lessons come from bench/corpus.py. Vectors: the real default
model embeds the first ``--embedded`` lessons (cached in bench/.cache); past that, each lesson
takes the vector of one of those, moved by Gaussian noise and renormalised (cosine about 0.9
to its origin), so the index holds 100,000 distinct vectors with the real model's spread of
directions. Query embeddings are always computed live. Prints Markdown.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.corpus import corpus_vectors, make_corpus, make_queries
from bench.harness import Report, pct
from lore.api import Lore
from lore.config import Config, EmbeddingConfig, Settings
from lore.embed import create_embedder
from lore.ids import new_id
from lore.models import Filters
from lore.recall.hybrid import SEARCH
from lore.recall.vectors import MemoryIndex, candidates
from lore.store import fts_terms, open_store


def summary(ms: list[float]) -> str:
    return f"median {statistics.median(ms):.1f}, p90 {pct(ms, 0.9):.1f} ms"


def vectors(n: int, embedded: int, real) -> np.ndarray:
    base = np.asarray(corpus_vectors(make_corpus(min(n, embedded)), real, "minilm-int8"),
                      dtype=np.float32)
    if n <= len(base):
        return base[:n]
    rng = np.random.default_rng(3)
    extra = base[np.arange(len(base), n) % len(base)]
    extra = extra + rng.standard_normal(extra.shape).astype(np.float32) * (0.48 / np.sqrt(384))
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    return np.vstack([base, extra]).astype(np.float32)


def build(url: str, n: int, vecs: np.ndarray, real) -> float:
    """Bulk load through the store's copy methods (as `lore admin migrate-to` does)."""
    docs = make_corpus(n)
    store = open_store(url)
    start = time.perf_counter()
    try:
        store.clear()
        stamp = "2026-01-01T00:00:00Z"
        cols = ["seq", "id", "title", "content", "kind", "status", "confidence", "metadata",
                "created_at", "updated_at", "content_hash", "visibility"]
        ids = [new_id() for _ in docs]
        for i in range(0, n, 5000):
            store.import_rows("lessons", cols, [
                (j + 1, ids[j], d.title, d.content, "learning", "active", "medium", "{}", stamp,
                 stamp, f"h{j}", "team") for j, d in enumerate(docs[i:i + 5000], start=i)])
            store.import_rows("lesson_tags", ["lesson_id", "tag"], [
                (ids[j], t) for j, d in enumerate(docs[i:i + 5000], start=i) for t in d.tags])
            store.import_rows("lesson_vectors", ["seq", "content_hash", "version", "embedding"], [
                (j + 1, f"h{j}", 1, vecs[j].tobytes()) for j in range(i, min(i + 5000, n))])
        store.set_meta("embedding_model", real.name)
        store.set_meta("embedding_dimensions", str(real.dimensions))
        store.set_meta("vectors_version", "1")
        store.rebuild_indexes()
        store.analyze()
    finally:
        store.close()
    return time.perf_counter() - start


def measure(url: str, home: Path, real, queries: list[str]) -> dict:
    out: dict = {}
    settings = Settings(config=Config.model_validate({"database": url}), home=home,
                        config_path=home / "config.yaml")
    for index in ("auto", "sqlite-vec"):
        settings.tuning["search.vector_index"] = index  # a tuning constant, varied
        with Lore.open(settings, embedder=real) as lore:
            if index == "auto":
                t0 = time.perf_counter()
                lore.search.warm()
                out["warm_up"] = (time.perf_counter() - t0) * 1000
            for q in queries[:5]:
                lore.search.query(q, track=False)
            total, embed = [], []
            for q in queries:
                t0 = time.perf_counter()
                real.embed_query(q)
                embed.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                lore.search.query(q, track=False)
                total.append((time.perf_counter() - t0) * 1000)
            out[f"hybrid_{index}"], out[f"embed_{index}"] = total, embed
    with Lore.open(settings, embedder=real) as lore:
        store, cfg = lore.store, lore.engine.tuned(SEARCH)
        memory = MemoryIndex()
        memory.sync(store)
        recalls, t_mem, t_hnsw, t_kw = [], [], [], []
        for q in queries:
            qv = real.embed_query(q)
            t0 = time.perf_counter()
            exact = candidates(store, memory, qv, cfg.candidates, Filters(statuses=()), False, mode="memory",
                               memory_below=0, exact_below=0, narrow=False)
            t_mem.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            got = candidates(store, MemoryIndex(), qv, cfg.candidates, Filters(statuses=()), False,
                             mode="sqlite-vec", memory_below=0, exact_below=0, narrow=False)
            t_hnsw.append((time.perf_counter() - t0) * 1000)
            recalls.append(len({s for s, _ in exact[:10]} & {s for s, _ in got[:10]}) / 10)
            t0 = time.perf_counter()
            store.keyword_search(fts_terms(q), (cfg.title_weight, cfg.tags_weight,
                                                cfg.content_weight), cfg.candidates,
                                 lore.search.resolve_filters(Filters()), cfg.keyword_max_postings,
                                 False, anti_contexts_exclude=True)
            t_kw.append((time.perf_counter() - t0) * 1000)
        out.update(recall=float(np.mean(recalls)), memory=t_mem, hnsw=t_hnsw, keyword=t_kw,
                   size=store.size_bytes())
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--embedded", type=int, default=10000,
                    help="lessons embedded by the real model; the rest are perturbed copies")
    ap.add_argument("--url", help="a postgresql:// URL (default: start a server from pgserver)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    real = create_embedder(EmbeddingConfig())
    real.embed_query("warm up")
    folder = Path(tempfile.mkdtemp(prefix="lore-pg-bench-"))
    server = None
    url = args.url
    if url is None:
        import pgserver

        server = pgserver.get_server(folder / "data", cleanup_mode="stop")
        url = server.get_uri()
    queries = make_queries(args.queries)
    results = {}
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            vecs = vectors(n, args.embedded, real)
            sep = "&" if "?" in url else "?"
            where = f"{url}{sep}schema=bench_{n}"
            built = build(where, n, vecs, real)
            # A home of its own: opening Lore makes its home private (0700), and the server's
            # data folder must stay reachable for the server's own user.
            results[n] = {"build_s": built, **measure(where, folder / "home", real, queries)}
            print(f"# {n}: built in {built:.0f} s; " + ", ".join(
                f"{k} {statistics.median(v):.1f} ms" for k, v in results[n].items()
                if isinstance(v, list)), file=sys.stderr)
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)  # the server's data and the home
    sizes = list(results)
    rows = [
        ("warm hybrid search (vectors held in memory)", lambda r: summary(r["hybrid_auto"])),
        ("warm hybrid search, vectors from the HNSW index", lambda r: summary(r["hybrid_sqlite-vec"])),
        ("query embedding alone (baseline, same run)", lambda r: summary(r["embed_auto"])),
        ("keyword stage (tsvector, ts_rank_cd), top 100", lambda r: summary(r["keyword"])),
        ("vector stage: exact scan in memory, top 100", lambda r: summary(r["memory"])),
        ("vector stage: HNSW (cosine) + exact re-scoring", lambda r: summary(r["hnsw"])),
        ("recall@10 of the HNSW stage vs exact search", lambda r: f"{r['recall']:.3f}"),
        ("loading the vectors into memory (warm-up)", lambda r: f"{r['warm_up']:.0f} ms"),
        ("bulk load + keyword index + HNSW build", lambda r: f"{r['build_s']:.0f} s"),
        ("schema size (tables and indexes)", lambda r: f"{r['size'] / 1e6:.0f} MB"),
    ]
    print("| | " + " | ".join(f"{n:,} lessons" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for label, fmt in rows:
        print(f"| {label} | " + " | ".join(fmt(results[n]) for n in sizes) + " |")
    report = Report("postgres_bench", **vars(args))
    for n in sizes:
        report.record(results[n], f"{n:,} lessons")
    report.write()


if __name__ == "__main__":
    main()
