"""Optional backend: OpenAI embeddings (or any server speaking the same API).

``pip install 'loreloop[openai]'``. ``embedding.base_url`` points it at an
OpenAI-compatible server; the key comes from ``embedding.api_key`` or ``OPENAI_API_KEY``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from lore.config import EmbeddingConfig
from lore.embed import normalise
from lore.errors import BackendUnavailable, ConfigError
from lore.extras import need

DEFAULT_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072,
                      "text-embedding-ada-002": 1536}
MAX_BATCH = 2048  # inputs per request allowed by the API


class OpenAIEmbedder:
    def __init__(self, cfg: EmbeddingConfig) -> None:
        self.cfg = cfg
        self.name = cfg.model if cfg.model != "all-MiniLM-L6-v2" else "text-embedding-3-small"
        self._client: Any = None

    @property
    def dimensions(self) -> int:
        if self.cfg.dimensions:
            return self.cfg.dimensions
        if self.name in DEFAULT_DIMENSIONS:
            return DEFAULT_DIMENSIONS[self.name]
        return int(self.embed_query("dimension probe").shape[0])

    def _load(self) -> Any:
        if self._client is None:
            openai = need("openai", "openai", "the openai backend needs its extra")
            key = self.cfg.api_key or os.environ.get("OPENAI_API_KEY")
            if not key:
                raise ConfigError(
                    "the openai embedding backend needs a key: set OPENAI_API_KEY or "
                    "embedding.api_key in config.yaml"
                )
            self._client = openai.OpenAI(api_key=key, base_url=self.cfg.base_url, max_retries=3)
        return self._client

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        client = self._load()
        out: list[list[float]] = []
        step = min(self.cfg.batch_size, MAX_BATCH)
        for i in range(0, len(texts), step):
            kwargs: dict[str, Any] = {"model": self.name, "input": list(texts[i : i + step])}
            if self.cfg.dimensions:
                kwargs["dimensions"] = self.cfg.dimensions
            try:
                resp = client.embeddings.create(**kwargs)
            except Exception as exc:  # noqa: BLE001 - the SDK raises many types; one message
                raise BackendUnavailable(
                    f"the embedding server refused the request ({type(exc).__name__}: {exc})"
                ) from None
            out += [d.embedding for d in sorted(resp.data, key=lambda d: d.index)]
        return normalise(np.asarray(out, dtype=np.float32))

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
