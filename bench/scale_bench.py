"""Conversation memory at scale: search at 100,000 and 1,000,000 chunks on SQLite.

    python -m bench.scale_bench [--sizes 100000 1000000] [--queries 200] [--cold 5]

The corpus is bench/scale_corpus.py's (real embeddings of 20,000 texts, perturbed to the size;
queries embedded live by the real model). Each size's home (database and chunk index) is built
once under $LORE_BENCH_CACHE (default ~/.cache/lore-bench/home-N) through the product's own
methods: turns stored with `add_turns` (one chunk a turn, sessions of 1,000 turns in seven
projects), vectors stored with `put_vectors`, the index built by `refresh_index`.

Reported per size, with the query embedding alone as the baseline of the same run:
warm search (every project, one project), the keyword stage alone, the vector stage alone with
its recall@10 against exact search over the same vectors, the first search of a fresh
`lore recall conversations` process, and the peak resident memory of a process that ran the
warm searches.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.corpus import make_corpus, make_queries
from bench.harness import Report, pct
from bench.scale_corpus import CACHE, chunk_text, vectors
from lore.recall.vectors import ChunkIndex

PER_SESSION = 1000
PROJECTS = 7
LORE = str(Path(sys.executable).parent / "lore")


def fmt(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.1f}, p90 {pct(xs, 0.9):.1f} ms"


def home_for(n: int) -> Path:
    return CACHE / f"home-{n}"


def build(n: int, texts_only: bool = False) -> None:
    """The database and index of ``n`` chunks (skipped when already built)."""
    from lore.api import Lore
    from lore.config import load_config

    home = home_for(n)
    done = home / "built.json"
    if done.exists():
        reindex(n)
        return
    home.mkdir(parents=True, exist_ok=True)
    os.environ["LORE_HOME"] = str(home)
    t0 = time.perf_counter()
    with Lore.open(load_config()) as lore:
        conv = lore.conversations
        if conv.stats()["chunks"] < n:
            bulk_texts(lore, n, t0)
        texts = time.perf_counter() - t0
        if texts_only or not (home / "texts.json").exists():
            (home / "texts.json").write_text(json.dumps({"texts_s": texts}))
        if texts_only:
            return
        texts = json.loads((home / "texts.json").read_text())["texts_s"]
        vecs = vectors(n)
        store = conv.store
        t1 = time.perf_counter()
        while todo := store.chunks_needing_vectors(20_000):
            store.put_vectors([(cid, h, vecs[cid - 1].tobytes()) for cid, *_, h in todo])
        lore.engine.embedding.record_model()
        stored = time.perf_counter() - t1
        t2 = time.perf_counter()
        print("  index:", conv.refresh_index(), flush=True)  # none below 20,000 vectors
        indexed = time.perf_counter() - t2
    db = next(home.glob("*.db"))
    record = {"texts_s": texts, "vectors_s": stored, "index_s": indexed,
              "db_mb": db.stat().st_size / 1e6,
              "index_mb": index_mb(home)}
    done.write_text(json.dumps(record))
    print(f"  built {n:,}: {record}", flush=True)


def index_mb(home: Path) -> float:
    return sum(p.stat().st_size for p in home.glob(f"*{ChunkIndex.SUFFIX}")) / 1e6


def reindex(n: int) -> None:
    """A database built by an earlier version: its chunk index brought to this version's kind
    (the texts and vectors stay)."""
    from lore.api import Lore
    from lore.config import load_config

    home = home_for(n)
    if n < ChunkIndex.MIN_SIZE or index_mb(home):
        return
    os.environ["LORE_HOME"] = str(home)
    with Lore.open(load_config()) as lore:
        t = time.perf_counter()
        print("  index:", lore.conversations.refresh_index(), flush=True)
        took = time.perf_counter() - t
    record = json.loads((home / "built.json").read_text())
    record |= {"index_s": took, "index_mb": index_mb(home)}
    (home / "built.json").write_text(json.dumps(record))
    print(f"  indexed {n:,}: {record}", flush=True)


def bulk_texts(lore, n: int, t0: float) -> None:  # type: ignore[no-untyped-def]
    """Sessions and chunks written in bulk, as the import would leave them (text, two turns of
    context each side, the date in words, the keyword index): per-turn imports through
    `add_turns` run at a few hundred chunks a second on this machine, hours for a million."""
    docs = make_corpus(n)
    texts = [chunk_text(d) for d in docs]
    conn = lore.store.conn
    for s in range(0, n, PER_SESSION):
        sid, project = f"session-{s}", f"/work/p{(s // PER_SESSION) % PROJECTS}"
        rows, fts = [], []
        end = min(s + PER_SESSION, n)
        for i in range(s, end):
            before, after = texts[max(s, i - 2):i], texts[i + 1:min(end, i + 3)]
            rows.append((i + 1, sid, project, i + 1, i + 1, "2026-10-01T00:00:00Z",
                         "2026-10-01T00:00:00Z", "user", texts[i], json.dumps(before),
                         json.dumps(after), f"bench-{i}"))
            fts.append((i + 1, texts[i], "user", "1 October, 2026", "\n".join(before + after)))
        with lore.store.atomic():
            conn.execute("INSERT INTO sessions (id, agent, project, device, started_at, ended_at, "
                         "message_count, speakers) VALUES (?, 'bench', ?, 'bench', ?, ?, ?, 'user')",
                         (sid, project, "2026-10-01T00:00:00Z", "2026-10-01T00:00:00Z", end - s))
            conn.executemany("INSERT INTO chunks (id, session_id, project, first_seq, last_seq, "
                             "started_at, ended_at, speakers, text, ctx_before, ctx_after, "
                             "content_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            conn.executemany("INSERT INTO chunks_fts (rowid, text, speakers, date, context) "
                             "VALUES (?, ?, ?, ?, ?)", fts)
        if (s // PER_SESSION) % 100 == 0:
            print(f"  {end:,} chunks stored, {time.perf_counter() - t0:.0f} s", flush=True)
    conn.execute("ANALYZE")


WARM = r"""
import json, os, resource, sys, time
import numpy as np
from lore.api import Lore
from lore.config import load_config
from lore.recall.conversations import query_terms
from bench.corpus import make_queries  # the child runs in the repository's root
from bench.scale_corpus import vectors
n, nq = int(sys.argv[2]), int(sys.argv[3])
out = {}
with Lore.open(load_config()) as lore:
    conv = lore.conversations
    store, cfg = conv.store, conv.tuning
    qs = make_queries(nq)
    embed = lore.engine.embedding.query_function()
    embed("warm up")
    t = time.perf_counter()
    conv.search(qs[0], project=None)
    out["first_ms"] = (time.perf_counter() - t) * 1000
    for q in qs[:5]:
        conv.search(q, project=None)
    def timed(fn):
        ms = []
        for q in qs:
            t = time.perf_counter(); fn(q); ms.append((time.perf_counter() - t) * 1000)
        return ms
    out["embed"] = timed(embed)
    out["every"] = timed(lambda q: conv.search(q, project=None, limit=5))
    out["project"] = timed(lambda q: conv.search(q, project="/work/p3", limit=5))
    weights = (cfg.text_weight, 0.0, cfg.date_weight, cfg.context_weight)
    def keyword(q, project):
        return store.keyword_search(query_terms(q, [])[0], weights, cfg.candidates, project,
                                    cfg.keyword_max_postings)
    out["keyword"] = timed(lambda q: keyword(q, None))
    out["keyword_project"] = timed(lambda q: keyword(q, "/work/p3"))
    qv = {q: np.asarray(embed(q), dtype=np.float32) for q in qs}
    conv.vectors.sync(store) if conv.index.usable(store) is None else None
    def vsearch(q, depth, project):  # the index, or the exact scan below 20,000 chunks
        found = conv.index.search(store, qv[q], depth, project)
        if found is None:
            found = conv.vectors.search(qv[q], depth, store.chunk_ids(project) if project else None)
        return found
    out["vector"] = timed(lambda q: vsearch(q, cfg.candidates, None))
    out["vector_project"] = timed(lambda q: vsearch(q, cfg.candidates, "/work/p3"))
    out["index_used"] = conv.index.usable(store) is not None
    # The product asks for cfg.candidates (100) and fuses them; recall@10 is of their top 10.
    depth = cfg.candidates
    hits = {q: [c for c, _ in vsearch(q, depth, None)][:10] for q in qs}
    hits_p = {q: [c for c, _ in vsearch(q, depth, "/work/p3")][:10] for q in qs}
out["hwm_mb"] = int([l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]) // 1024
# Recall@10 against exact search over the same vectors (chunk id = row + 1).
mat = vectors(n)
mine = np.flatnonzero((np.arange(n) // 1000) % 7 == 3)
rec, rec_p = [], []
for q in qs:
    sims = np.empty(n, dtype=np.float32)
    for s in range(0, n, 200_000):
        sims[s:s + 200_000] = mat[s:s + 200_000] @ qv[q]
    top = set((np.argsort(-sims)[:10] + 1).tolist())
    rec.append(len(top & set(hits[q])) / 10)
    sp = sims[mine]
    top_p = set((mine[np.argsort(-sp)[:10]] + 1).tolist())
    rec_p.append(len(top_p & set(hits_p[q])) / 10)
out["recall"], out["recall_project"] = float(np.mean(rec)), float(np.mean(rec_p))
print(json.dumps(out))
"""


def read_through(home: Path) -> float:
    """Read the database and index files once, so the warm searches find them in the
    operating system's page cache (as on a machine where they were used lately); seconds."""
    t = time.perf_counter()
    for p in [*home.glob("*.db"), *home.glob(f"*{ChunkIndex.SUFFIX}")]:
        with p.open("rb") as fh:
            while fh.read(1 << 24):
                pass
    return time.perf_counter() - t


REPORT = Report("scale_bench")


def measure(n: int, queries: int, cold: int, warm_cache: bool = False) -> None:
    home = home_for(n)
    env = dict(os.environ, LORE_HOME=str(home))
    cache = f"page cache filled first ({read_through(home):.0f} s)" if warm_cache else \
        "page cache as the previous runs left it"
    proc = subprocess.run([sys.executable, "-c", WARM, str(Path(__file__).parent), str(n),
                           str(queries)], env=env, capture_output=True, text=True, check=True,
                          cwd=Path(__file__).parents[1])
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    colds = []
    for q in make_queries(cold, seed=99):
        t = time.perf_counter()
        subprocess.run([LORE, "recall", "conversations", q, "--project", "all"], env=env,
                       capture_output=True, check=True)
        colds.append(time.perf_counter() - t)
    base = []
    for q in make_queries(cold, seed=99):  # a fresh process that loads the model, embeds, exits
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import sys\nfrom lore.config import "
                        "EmbeddingConfig\nfrom lore.embed import create_embedder\n"
                        "create_embedder(EmbeddingConfig()).embed_query(sys.argv[1])", q],
                       capture_output=True, check=True)
        base.append(time.perf_counter() - t)
    built = json.loads((home / "built.json").read_text())
    print(f"\n### {n:,} chunks, {cache} (database {built['db_mb']:,.0f} MB, index file "
          f"{built['index_mb']:,.0f} MB; built: texts {built['texts_s']:.0f} s, vectors "
          f"{built['vectors_s']:.0f} s, index {built['index_s']:.0f} s)\n")
    print("| | result |\n|---|---|")
    print(f"| warm search, every project | {fmt(r['every'])} |")
    print(f"| warm search, one project (1/7) | {fmt(r['project'])} |")
    print(f"| keyword stage alone, every project / one project | {fmt(r['keyword'])} / "
          f"{fmt(r['keyword_project'])} |")
    print(f"| vector stage alone (index + exact re-scoring), every project / one project | "
          f"{fmt(r['vector'])} / {fmt(r['vector_project'])} |")
    print(f"| recall@10 of the vector stage vs exact search, every project / one project | "
          f"{r['recall']:.3f} / {r['recall_project']:.3f} |")
    print(f"| query embedding alone (baseline, same run) | {fmt(r['embed'])} |")
    print(f"| search ÷ embedding (medians) | "
          f"{statistics.median(r['every']) / statistics.median(r['embed']):.1f}× |")
    print(f"| first search of the warm process (model loaded) | {r['first_ms']:.0f} ms |")
    print(f"| `lore recall conversations` as a fresh process ({cold} runs) | median "
          f"{statistics.median(colds):.2f} s, max {max(colds):.2f} s |")
    print(f"| baseline: a fresh process that loads the model and embeds the query | median "
          f"{statistics.median(base):.2f} s, max {max(base):.2f} s |")
    print(f"| peak resident memory of the searching process | {r['hwm_mb']} MB |")
    print(f"| index used (no vectors loaded into memory) | {r['index_used']} |", flush=True)
    REPORT.record({**r, "lore recall conversations as a fresh process (s)": colds,
                   "baseline: a fresh process that loads the model and embeds the query (s)": base},
                  f"{n:,} chunks")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--cold", type=int, default=5)
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--warm-cache", action="store_true",
                    help="read the database and index files before the warm searches")
    ap.add_argument("--texts-only", action="store_true", help="store the texts, nothing else")
    args = ap.parse_args()
    for n in args.sizes:
        build(n, args.texts_only)
        if not (args.build_only or args.texts_only):
            measure(n, args.queries, args.cold, args.warm_cache)
    if REPORT.rows:
        REPORT.params.update(vars(args))
        REPORT.write()


if __name__ == "__main__":
    main()
