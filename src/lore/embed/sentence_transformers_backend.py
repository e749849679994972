"""Optional backend: sentence-transformers (PyTorch), ``pip install 'loreloop[sentence-transformers]'``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lore.config import EmbeddingConfig
from lore.embed import DEFAULT_MODEL, canonical_model, normalise
from lore.extras import need


class SentenceTransformersEmbedder:
    def __init__(self, cfg: EmbeddingConfig) -> None:
        self.cfg = cfg
        self.name = canonical_model(cfg.model)
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            library = need("sentence_transformers", "sentence-transformers",
                           "the sentence-transformers backend needs its extra")
            model = self.cfg.model
            if self.name == DEFAULT_MODEL:
                model = "sentence-transformers/all-MiniLM-L6-v2"
            # CPU always: CUDA builds on old GPUs fail in ways the user cannot fix here.
            self._model = library.SentenceTransformer(model, device="cpu", cache_folder=self.cfg.cache_dir)
        return self._model

    @property
    def dimensions(self) -> int:
        if self.cfg.dimensions:
            return self.cfg.dimensions
        return int(self._load().get_sentence_embedding_dimension())

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        vecs = self._load().encode(list(texts), batch_size=self.cfg.batch_size,
                                   normalize_embeddings=True, show_progress_bar=False)
        return normalise(vecs)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
