"""The corpus of the scale benchmark: up to 1,000,000 conversation chunks with realistic vectors.

Embedding a million chunks with the real model would take about two hours on two cores (days
on a shared, busy machine: 3.4 texts a second was measured while these benchmarks ran), so:

- ``BASE`` (1,000; ``$LORE_BENCH_BASE`` for fewer at toy size) texts of the bench corpus are
  embedded with the real default model once;
- chunk ``i`` gets the vector ``normalise(base[i % BASE] + 0.3 × base[j] + noise)``, with ``j``
  another random base text and Gaussian noise of 0.03 per dimension. Each base text thus becomes a
  cluster (1,000 chunks at 1M) around the real embedding, each chunk pulled towards a second topic: the
  neighbourhood structure of real embeddings is kept (uniformly random vectors would flatter every
  approximate index) and no two chunks share a vector;
- the chunk's text is the bench corpus text of the same number (its keyword side);
- queries are real questions embedded live by the real model.

Everything is cached under ``$LORE_BENCH_CACHE`` (default ``~/.cache/lore-bench``), never in
the repository: the base embeddings and the vectors of each size (1.5 GB at 1M). Dense
clusters of near-ties make this a hard case for an approximate index, not a flattering one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from bench.corpus import make_corpus

BASE = int(os.environ.get("LORE_BENCH_BASE") or 1_000)
MIX = 0.3
NOISE = 0.03
CACHE = Path(os.environ.get("LORE_BENCH_CACHE") or Path.home() / ".cache" / "lore-bench")


def chunk_text(doc) -> str:  # type: ignore[no-untyped-def]
    return f"{doc.title}. {doc.content}"


def base_vectors() -> np.ndarray:
    """The real model's embeddings of the first BASE corpus texts (cached)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"base-minilm-int8-{BASE}.npy"
    if path.exists():
        return np.load(path)
    from lore.config import EmbeddingConfig
    from lore.embed import create_embedder

    real = create_embedder(EmbeddingConfig())
    docs = make_corpus(BASE)
    vecs = np.asarray(real.embed_documents([chunk_text(d) for d in docs]), dtype=np.float32)
    np.save(path, vecs)
    return vecs


def vectors(n: int, seed: int = 5) -> np.ndarray:
    """``n`` unit float32 vectors, memory-mapped from the cache (built once)."""
    path = CACHE / f"chunks-{n}.npy"
    if path.exists():
        return np.load(path, mmap_mode="r")
    base = base_vectors()
    rng = np.random.default_rng(seed)
    out = np.lib.format.open_memmap(path.with_suffix(".tmp.npy"), mode="w+", dtype=np.float32,
                                    shape=(n, base.shape[1]))
    step = 50_000
    for s in range(0, n, step):
        idx = np.arange(s, min(s + step, n))
        v = base[idx % BASE] + MIX * base[rng.integers(0, BASE, len(idx))]
        v += rng.normal(0.0, NOISE, v.shape).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        out[s: s + len(idx)] = v
    out.flush()
    del out
    path.with_suffix(".tmp.npy").rename(path)
    return np.load(path, mmap_mode="r")


if __name__ == "__main__":
    for size in map(int, sys.argv[1:] or ["1000000"]):
        print(size, vectors(size).shape, "in", CACHE)
