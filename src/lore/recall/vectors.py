"""The vector stage: exact cosine similarity from an in-memory matrix, or sqlite-vec KNN.

Measured on 100,000 × 384 (docs/benchmarks.md): an exact float32 scan of a matrix in
memory takes ~5 ms, sqlite-vec's KNN 45-60 ms whatever the quantisation, and its
binary index gets slow as k grows. So a process that searches more than once keeps
the vectors in memory (exact, recall 1.0) and refreshes only the rows written since
it last looked; a one-shot process on a large database asks sqlite-vec's int8 index
for candidates and re-scores them exactly instead of loading 150 MB first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np

from lore.store import LessonStore


class VectorSource(Protocol):
    """Where a memory index reads vectors from: lessons, or conversation chunks."""

    def vector_versions(self) -> tuple[int, int]: ...
    def vectors_since(self, version: int) -> list[tuple[int, bytes]]: ...


class MemoryIndex:
    """Every vector of the database as one float32 matrix, kept in step incrementally."""

    def __init__(self) -> None:
        self.dims = 0
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.seqs = np.zeros(0, dtype=np.int64)
        self.rows: dict[int, int] = {}
        self.size = 0
        self.version = -1
        self.reset = -1

    @property
    def loaded(self) -> bool:
        return self.version >= 0

    def sync(self, store: VectorSource) -> None:
        version, reset = store.vector_versions()
        if self.loaded and version == self.version:
            return
        if not self.loaded or reset > self.version:
            self._replace(store.vectors_since(-1))
        else:
            self._upsert(store.vectors_since(self.version))
        self.version, self.reset = version, reset

    def _replace(self, rows: list[tuple[int, bytes]]) -> None:
        self.size = 0
        self.rows = {}
        self.dims = len(rows[0][1]) // 4 if rows else 0
        self.matrix = np.zeros((max(len(rows), 16), self.dims), dtype=np.float32)
        self.seqs = np.zeros(self.matrix.shape[0], dtype=np.int64)
        self._upsert(rows)

    def _upsert(self, rows: Iterable[tuple[int, bytes]]) -> None:
        for seq, blob in rows:
            vec = np.frombuffer(blob, dtype=np.float32)
            if vec.shape[0] != self.dims:  # the model changed under us: start again
                self._replace([])
                self.dims = vec.shape[0]
                self.matrix = np.zeros((16, self.dims), dtype=np.float32)
                self.seqs = np.zeros(16, dtype=np.int64)
            i = self.rows.get(seq)
            if i is None:
                if self.size == self.matrix.shape[0]:  # grow by doubling: appends stay cheap
                    self.matrix = np.vstack([self.matrix, np.zeros_like(self.matrix)])
                    self.seqs = np.concatenate([self.seqs, np.zeros_like(self.seqs)])
                i = self.size
                self.size += 1
                self.rows[seq] = i
                self.seqs[i] = seq
            self.matrix[i] = vec

    def search(self, qvec: np.ndarray, depth: int,
               allowed: Iterable[int] | None = None) -> list[tuple[int, float]]:
        if self.size == 0 or qvec.shape[0] != self.dims:
            return []
        sims = similarities(self.matrix[: self.size], qvec)
        if allowed is not None:
            idx = np.fromiter((self.rows[s] for s in allowed if s in self.rows), dtype=np.int64)
            return top(self.seqs[idx], sims[idx], depth)
        return top(self.seqs[: self.size], sims, depth)


def similarities(matrix: np.ndarray, qvec: np.ndarray) -> np.ndarray:
    """``matrix @ qvec`` on this thread. A matrix-vector product goes to OpenBLAS, which splits
    it across every core and waits for them: on a loaded machine that took 16-24 ms at
    10,000 × 384 against 1-9 ms for einsum's single-threaded loop (bench/serve_bench.py)."""
    return np.einsum("ij,j->i", matrix, qvec)


def top(seqs: np.ndarray, sims: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """The ``depth`` best (seq, similarity) pairs, best first; ties by seq for stable output."""
    n = min(depth, len(sims))
    if n == 0:
        return []
    idx = np.argpartition(-sims, n - 1)[:n] if n < len(sims) else np.arange(len(sims))
    idx = idx[np.lexsort((seqs[idx], -sims[idx]))]
    return [(int(seqs[i]), float(sims[i])) for i in idx]


def score_rows(rows: list[tuple[int, bytes]], qvec: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """Exact similarities for vectors read from the database."""
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    if matrix.shape[1] != qvec.shape[0]:
        return []
    return top(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
               similarities(matrix, qvec), depth)


def candidates(
    store: LessonStore, memory: MemoryIndex, qvec: np.ndarray, depth: int, where: str,
    params: list, *, mode: str, memory_below: int, exact_below: int, narrow: bool,
) -> list[tuple[int, float]]:
    """(seq, cosine similarity), best first, at most ``depth``, among lessons passing ``where``."""
    qvec = np.asarray(qvec, dtype=np.float32)
    filtered = where != "1"
    allowed = store.allowed_seqs(where, params) if filtered and narrow else None
    if allowed is not None and len(allowed) <= exact_below:
        return score_rows(store.vectors_for(allowed), qvec, depth)
    use_memory = mode == "memory" or (mode == "auto" and memory.loaded)
    total = memory.size if use_memory else store.count()
    if mode == "auto" and not use_memory and total <= memory_below:
        use_memory = True
    if use_memory or not store.has_vector_index():
        memory.sync(store)
        if allowed is not None:
            return memory.search(qvec, depth, allowed)
        hits = memory.search(qvec, depth * 2 if filtered else depth)
    else:
        k = min(total, depth * (4 if filtered else 1))
        seqs = store.knn(qvec.tobytes(), k)
        if allowed is not None:
            keep = set(allowed)
            seqs = [s for s in seqs if s in keep]
        hits = score_rows(store.vectors_for(seqs), qvec, depth * 2)
    if not filtered:
        return hits[:depth]
    keep = store.seqs_where([s for s, _ in hits], where, params)
    kept = [(s, sim) for s, sim in hits if s in keep][:depth]
    if len(kept) < depth and len(hits) >= depth:
        # The filter removed more candidates than expected: score the allowed set exactly.
        allowed = store.allowed_seqs(where, params)
        if use_memory:
            return memory.search(qvec, depth, allowed)
        return score_rows(store.vectors_for(allowed), qvec, depth)
    return kept
