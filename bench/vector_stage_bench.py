"""Candidates for the conversation vector stage at 100,000 and 1,000,000 chunks.

    python -m bench.vector_stage_bench [--sizes 100000 1000000] [--queries 200]

Vectors from bench/scale_corpus.py (real embeddings of 20,000 texts, perturbed to 1M), queries
embedded live by the real model. For each candidate: build time, search median and p90 (one
query at a time, as the product searches) and recall@10 against exact float32 search over the same
vectors, every project and one project (a seventh of the chunks). The candidates:

- ``exact``: a float32 matrix in memory, scanned with one matrix-vector product (the truth;
  1.5 GB at 1M, over the memory budget);
- ``binary``: sign bits in memory (48 bytes a vector), Hamming distance by popcount, the best
  ``R`` re-scored exactly from the float32 vectors;
- ``lists``: the product's stage — faiss inverted lists (≈√n k-means lists, 8-bit codes) in a
  file opened as a memory map, the nearest lists read, the best 200 re-scored exactly; one
  project as a key range, as the product does;
- ``usearch``: an HNSW graph over int8 vectors in a file (usearch, when installed: the stage
  before the lists), opened as a memory map, the best ``R`` re-scored exactly;
- ``sqlite-vec bit``: sqlite-vec's binary vec0 index (KNN by Hamming) then exact re-scoring
  (100,000 only: it scans every row).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.corpus import make_queries
from bench.harness import Report, pct
from bench.scale_corpus import vectors

K = 10
PROJECTS = 7


REPORT = Report("vector_stage_bench")
SIZE = [0]  # the size being measured, for the rows' labels


def line(name: str, times: list[float], recall: float, extra: str = "") -> None:
    REPORT.add(f"{name}, {SIZE[0]:,} vectors", times, quiet=True, recall_at_10=round(recall, 3))
    print(f"| {name} | {statistics.median(times):.1f} | {pct(times, 0.9):.1f} | {recall:.3f} |"
          f" {extra} |", flush=True)


def exact_top(mat: np.ndarray, q: np.ndarray, k: int, rows: np.ndarray | None = None) -> np.ndarray:
    if rows is None:
        sims = np.empty(len(mat), dtype=np.float32)
        for s in range(0, len(mat), 200_000):
            sims[s:s + 200_000] = mat[s:s + 200_000] @ q
        idx = np.argpartition(-sims, k)[:k]
        return idx[np.argsort(-sims[idx])]
    sims = mat[rows] @ q
    idx = np.argpartition(-sims, k)[:k]
    return rows[idx[np.argsort(-sims[idx])]]


def rescore(mat: np.ndarray, q: np.ndarray, cand: np.ndarray, k: int) -> np.ndarray:
    cand = np.sort(cand)  # reading in row order, as the database would
    sims = mat[cand] @ q
    order = np.argsort(-sims)[:k]
    return cand[order]


def recall(got: np.ndarray, truth: np.ndarray) -> float:
    return len(set(got[:K].tolist()) & set(truth[:K].tolist())) / K


def run(n: int, qvecs: np.ndarray, rs: list[int], efs: list[int], graph_max: int,
        dtypes: tuple[str, ...] = ("i8",)) -> None:
    SIZE[0] = n
    mat = np.ascontiguousarray(vectors(n))
    project = np.arange(n) % PROJECTS
    mine = np.flatnonzero(project == 3)
    truth = [exact_top(mat, q, K) for q in qvecs]
    truth_p = [exact_top(mat, q, K, mine) for q in qvecs]
    print(f"\n### {n:,} vectors\n")
    print("| candidate | median ms | p90 ms | recall@10 | notes |")
    print("|---|---|---|---|---|")
    times = []
    for q in qvecs:
        t = time.perf_counter()
        exact_top(mat, q, 100)
        times.append((time.perf_counter() - t) * 1000)
    line("exact float32 scan in memory (top 100)", times, 1.0,
         f"{mat.nbytes / 1e6:,.0f} MB held")

    # binary codes + popcount, re-scored exactly
    t = time.perf_counter()
    bits = np.packbits(mat > 0, axis=1).view(np.uint64)
    built = time.perf_counter() - t
    for r in rs:
        times, rec, rec_p = [], [], []
        for q, tr, tp in zip(qvecs, truth, truth_p, strict=True):
            t0 = time.perf_counter()
            qb = np.packbits(q > 0).view(np.uint64)
            dist = np.bitwise_count(bits ^ qb).sum(axis=1, dtype=np.int32)
            cand = np.argpartition(dist, r)[:r]
            got = rescore(mat, q, cand, 100)
            times.append((time.perf_counter() - t0) * 1000)
            rec.append(recall(got, tr))
            dp = dist[mine]
            cp = mine[np.argpartition(dp, r)[:r]]
            rec_p.append(recall(rescore(mat, q, cp, 100), tp))
        line(f"binary codes in memory, Hamming, re-score {r}", times, float(np.mean(rec)),
             f"one project {np.mean(rec_p):.3f}; {bits.nbytes / 1e6:.0f} MB; built {built:.1f} s")

    lists(n, mat, qvecs, truth, truth_p, project)
    if n <= graph_max:
        for dtype in dtypes:
            graph(n, mat, qvecs, truth, truth_p, project, efs, dtype)
    if n <= 200_000:
        sqlite_vec_bits(mat, qvecs, truth)
    print(f"\npeak RSS so far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def lists(n, mat, qvecs, truth, truth_p, project) -> None:  # type: ignore[no-untyped-def]
    """faiss inverted lists of 8-bit codes as the product builds them (ChunkIndex): a random
    sample trains ≈√n lists, keys carry the project; several numbers of lists read."""
    from lore.recall.vectors import ChunkIndex, faiss_module

    faiss = faiss_module()
    nlist = ChunkIndex.lists_for(n)
    rng = np.random.default_rng(n)
    sample = np.ascontiguousarray(mat[np.sort(rng.choice(
        n, min(n, nlist * ChunkIndex.SAMPLE_PER_LIST), replace=False))])
    index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(mat.shape[1]), mat.shape[1], nlist,
                                          faiss.ScalarQuantizer.QT_8bit,
                                          faiss.METRIC_INNER_PRODUCT)
    t = time.perf_counter()
    faiss.omp_set_num_threads(2)
    index.train(sample)
    keys = (project.astype(np.int64) << ChunkIndex.PROJECT_SHIFT) | np.arange(n, dtype=np.int64)
    for s in range(0, n, 100_000):
        index.add_with_ids(np.ascontiguousarray(mat[s:s + 100_000]), keys[s:s + 100_000])
    faiss.omp_set_num_threads(1)
    built = time.perf_counter() - t
    mask = (1 << ChunkIndex.PROJECT_SHIFT) - 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chunks.faiss"
        faiss.write_index(index, str(path))
        size = path.stat().st_size
        del index
        view = faiss.read_index(str(path), faiss.IO_FLAG_MMAP)
        chosen = ChunkIndex.probes_for(nlist, n)
        for probes in sorted({max(1, chosen // 4), max(1, chosen // 2), chosen, min(nlist, chosen * 2)}):
            for one in (False, True):
                params = faiss.SearchParametersIVF(nprobe=probes)
                sel = faiss.IDSelectorRange(3 << ChunkIndex.PROJECT_SHIFT, 4 << ChunkIndex.PROJECT_SHIFT)
                if one:
                    params.sel = sel
                times, rec = [], []
                for q, tr, tp in zip(qvecs, truth, truth_p, strict=True):
                    t0 = time.perf_counter()
                    _, found = view.search(q[None, :], ChunkIndex.RESCORE, params=params)
                    cand = found[0][found[0] >= 0] & mask
                    got = rescore(mat, q, cand, 100)
                    times.append((time.perf_counter() - t0) * 1000)
                    rec.append(recall(got, tp if one else tr))
                scope = "one project" if one else "every project"
                mark = " (the product's)" if probes == chosen else ""
                line(f"faiss lists, 8-bit codes: {probes} of {nlist} lists read{mark}, "
                     f"{ChunkIndex.RESCORE} re-scored, {scope}", times, float(np.mean(rec)),
                     f"built {built:.0f} s, file {size / 1e6:.0f} MB")
        del view


def graph(n, mat, qvecs, truth, truth_p, project, efs, dtype="i8") -> None:  # type: ignore[no-untyped-def]
    """usearch HNSW over int8 (or float16), saved and memory-mapped."""
    try:
        from usearch.index import Index
    except ImportError:
        print("| usearch HNSW | – | – | – | not installed (pip install usearch to compare) |")
        return

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chunks.usearch"
        index = Index(ndim=mat.shape[1], metric="cos", dtype=dtype, connectivity=16,
                      expansion_add=128)
        t = time.perf_counter()
        for s in range(0, n, 100_000):
            index.add(np.arange(s, min(s + 100_000, n)), mat[s:s + 100_000], threads=2)
        built = time.perf_counter() - t
        index.save(str(path))
        size = path.stat().st_size
        del index
        t = time.perf_counter()
        view = Index.restore(str(path), view=True)
        opened = (time.perf_counter() - t) * 1000
        for ef in efs:
            view.expansion_search = ef
            for r, share in ((100, 1), (100 * PROJECTS * 2, PROJECTS)):
                if r > ef * 2:
                    continue
                times, rec = [], []
                for q, tr, tp in zip(qvecs, truth, truth_p, strict=True):
                    t0 = time.perf_counter()
                    m = view.search(q, r, threads=1)
                    cand = np.asarray(m.keys, dtype=np.int64)
                    if share > 1:
                        cand = cand[project[cand] == 3]
                    got = rescore(mat, q, cand, 100)
                    times.append((time.perf_counter() - t0) * 1000)
                    rec.append(recall(got, tp if share > 1 else tr))
                scope = "one project" if share > 1 else "every project"
                line(f"usearch HNSW {dtype} (M 16), ef {ef}, {r} candidates re-scored, {scope}",
                     times, float(np.mean(rec)),
                     f"built {built:.0f} s, file {size / 1e6:.0f} MB, opened in {opened:.1f} ms")
        del view


def sqlite_vec_bits(mat: np.ndarray, qvecs: np.ndarray, truth: list[np.ndarray]) -> None:
    import sqlean as sqlite3
    import sqlite_vec

    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(e bit[{mat.shape[1]}])")
    t = time.perf_counter()
    conn.executemany("INSERT INTO v (rowid, e) VALUES (?, vec_quantize_binary(?))",
                     ((i + 1, mat[i].tobytes()) for i in range(len(mat))))
    built = time.perf_counter() - t
    for r in (100, 400):
        times, rec = [], []
        for q, tr in zip(qvecs, truth, strict=True):
            t0 = time.perf_counter()
            rows = conn.execute("SELECT rowid FROM v WHERE e MATCH vec_quantize_binary(?) AND k = ?",
                                (q.tobytes(), r)).fetchall()
            got = rescore(mat, q, np.asarray([x[0] - 1 for x in rows]), 100)
            times.append((time.perf_counter() - t0) * 1000)
            rec.append(recall(got, tr))
        line(f"sqlite-vec bit KNN, re-score {r}", times, float(np.mean(rec)), f"built {built:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--graph-dtype", nargs="+", default=["i8", "f16"],
                    help="the graph's vector types to compare (usearch: i8, f16, f32)")
    ap.add_argument("--rescore", type=int, nargs="+", default=[200, 500, 1000])
    ap.add_argument("--ef", type=int, nargs="+", default=[64, 128, 256])
    ap.add_argument("--graph-max", type=int, default=200_000,
                    help="build the graph only up to this size (scale_bench.py builds the 1M one)")
    args = ap.parse_args()
    from lore.config import EmbeddingConfig
    from lore.embed import create_embedder

    real = create_embedder(EmbeddingConfig())
    t = time.perf_counter()
    qvecs = np.asarray([real.embed_query(q) for q in make_queries(args.queries)], dtype=np.float32)
    per = (time.perf_counter() - t) * 1000 / args.queries
    print(f"baseline: query embedding alone {per:.1f} ms a query (mean, same run)")
    REPORT.params.update(vars(args))
    REPORT.value("query embedding alone, mean of the queries (baseline)", round(per, 2), unit="ms")
    for n in args.sizes:
        run(n, qvecs, args.rescore, args.ef, args.graph_max, tuple(args.graph_dtype))
    REPORT.write()


if __name__ == "__main__":
    main()
