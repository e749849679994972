"""Search benchmarks: warm hybrid search latency, vector-stage recall, cold CLI, memory, import.

    python -m bench.search_bench                 # 10k and 100k lessons, everything
    python -m bench.search_bench --sizes 10000 --queries 100

Lessons come from bench/corpus.py; their embeddings (the real default model) are
cached in bench/.cache, so only the first run spends minutes embedding. Query
embeddings are always computed live: they are part of the measured time.
Results are printed as Markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.corpus import corpus_vectors, make_corpus, make_queries
from bench.harness import Report, pct
from lore.api import Lore
from lore.config import EmbeddingConfig, Settings, load_config
from lore.embed import create_embedder, document_text
from lore.ids import new_id
from lore.models import Filters
from lore.recall.hybrid import SEARCH
from lore.recall.vectors import MemoryIndex, candidates


class CachedEmbedder:
    """Documents from the cache, queries from the real model (timed as in production)."""

    def __init__(self, real, table: dict[str, np.ndarray]) -> None:
        self.real = real
        self.name = real.name
        self.table = table

    @property
    def dimensions(self) -> int:
        return self.real.dimensions

    def embed_documents(self, texts):
        return np.vstack([self.table[t] for t in texts])

    def embed_query(self, text):
        return self.real.embed_query(text)


def summary(ms):
    return f"median {statistics.median(ms):.1f} ms, p90 {pct(ms, 0.9):.1f} ms"


def build(home: Path, n: int, real) -> tuple[Settings, float]:
    docs = make_corpus(n)
    vecs = corpus_vectors(docs, real, "minilm-int8") if n <= 100_000 else None
    table = {document_text(d.title, d.content): vecs[i] for i, d in enumerate(docs)}
    os.environ["LORE_HOME"] = str(home)
    settings = load_config()
    lines = [json.dumps({"id": new_id(), "title": d.title, "content": d.content,
                         "tags": list(d.tags), "kind": "learning"}) for d in docs]
    start = time.perf_counter()
    with Lore.open(settings, embedder=CachedEmbedder(real, table)) as lore:
        lore.lessons.import_lines(lines)
    return settings, time.perf_counter() - start


def warm_search(settings: Settings, real, queries: list[str], vector_index: str) -> dict:
    """A long-running process (MCP server, worker): model and vectors loaded up front."""
    settings.tuning["search.vector_index"] = vector_index  # a tuning constant, varied
    out: dict = {}
    with Lore.open(settings, embedder=real) as lore:
        t0 = time.perf_counter()
        lore.search.warm()
        out["warm_up"] = (time.perf_counter() - t0) * 1000
        for q in queries[:5]:
            lore.search.query(q)
        total, embed_ms = [], []
        for q in queries:
            t0 = time.perf_counter()
            real.embed_query(q)
            embed_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            lore.search.query(q)
            total.append((time.perf_counter() - t0) * 1000)
        out["hybrid"] = total
        out["embed"] = embed_ms
        filtered = []
        for q in queries[: len(queries) // 2]:
            t0 = time.perf_counter()
            lore.search.query(q, Filters(tags=("postgres", "redis", "docker")))
            filtered.append((time.perf_counter() - t0) * 1000)
        out["filtered"] = filtered
    settings.tuning.pop("search.vector_index", None)
    return out


def vector_stage(settings: Settings, real, queries: list[str]) -> dict:
    """The vector stage alone: exact in-memory scan vs sqlite-vec int8 KNN + exact re-scoring."""
    cfg = SEARCH
    with Lore.open(settings, embedder=real) as lore:
        store = lore.store
        qvecs = [real.embed_query(q) for q in queries]
        memory = MemoryIndex()
        t0 = time.perf_counter()
        memory.sync(store)
        load_ms = (time.perf_counter() - t0) * 1000
        recalls, t_mem, t_sql = [], [], []
        for qv in qvecs:
            t0 = time.perf_counter()
            exact = candidates(store, memory, qv, cfg.candidates, Filters(statuses=()), False, mode="memory",
                               memory_below=0, exact_below=0, narrow=False)
            t_mem.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            got = candidates(store, MemoryIndex(), qv, cfg.candidates, Filters(statuses=()), False,
                             mode="sqlite-vec",
                             memory_below=0, exact_below=0, narrow=False)
            t_sql.append((time.perf_counter() - t0) * 1000)
            recalls.append(len({s for s, _ in exact[:10]} & {s for s, _ in got[:10]}) / 10)
    return {"recall": float(np.mean(recalls)), "memory": t_mem, "sqlite": t_sql,
            "load_ms": load_ms}


def cold_cli(home: Path, queries: list[str], runs: int) -> list[float]:
    env = dict(os.environ, LORE_HOME=str(home))
    lore_bin = str(Path(sys.executable).parent / "lore")
    times = []
    for q in queries[:runs]:
        t0 = time.perf_counter()
        subprocess.run([lore_bin, "search", q, "--json"], env=env, check=True,
                       capture_output=True)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def peak_memory(home: Path, queries: list[str], warm: bool = False) -> float:
    # VmHWM, not ru_maxrss: on Linux a child's ru_maxrss starts from the parent's peak.
    code = (
        "import resource, sys\n"
        "from lore.api import Lore\nfrom lore.config import load_config\n"
        "with Lore.open(load_config()) as lore:\n"
        + ("    lore.search.warm()\n" if warm else "") +
        f"    for q in {queries[:50]!r}:\n"
        "        lore.search.query(q)\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
        "print(int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, LORE_HOME=str(home)),
                         check=True, capture_output=True, text=True)
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def import_rate(n: int) -> float:
    """`lore admin import` of n lessons, real model embedding included: lessons per second."""
    docs = make_corpus(n, seed=99)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        path.write_text("".join(json.dumps({"id": new_id(), "title": d.title, "content": d.content,
                                            "tags": list(d.tags)}) + "\n" for d in docs))
        env = dict(os.environ, LORE_HOME=str(Path(tmp) / "home"))
        lore_bin = str(Path(sys.executable).parent / "lore")
        t0 = time.perf_counter()
        subprocess.run([lore_bin, "admin", "import", str(path)], env=env, check=True,
                       capture_output=True)
        return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--cold-runs", type=int, default=15)
    ap.add_argument("--import-size", type=int, default=10000)
    args = ap.parse_args()
    real = create_embedder(EmbeddingConfig())
    real.embed_query("warm up")
    queries = make_queries(args.queries)
    report = Report("search_bench", **vars(args))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, {platform.platform()}")
    for n in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            settings, built = build(home, n, real)
            print(f"\n## {n:,} lessons (built from cached vectors in {built:.0f} s)")
            for mode in ("auto", "sqlite-vec"):
                r = warm_search(settings, real, queries, mode)
                print(f"- warm hybrid search, vector_index={mode}: {summary(r['hybrid'])}; "
                      f"with a tag filter {summary(r['filtered'])}; query embedding alone "
                      f"{summary(r['embed'])} (warm-up {r['warm_up']:.0f} ms)")
                at = f"{n:,} lessons"
                report.add(f"warm hybrid search, vector_index={mode}, {at}", r["hybrid"], quiet=True,
                           baseline=f"query embedding alone, {at}")
                report.add(f"... with a tag filter, vector_index={mode}, {at}", r["filtered"],
                           quiet=True, baseline=f"query embedding alone, {at}")
                if mode == "auto":
                    report.add(f"query embedding alone, {at}", r["embed"], quiet=True)
            v = vector_stage(settings, real, queries)
            print(f"- vector stage, top {SEARCH.candidates}: exact scan of the "
                  f"in-memory matrix {summary(v['memory'])} (loading it: {v['load_ms']:.0f} ms); "
                  f"sqlite-vec int8 KNN + exact re-scoring {summary(v['sqlite'])}, recall@10 vs "
                  f"exact {v['recall']:.3f}")
            report.add(f"vector stage: exact scan of the in-memory matrix, {at}", v["memory"],
                       quiet=True, load_ms=round(v["load_ms"], 1))
            report.add(f"vector stage: sqlite-vec int8 KNN + exact re-scoring, {at}", v["sqlite"],
                       quiet=True, recall_at_10=round(v["recall"], 3))
            cold = cold_cli(home, queries, args.cold_runs)
            print(f"- `lore search` cold process: {summary(cold)}")
            report.add(f"lore search as a cold process, {at}", cold, quiet=True)
            print(f"- peak RSS of a process doing 50 searches: {peak_memory(home, queries):.0f} MB "
                  f"one-shot, {peak_memory(home, queries, warm=True):.0f} MB with the vectors "
                  "held in memory")
            print(f"- database size: {(home / 'lore.db').stat().st_size / 1e6:.0f} MB")
            report.value(f"database size, {at}", round((home / "lore.db").stat().st_size / 1e6),
                         unit="MB")
    if args.import_size:
        rate = import_rate(args.import_size)
        print(f"\n## import\n- `lore admin import` of {args.import_size:,} lessons with real "
              f"embeddings: {rate:.0f} lessons/s")
        report.value(f"lore admin import of {args.import_size:,} lessons", round(rate), unit="lessons/s")
    print(f"\n(this process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)")
    report.write()


if __name__ == "__main__":
    main()
