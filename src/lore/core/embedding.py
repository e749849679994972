"""The embedding model of one database: create it lazily, record it, refuse to mix two.

The database records the model name and dimensions (``meta``); a different configured
model is an :class:`~lore.errors.EmbeddingMismatch` naming ``lore admin reembed``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lore.embed import Embedder, canonical_model, create_embedder
from lore.errors import EmbeddingMismatch
from lore.store import Store

if TYPE_CHECKING:
    from lore.config_models import EmbeddingConfig

Progress = Callable[[int, int], None]  # (done, total)
MODEL_KEYS = ("embedding_model", "embedding_dimensions", "embedding_backend")



def configured_name(backend: str, model: str) -> str:
    """The model name a backend and a configured ``embedding.model`` stand for."""
    if backend == "openai" and model == "all-MiniLM-L6-v2":
        return "text-embedding-3-small"
    return canonical_model(model)


def stored_model(store: Store) -> tuple[str | None, int | None]:
    """The model (and its dimensions) the database's vectors were made with; None: none yet."""
    dims = store.meta("embedding_dimensions")
    return store.meta("embedding_model"), int(dims) if dims else None

class Embedding:
    """The configured model, loaded on first use, and the model the database was built with."""

    def __init__(self, store: Store, config: EmbeddingConfig,
                 embedder: Embedder | None = None) -> None:
        self.store = store
        self.config = config
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = create_embedder(self.config)
        return self._embedder

    def use(self, embedder: Embedder) -> None:
        """Embed with this model from now on (a benchmark swaps a cached one for the real one)."""
        self._embedder = embedder

    def closest(self, title: str, content: str,
                seqs: Sequence[int]) -> tuple[int, float] | None:
        """(seq, cosine) of the lesson among ``seqs`` whose stored vector is closest to a lesson
        of this title and content; None when none of them has a vector."""
        import numpy as np

        from lore.embed import document_text

        rows = self.store.vectors_for(seqs)
        if not rows:
            return None
        self.check_model()
        vec = np.asarray(self.embedder.embed_documents([document_text(title, content)])[0],
                         dtype=np.float32)
        sims = np.stack([np.frombuffer(b, dtype=np.float32) for _, b in rows]) @ vec
        best = int(np.argmax(sims))
        return rows[best][0], float(sims[best])

    def configured_model(self) -> str:
        if self._embedder is not None:
            return self._embedder.name
        return configured_name(self.config.backend, self.config.model)

    def stored_model(self) -> tuple[str | None, int | None]:
        return stored_model(self.store)

    def in_use(self) -> bool:
        """Something was embedded already (else searches rank by keywords alone)."""
        return self.store.meta("embedding_model") is not None

    def check_model(self) -> None:
        """Stop before mixing vectors of two models in one index."""
        stored, dims = self.stored_model()
        wanted = self.configured_model()
        if stored is not None and stored != wanted:
            raise EmbeddingMismatch(
                f"the database was embedded with {stored} ({dims} dims) but the config asks for "
                f"{wanted}; run `lore admin reembed` to rebuild, or set embedding.model back"
            )

    def query(self, text: str) -> Any:
        return self.embedder.embed_query(text)

    def query_function(self) -> Callable[[str], Any] | None:
        """The query embedder after checking the model, or None when nothing is embedded yet."""
        if not self.in_use():
            return None
        self.check_model()
        return self.embedder.embed_query

    def embed(self, texts: Sequence[str], progress: Progress | None = None,
              batch: int = 256) -> list[bytes]:
        """Float32 vectors as bytes, in batches; ``progress`` hears after each."""
        out: list[bytes] = []
        for i in range(0, len(texts), batch):
            vecs = self.embedder.embed_documents(texts[i : i + batch])
            out += [v.astype("float32").tobytes() for v in vecs]
            if progress:
                progress(min(i + batch, len(texts)), len(texts))
        return out

    def store_vectors(self, rows: Sequence[tuple[int, str, bytes]]) -> None:
        """Write lesson vectors (seq, content hash, bytes), recording the model on first use."""
        if not rows:
            return
        with self.store.atomic():
            dims = self.record_model(len(rows[0][2]) // 4)
            self.store.create_vector_index(dims)
            self.store.put_vectors(rows)

    def store_chunk_vectors(self, rows: Sequence[tuple[int, str, bytes]]) -> None:
        """Write conversation-chunk vectors (id, embedding hash, bytes) in one transaction with
        the model check, as :meth:`store_vectors` does for lessons."""
        if not rows:
            return
        with self.store.atomic():
            self.record_model(len(rows[0][2]) // 4)
            self.store.conversations.put_vectors(rows)

    def record_model(self, returned_dims: int | None = None) -> int:
        """Record the model on first use; stop if the database has another one by now (a
        re-embed started while this process was embedding) or if it returns vectors of another
        size. Called inside the transaction that writes the vectors."""
        stored = self.store.meta("embedding_model")
        if stored is None:
            self.store.set_meta("embedding_model", self.embedder.name)
            self.store.set_meta("embedding_dimensions", str(self.embedder.dimensions))
            self.store.set_meta("embedding_backend", self.config.backend)
        elif stored != self.embedder.name:
            raise EmbeddingMismatch(
                f"the database is embedded with {stored} now, this process with "
                f"{self.embedder.name}; nothing was written (run it again with the new config)"
            )
        dims = int(self.store.meta("embedding_dimensions") or 0)
        if returned_dims is not None and returned_dims != dims:
            raise EmbeddingMismatch(
                f"the model returned {returned_dims} dimensions but the database holds "
                f"{dims}; run `lore admin reembed`"
            )
        return dims

    def forget_model(self) -> None:
        for key in MODEL_KEYS:
            self.store.delete_meta(key)
