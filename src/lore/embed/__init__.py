"""Embedding backends behind one narrow protocol.

Backends import their heavy libraries inside their own module, and
:func:`create_embedder` imports that module only when asked (backends are found by name
through the ``lore.embedders`` entry points, see docs/plugins.md), so commands that do
not embed never pay for onnxruntime or torch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    from lore.config import EmbeddingConfig

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# Short names and the hub names that mean the same model.
ALIASES = {
    "sentence-transformers/all-minilm-l6-v2": DEFAULT_MODEL,
    "all-minilm-l6-v2": DEFAULT_MODEL,
}


_POOL: ThreadPoolExecutor | None = None


def prefetch(embed: Callable[[str], Any], text: str) -> Callable[[str], Any]:
    """Start embedding ``text`` on a second thread now; the function returned gives that
    vector when asked for ``text`` (and embeds anything else itself). The model works while
    the keyword stage runs — both release the GIL (ONNX Runtime, SQLite) — so a search costs
    about the longer of the two, not their sum."""
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="lore-query-embed")
    pending = _POOL.submit(embed, text)

    def result(asked: str) -> Any:
        return pending.result() if asked == text else embed(asked)

    return result


@runtime_checkable
class Embedder(Protocol):
    """Turns text into unit-length float32 vectors."""

    name: str  # canonical model name, recorded in the database

    @property
    def dimensions(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def canonical_model(name: str) -> str:
    return ALIASES.get(name.lower(), name)


def document_text(title: str, content: str) -> str:
    """What is embedded for a lesson: the title gives keywords, the content context."""
    return f"{title}\n\n{content}"


def embed_text(text: str, before: Sequence[str], after: Sequence[str]) -> str:
    """What is embedded for a conversation chunk: the turn(s) first, so truncation never cuts
    them, then the nearest turn on each side."""
    parts = [text, before[-1] if before else "", after[0] if after else ""]
    return " ".join(p for p in parts if p)


def create_embedder(cfg: EmbeddingConfig) -> Embedder:
    """The backend ``embedding.backend`` names, from the ``lore.embedders`` entry points
    (the built-in ones included); its module, and its heavy libraries, load only now."""
    from lore import plugins

    backend: Embedder = plugins.load("lore.embedders", cfg.backend, "embedding backend")(cfg)
    return backend


def normalise(vectors: np.ndarray) -> np.ndarray:
    import numpy as np

    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return arr / norms
