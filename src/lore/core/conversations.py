"""Conversation memory of one database: import transcripts, embed their chunks, search them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.capture.ingest import Ingest, IngestReport
from lore.config import Config
from lore.core.embedding import Embedding, Progress
from lore.errors import ConfigError, LoreError
from lore.normalize import project_root
from lore.recall import conversations as recall
from lore.recall.vectors import ChunkIndex, MemoryIndex
from lore.store import Store

if TYPE_CHECKING:
    from lore.capture.transcripts import FileEdit
    from lore.llm.base import Provider
    from lore.llm.rerank import Excerpt, RerankRequest


EMBED_BATCH = 64  # chunks a transaction: ~7 s of the model on two cores


def index_path(location: str) -> Path | None:
    """The chunk index beside a database file; None for a database that is not a file."""
    if not location or "://" in location or location == ":memory:":
        return None
    return Path(location).with_name(Path(location).name + ChunkIndex.SUFFIX)


LEGACY_INDEX = (".chunks.usearch", ".chunks.usearch.json")  # an HNSW graph of earlier versions


@dataclass(frozen=True, slots=True)
class Found:
    """What a search found, and whether a language model re-ordered it: ``reranked_by`` names
    the model that did; ``rerank_error`` says why the search's own order was kept."""

    hits: list[recall.ConversationHit]
    reranked_by: str | None = None
    rerank_error: str | None = None

    def outcome(self) -> dict[str, Any]:
        """The re-ranking part of a face's JSON answer (empty when none was asked)."""
        if self.reranked_by is None and self.rerank_error is None:
            return {}
        return {"reranked_by": self.reranked_by, "rerank_error": self.rerank_error}


class Conversations:
    """Imported transcripts and their search (the ``conversations`` part of :class:`lore.api.Lore`)."""

    def __init__(self, store: Store, embedding: Embedding, config: Config,
                 tuning: recall.ConversationTuning = recall.CONVERSATIONS,
                 provider: Callable[[], Provider] | None = None) -> None:
        self.store = store.conversations
        self.embedding = embedding
        self.config = config
        self.tuning = tuning  # the search's constants (a measurement may set others)
        self._open_provider = provider  # the configured language model, opened on first use
        self._provider: Provider | None = None
        self.importer = Ingest(store, tuning.context_turns)
        self.vectors = MemoryIndex()  # loaded on the first vector search of a small database
        self.index = ChunkIndex(index_path(store.location))

    # ---- import -----------------------------------------------------------------------
    def ingest(self, paths: Sequence[Path], *, embed: bool = True,
               progress: Progress | None = None) -> IngestReport:
        report = IngestReport()
        self.importer.files(paths, report, progress)
        if embed:
            report.embedded = self.embed_pending()
        return report

    def embed_pending(self, progress: Progress | None = None, *, limit: int | None = None,
                      batch: int = EMBED_BATCH) -> int:
        """Embed the chunks that wait for a vector (all, or at most ``limit``), a batch at a
        time: each batch is stored in its own transaction, so an interrupted run keeps what it
        embedded. ``progress`` hears (done, total) after each batch. Then the chunk index is
        brought in step. Returns how many were embedded."""
        total = self.store.vector_backlog()
        if limit is not None:
            total = min(total, limit)
        done = 0
        try:
            while done < total:
                todo = self.importer.texts_to_embed(min(batch, total - done))
                if not todo:
                    break
                if done == 0:
                    self.embedding.check_model()
                vectors = self.embedding.embed([text for _, text, _ in todo])
                self.embedding.store_chunk_vectors(
                    [(cid, h, v) for (cid, _, h), v in zip(todo, vectors, strict=True)])
                done += len(todo)
                if progress:
                    progress(done, total)
        finally:
            if done:
                self.refresh_index()
        return done

    def backlog(self) -> int:
        """How many chunks wait for a vector."""
        return self.store.vector_backlog()

    def refresh_index(self, *, force: bool = False) -> str:
        """Bring the chunk index file in step with the vectors (the writer's job)."""
        if self.index.path is not None:
            for suffix in LEGACY_INDEX:
                self.index.path.with_name(self.index.path.name.removesuffix(ChunkIndex.SUFFIX)
                                          + suffix).unlink(missing_ok=True)
        return self.index.refresh(self.store, force=force)

    def add_turns(self, session_id: str, agent: str, project: str | None,
                  turns: Sequence[tuple[str, str, str, str | None]], *, per_turn: bool = False,
                  title: str | None = None) -> int:
        """Store already-parsed turns (uuid, speaker, text, timestamp) as one session."""
        return self.importer.add_turns(session_id, agent, project, turns, per_turn=per_turn,
                                       title=title)

    def record_edits(self, session_id: str, project: str | None, transcript: str | None,
                     edits: Sequence[FileEdit]) -> int:
        return self.importer.record_edits(session_id, project, transcript, edits)

    # ---- search -----------------------------------------------------------------------
    def has_project(self, project: str) -> bool:
        """Whether any imported conversation belongs to ``project``."""
        return bool(self.store.chunk_ids(project))

    def search(self, query: str, *, project: str | None = None, limit: int = 5,
               min_score: float = 0.0, decay: bool | None = None, mode: str = "hybrid",
               now_: datetime | None = None) -> list[recall.ConversationHit]:
        """Chunks ranked by normalised BM25 + weighted cosine, a bonus for the speaker the
        query names, and memory decay. docs/conversations.md has the formula."""
        embed = (self.embedding.query_function()
                 if mode in ("hybrid", "vector") and query.strip() else None)
        return recall.search(self.store, self.tuning, query, embed, self.vectors, self.index,
                             project=project_root(project),
                             limit=limit, min_score=min_score,
                             decay=self.config.conversations.decay if decay is None else decay,
                             mode=mode,
                             at=now_ or datetime.now(UTC))

    def find(self, query: str, *, project: str | None = None, limit: int = 5,
             min_score: float = 0.0, decay: bool | None = None, mode: str = "hybrid",
             rerank: bool | None = None, now_: datetime | None = None) -> Found:
        """:meth:`search`, then, with ``rerank`` (default: ``conversations.rerank``), the
        configured language model re-orders the best ``rerank_candidates``. A model that fails,
        is over budget or replies with nothing readable leaves the search's order (the reason
        is in ``rerank_error``): a search never fails for the model. ConfigError when
        re-ranking is asked for and no model is configured."""
        wanted = self.config.conversations.rerank if rerank is None else rerank
        if wanted and self._open_provider is None:
            raise ConfigError("re-ranking needs a language model: set llm.provider in "
                              "config.yaml (see docs/llm.md)")
        depth = max(limit, self.tuning.rerank_candidates) if wanted else limit
        hits = self.search(query, project=project, limit=depth, min_score=min_score, decay=decay,
                           mode=mode, now_=now_)
        if not wanted or len(hits) < 2:  # nothing to re-order
            return Found(hits[:limit])
        from lore.llm.rerank import rerank as ask

        try:
            provider = self.provider()
            order = ask(provider, query, self.excerpts(hits), limit)
        except LoreError as exc:
            return Found(hits[:limit], rerank_error=str(exc))
        by_id = {h.chunk_id: (rank, h) for rank, h in enumerate(hits, 1)}
        picked = [replace(by_id[cid][1], parts={**by_id[cid][1].parts, "search_rank": by_id[cid][0]})
                  for cid in order[:limit]]
        return Found(picked, reranked_by=f"{provider.name}/{provider.model}")

    def use_provider(self, open_provider: Callable[[], Provider] | None) -> None:
        """Re-rank with the model ``open_provider`` opens (a measurement on a temporary
        database keeps the user's budget and log); None: no model."""
        self._open_provider, self._provider = open_provider, None

    def provider(self) -> Provider:
        """The configured language model (opened once)."""
        if self._open_provider is None:
            raise ConfigError("no language model is configured: set llm.provider in config.yaml")
        if self._provider is None:
            self._provider = self._open_provider()
        return self._provider

    def excerpts(self, hits: Sequence[recall.ConversationHit]) -> list[Excerpt]:
        """What a re-ranking model reads of each hit: its whole text, date and speakers."""
        from lore.llm.rerank import Excerpt

        rows = self.store.chunk_rows([h.chunk_id for h in hits])
        return [Excerpt(h.chunk_id, rows[h.chunk_id]["text"], h.date, h.speakers)
                for h in hits if h.chunk_id in rows]

    def rerank_request(self, query: str, hits: Sequence[recall.ConversationHit],
                       limit: int) -> RerankRequest:
        """The request :meth:`find` sends for ``hits`` (a measurement writes it to a file)."""
        from lore.llm.rerank import build

        return build(query, self.excerpts(hits), limit)

    def turns(self, chunk_id: int, before: int = 3, after: int = 3) -> dict[str, Any]:
        """A chunk's turns with the turns around it, to read a hit in its conversation."""
        return recall.turns(self.store, chunk_id, before, after)

    def first_uuids(self, chunk_ids: Sequence[int]) -> dict[int, str]:
        """The uuid of each chunk's first message (benchmarks map hits back to their turns)."""
        return self.store.chunk_first_uuids(chunk_ids)

    def stats(self) -> dict[str, int]:
        return self.store.stats()
