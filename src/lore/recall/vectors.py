"""The vector stage: exact cosine similarity from an in-memory matrix, sqlite-vec KNN for
lessons, and an inverted-file index (faiss) for a large conversation memory.

Measured on 100,000 × 384 (docs/benchmarks.md): an exact float32 scan of a matrix in
memory takes ~5 ms, sqlite-vec's KNN 45-60 ms whatever the quantisation, and its
binary index gets slow as k grows. So a process that searches more than once keeps
the vectors in memory (exact, recall 1.0) and refreshes only the rows written since
it last looked; a one-shot process on a large database asks sqlite-vec's int8 index
for candidates and re-scores them exactly instead of loading 150 MB first.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from lore.extras import add_extra
from lore.models import Filters
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
    matrix = _matrix(rows)
    if matrix.shape[1] != qvec.shape[0]:
        return []
    return top(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
               similarities(matrix, qvec), depth)


def candidates(
    store: LessonStore, memory: MemoryIndex, qvec: np.ndarray, depth: int, filters: Filters,
    exclude: bool, *, mode: str, memory_below: int, exact_below: int, narrow: bool,
) -> list[tuple[int, float]]:
    """(seq, cosine similarity), best first, at most ``depth``, among lessons ``filters``
    allows (``exclude``: leaving out those whose anti-contexts name one of its contexts). The
    candidates are taken twice as deep (four times from the index) and filtered after: the
    store also leaves out what its user may not see, whatever the filters say."""
    qvec = np.asarray(qvec, dtype=np.float32)
    allowed = store.allowed_seqs(filters, anti_contexts_exclude=exclude) if narrow else None
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
        hits = memory.search(qvec, depth * 2)
    else:
        k = min(total, depth * 4)
        seqs = store.knn(qvec.tobytes(), k)
        if allowed is not None:
            keep = set(allowed)
            seqs = [s for s in seqs if s in keep]
        hits = score_rows(store.vectors_for(seqs), qvec, depth * 2)
    keep = store.seqs_matching([s for s, _ in hits], filters, anti_contexts_exclude=exclude)
    kept = [(s, sim) for s, sim in hits if s in keep][:depth]
    if len(kept) < depth and len(hits) >= depth:
        # The filter removed more candidates than expected: score the allowed set exactly.
        allowed = store.allowed_seqs(filters, anti_contexts_exclude=exclude)
        if use_memory:
            return memory.search(qvec, depth, allowed)
        return score_rows(store.vectors_for(allowed), qvec, depth)
    return kept


class ChunkSource(VectorSource, Protocol):
    """What a conversation chunk index reads: the vectors, in pages and by id, and projects."""

    def vectors_page(self, after: int, limit: int) -> list[tuple[int, bytes]]: ...
    def vectors_for(self, ids: Sequence[int]) -> list[tuple[int, bytes]]: ...
    def vector_total(self) -> int: ...
    def in_project(self, ids: Sequence[int], project: str) -> set[int]: ...
    def chunk_projects(self, ids: Sequence[int]) -> dict[int, str | None]: ...




def faiss_available() -> bool:
    """faiss-cpu (about 65 MB) comes with the ``scale`` extra: only a large conversation
    memory needs it; without it every search scans the vectors exactly, in memory."""
    from importlib.util import find_spec

    return find_spec("faiss") is not None


def faiss_module() -> Any:
    """faiss, imported when a large database is first searched or indexed (~60 ms), set to
    search on the calling thread: one query at a time gains nothing from a thread pool, and
    OpenMP's spinning workers cost a loaded machine dearly."""
    import faiss

    faiss.omp_set_num_threads(1)
    return faiss


def _matrix(page: Sequence[tuple[int, bytes]]) -> np.ndarray:
    return np.frombuffer(b"".join(b for _, b in page), dtype=np.float32).reshape(len(page), -1)


class ChunkIndex:
    """An inverted-file index of the conversation chunk vectors (faiss ``IndexIVFScalarQuantizer``:
    the vectors grouped into ~√n lists around k-means centres, each stored as 8-bit codes) in a
    file beside the database, opened as a memory map: nothing to load, a search reads the lists
    nearest the query.

    Chosen by measurement at 1,000,000 chunks (docs/benchmarks.md#conversation-memory-at-scale):
    an HNSW graph (usearch, int8) reached recall@10 0.67 there, the lists 1.00, and they build in
    seconds instead of minutes. The float32 vectors in the database stay the truth: the lists
    propose candidates and those are re-scored exactly, so a stale entry can cost recall but
    never a wrong score. Each entry's key carries its project in the bits above
    ``PROJECT_SHIFT``, so a search within one project asks the index for that key range only.

    The file records what it holds (``<file>.json``, written after the index: a reader that sees
    the record sees an index at least that new): the vector version, the number of vectors it was
    trained on and the projects' codes. Vectors written since are scored exactly beside the
    index's candidates, so a search covers everything embedded so far. The single writer
    (:meth:`refresh`, after each batch of vectors) adds them once they are more than
    ``STALE_SHARE`` of it, and rebuilds (new lists) a missing, unreadable or reset index, or one
    that has grown to ``RETRAIN_GROWTH`` times what its lists were trained on.
    """

    MIN_SIZE = 20_000  # below this an exact scan of the vectors in memory is cheap (MemoryIndex)
    STALE_SHARE = 0.05
    STALE_MIN = 2_000
    RETRAIN_GROWTH = 4
    SAMPLE_PER_LIST = 64  # training vectors a list (faiss asks for at least 39)
    SCAN_CODES = 32_768  # a search reads the lists nearest the query until it has read this
    PROBE_SHARE = 16  # many vectors' codes and at least 1/16 of the lists
    RESCORE = 200  # candidates re-scored exactly, at least
    PAGE = 20_000
    PROJECT_SHIFT = 40  # chunk ids below 2**40; the project's code above
    SUFFIX = ".chunks.faiss"

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._view: Any = None
        self._view_key: tuple[int, int, int] | None = None

    @property
    def meta_path(self) -> Path | None:
        return self.path.with_name(self.path.name + ".json") if self.path else None

    @staticmethod
    def lists_for(count: int) -> int:
        return int(min(max(round(count ** 0.5), 16), 65_536))

    @classmethod
    def probes_for(cls, lists: int, count: int) -> int:
        """How many lists a search reads: the nearest ones, enough to read ``SCAN_CODES``
        codes and 1/``PROBE_SHARE`` of the lists (measured at 100,000 and 1,000,000 chunks:
        docs/benchmarks.md#conversation-memory-at-scale)."""
        per_list = max(count / max(lists, 1), 1.0)
        return int(min(lists, max(-(-lists // cls.PROBE_SHARE), -(-cls.SCAN_CODES // per_list))))

    def record(self) -> dict[str, Any] | None:
        """What the file holds: {version, reset, dims, count, trained, lists, projects}, or
        None without a usable file."""
        if self.meta_path is None:
            return None
        try:
            data = json.loads(self.meta_path.read_text(encoding="utf-8"))
            out: dict[str, Any] = {k: int(data[k]) for k in ("version", "reset", "dims", "count",
                                                             "trained", "lists")}
            projects = data["projects"]
            if not isinstance(projects, list) or not all(
                    p is None or isinstance(p, str) for p in projects):
                return None
            out["projects"] = projects
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return out if self.path is not None and self.path.exists() else None

    def usable(self, store: VectorSource) -> dict[str, Any] | None:
        """The record, when the index can serve searches of ``store`` (present, same model,
        nothing removed since it was written)."""
        rec = self.record()
        if rec is None:
            return None
        version, reset = store.vector_versions()
        if reset > rec["version"] or version < rec["version"]:
            return None  # vectors were removed, or the database is not the one indexed
        return rec

    def _open(self) -> Any:
        faiss = faiss_module()
        assert self.path is not None
        st = self.path.stat()
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._view is None or key != self._view_key:
            self._view = faiss.read_index(str(self.path), faiss.IO_FLAG_MMAP)
            self._view_key = key
        return self._view

    def _readable(self, rec: dict[str, Any]) -> bool:
        try:
            index = self._open()
        except (OSError, RuntimeError, ValueError):
            return False
        return int(index.ntotal) == rec["count"] and int(index.d) == rec["dims"]

    def close(self) -> None:
        self._view = None
        self._view_key = None

    def search(self, store: ChunkSource, qvec: np.ndarray, depth: int,
               project: str | None) -> list[tuple[int, float]] | None:
        """(chunk id, exact cosine) best first, or None when the index cannot answer."""
        rec = self.usable(store)
        if rec is None or rec["dims"] != qvec.shape[0] or not faiss_available() \
                or not self._readable(rec):  # unreadable or another size: the writer rebuilds it
            return None
        index, faiss = self._open(), faiss_module()
        delta = dict(store.vectors_since(rec["version"])) if store.vector_versions()[0] > rec[
            "version"] else {}
        k = max(depth, self.RESCORE)
        params = faiss.SearchParametersIVF(
            nprobe=self.probes_for(rec["lists"], rec["count"]))
        ids: list[int] = []
        sel = None
        if project is not None and project in rec["projects"]:
            code = rec["projects"].index(project)  # a project the index holds: its key range
            sel = faiss.IDSelectorRange(code << self.PROJECT_SHIFT,
                                        (code + 1) << self.PROJECT_SHIFT)
            params.sel = sel
        if project is None or sel is not None:
            _, keys = index.search(np.ascontiguousarray(qvec[None, :], dtype=np.float32), k,
                                   params=params)
            mask = (1 << self.PROJECT_SHIFT) - 1
            ids = [int(x) & mask for x in keys[0] if x >= 0]
        cands = list(dict.fromkeys([*ids, *delta]))
        if project is not None:  # the store has the last word on where a chunk belongs
            keep = store.in_project(cands, project)
            cands = [c for c in cands if c in keep]
        rows = [(c, delta[c]) for c in cands if c in delta]
        rows += store.vectors_for([c for c in cands if c not in delta])
        return score_rows(rows, qvec, depth)

    # ---- the writer's side ------------------------------------------------------------
    def refresh(self, store: ChunkSource, *, force: bool = False) -> str:
        """Bring the file in step with the vectors: what was done, in a few words."""
        if self.path is None:
            return "no index (the database is not a file)"
        total = store.vector_total()
        if total < self.MIN_SIZE and not force:
            return f"no index below {self.MIN_SIZE} vectors"
        if not faiss_available():
            return (f"no index: {total} vectors are searched exactly; {add_extra('scale')} makes "
                    "searches of this many faster")
        rec = self.usable(store)
        version = store.vector_versions()[0]
        try:
            if rec is None or not self._readable(rec) or total > self.RETRAIN_GROWTH * rec[
                    "trained"]:
                self.build(store)
                return "rebuilt"
            if version == rec["version"]:
                return "in step"
            delta = store.vectors_since(rec["version"])
            if len(delta) < max(self.STALE_MIN, self.STALE_SHARE * rec["count"]) and not force:
                return f"{len(delta)} vectors scored beside the index"
            if not self._update(rec, delta, version, store):
                self.build(store)
                return "rebuilt"
            return f"added {len(delta)} vectors"
        except ValueError as e:  # keys out of range: searches scan the vectors exactly
            self.remove()
            return f"no index ({e})"

    def _keys(self, ids: Sequence[int], store: ChunkSource, projects: list[str | None]) -> np.ndarray:
        """Each chunk's key: its id, with its project's code above ``PROJECT_SHIFT`` (new
        projects get the next code)."""
        where = store.chunk_projects(ids)
        codes = {p: i for i, p in enumerate(projects)}
        out = np.empty(len(ids), dtype=np.int64)
        for n, cid in enumerate(ids):
            if cid >= 1 << self.PROJECT_SHIFT:
                raise ValueError(f"chunk id {cid} is too large for the index's keys")
            p = where.get(cid)
            if p not in codes:
                codes[p] = len(projects)
                projects.append(p)
            out[n] = (codes[p] << self.PROJECT_SHIFT) | cid
        return out

    def _pages(self, store: ChunkSource) -> Iterable[list[tuple[int, bytes]]]:
        after = -1
        while page := store.vectors_page(after, self.PAGE):
            yield page
            after = page[-1][0]

    def build(self, store: ChunkSource) -> None:
        """New lists trained on a sample of the vectors, then every vector added: two reads of
        the vectors, a page at a time (a million vectors never sit in memory at once)."""
        faiss = faiss_module()
        version, reset = store.vector_versions()
        total = store.vector_total()
        if total == 0:
            return
        nlist = self.lists_for(total)
        share = min(1.0, nlist * self.SAMPLE_PER_LIST / total)
        rng = np.random.default_rng(total)  # a random sample: every k-th row can alias
        sample = [m[rng.random(len(m)) < share] for page in self._pages(store)
                  for m in [_matrix(page)]]
        train = np.ascontiguousarray(np.vstack(sample))
        dims = train.shape[1]
        nlist = min(nlist, len(train))
        quantiser = faiss.IndexFlatIP(dims)
        index = faiss.IndexIVFScalarQuantizer(quantiser, dims, nlist,
                                              faiss.ScalarQuantizer.QT_8bit,
                                              faiss.METRIC_INNER_PRODUCT)
        projects: list[str | None] = []
        faiss.omp_set_num_threads(os.cpu_count() or 1)
        try:
            index.train(train)
            del sample, train
            for page in self._pages(store):
                matrix = _matrix(page)
                if matrix.shape[1] != dims:
                    return  # the model changed while reading: the next refresh starts again
                index.add_with_ids(matrix, self._keys([i for i, _ in page], store, projects))
        finally:
            faiss.omp_set_num_threads(1)
        self._save(index, {"version": version, "reset": reset, "dims": dims,
                           "count": int(index.ntotal), "trained": total, "lists": nlist,
                           "projects": projects})

    def _update(self, rec: dict[str, Any], delta: list[tuple[int, bytes]], version: int,
                store: ChunkSource) -> bool:
        faiss = faiss_module()
        assert self.path is not None
        try:
            index = faiss.read_index(str(self.path))
        except (OSError, RuntimeError, ValueError):  # not an index faiss can read
            return False
        projects: list[str | None] = list(rec["projects"])
        keys = self._keys([i for i, _ in delta], store, projects)
        index.remove_ids(faiss.IDSelectorBatch(keys))  # vectors embedded again replace theirs
        index.add_with_ids(_matrix(delta), keys)
        self._save(index, {**rec, "version": version, "count": int(index.ntotal),
                           "projects": projects})
        return True

    def _save(self, index: Any, record: dict[str, Any]) -> None:
        """The index first, then its record, each replaced atomically."""
        faiss = faiss_module()
        assert self.path is not None and self.meta_path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        faiss.write_index(index, str(tmp))
        os.replace(tmp, self.path)
        tmp_meta = self.meta_path.with_name(self.meta_path.name + ".tmp")
        tmp_meta.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp_meta, self.meta_path)
        self.close()

    def remove(self) -> None:
        for p in (self.meta_path, self.path):
            if p is not None:
                p.unlink(missing_ok=True)
        self.close()
