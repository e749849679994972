"""The core API. Every interface (CLI, MCP, web, worker) is a thin layer over :class:`Lore`.

    from lore.api import Lore
    from lore.config import load_config

    with Lore.open(load_config()) as lore:
        lesson = lore.add_lesson("Use file sessions, not Redis", "The user ...", tags=["auth"])
        for hit in lore.recall("where do sessions live?"):
            print(hit.title, hit.score)
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from lore import graph as graph_ops
from lore import normalize
from lore.config import Settings
from lore.embed import Embedder, canonical_model, create_embedder, document_text
from lore.errors import EmbeddingMismatch, InvalidInput, NotFound, StoreBusy
from lore.ids import is_id, new_id, now
from lore.learn.redact import redact_value
from lore.models import (
    CodeExample,
    Edge,
    Evidence,
    Filters,
    ImportReport,
    Lesson,
    RefItem,
    RelatedLesson,
    SearchResult,
    TradeOff,
)
from lore.private import tighten_home
from lore.schema import LessonFields, validate_fields
from lore.search import MemoryIndex, hybrid
from lore.store import SCHEMA_VERSION, LessonRow, SQLiteStore, atomic, connect, migrate
from lore.store.lessons import PREFERENCE_COLUMNS

if TYPE_CHECKING:
    from lore.conversations import Conversations

Progress = Callable[[int, int], None]  # (done, total)

DEFAULTS = {"kind": "learning", "status": "active", "confidence": "medium"}


def content_hash(title: str, content: str) -> str:
    return hashlib.sha256(document_text(title, content).encode("utf-8")).hexdigest()


class Lore:
    """One database, its config and (lazily) its embedding model."""

    def __init__(self, settings: Settings, conn: Any, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.config = settings.config
        self.conn = conn
        self.store = SQLiteStore(conn)
        self._embedder = embedder
        self.vectors = MemoryIndex()  # loaded on first use, refreshed incrementally
        self._conversations: Any = None

    @property
    def conversations(self) -> Conversations:
        """Conversation memory: imported transcripts and their search."""
        if self._conversations is None:
            from lore.conversations import Conversations

            self._conversations = Conversations(self)
        return self._conversations

    @classmethod
    def open(cls, settings: Settings, *, embedder: Embedder | None = None,
             create: bool = True) -> Lore:
        path = settings.db_path
        tighten_home(settings.home)  # a home made by an older Lore becomes private
        conn = connect(path, create=create)
        try:
            migrate(conn, str(path))
        except BaseException:
            conn.close()
            raise
        return cls(settings, conn, embedder)

    def close(self) -> None:
        try:
            self.store.optimize()
        except Exception:  # noqa: BLE001 - an optimisation; a locked or read-only file skips it
            pass
        self.conn.close()

    def __enter__(self) -> Lore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- embeddings -------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = create_embedder(self.config.embedding)
        return self._embedder

    def configured_model(self) -> str:
        if self._embedder is not None:
            return self._embedder.name
        cfg = self.config.embedding
        if cfg.backend == "openai" and cfg.model == "all-MiniLM-L6-v2":
            return "text-embedding-3-small"
        return canonical_model(cfg.model)

    def stored_model(self) -> tuple[str | None, int | None]:
        dims = self.store.meta("embedding_dimensions")
        return self.store.meta("embedding_model"), int(dims) if dims else None

    def check_model(self) -> None:
        """Stop before mixing vectors of two models in one index."""
        stored, dims = self.stored_model()
        wanted = self.configured_model()
        if stored is not None and stored != wanted:
            raise EmbeddingMismatch(
                f"the database was embedded with {stored} ({dims} dims) but the config asks for "
                f"{wanted}; run `lore admin reembed` to rebuild, or set embedding.model back"
            )

    def _embed(self, texts: Sequence[str], progress: Progress | None = None,
               batch: int = 256) -> list[bytes]:
        out: list[bytes] = []
        for i in range(0, len(texts), batch):
            vecs = self.embedder.embed_documents(texts[i : i + batch])
            out += [v.astype("float32").tobytes() for v in vecs]
            if progress:
                progress(min(i + batch, len(texts)), len(texts))
        return out

    def _store_vectors(self, rows: Sequence[tuple[int, str, bytes]]) -> None:
        if not rows:
            return
        with atomic(self.conn):
            dims = self._record_model(len(rows[0][2]) // 4)
            self.store.create_vector_index(dims)
            self.store.put_vectors(rows)

    def _record_model(self, returned_dims: int | None = None) -> int:
        """Record the model on first use; stop if it returns vectors of another size."""
        if self.store.meta("embedding_model") is None:
            self.store.set_meta("embedding_model", self.embedder.name)
            self.store.set_meta("embedding_dimensions", str(self.embedder.dimensions))
            self.store.set_meta("embedding_backend", self.config.embedding.backend)
        dims = int(self.store.meta("embedding_dimensions") or 0)
        if returned_dims is not None and returned_dims != dims:
            raise EmbeddingMismatch(
                f"the model returned {returned_dims} dimensions but the database holds "
                f"{dims}; run `lore admin reembed`"
            )
        return dims

    def warm(self) -> None:
        """Load the model and the vectors now (long-running processes: MCP server, worker)."""
        if self.store.meta("embedding_model") is not None:
            self.check_model()
            self.embedder.embed_query("warm up")
            self.vectors.sync(self.store)

    # ---- lessons ----------------------------------------------------------------------
    def add_lesson(self, title: str, content: str = "", **fields: Any) -> Lesson:
        """Validate, store, index and embed a new lesson; return it."""
        data = validate_fields({"title": title, "content": content, **fields})
        self.check_model()
        lesson_id = new_id()
        row = self._row(lesson_id, data, existing=None)
        vector = self._embed([document_text(row.values["title"], row.values["content"])])[0]
        with atomic(self.conn):
            seq = self.store.insert(row)
            self._store_vectors([(seq, row.values["content_hash"], vector)])
        return self.store.get(lesson_id)

    def get_lesson(self, lesson_id: str) -> Lesson:
        return self.store.get(lesson_id)

    def update_lesson(self, lesson_id: str, **changes: Any) -> Lesson:
        """Change the given fields; lists replace the old list. Re-embeds only changed text."""
        current = self.store.get(lesson_id)
        data = validate_fields(changes)
        row = self._row(lesson_id, data, existing=current)
        changed_text = row.values["content_hash"] != current.content_hash
        vector = None
        if changed_text:
            self.check_model()
            vector = self._embed([document_text(row.values["title"], row.values["content"])])[0]
        seq = self.store.seq_of(lesson_id)
        with atomic(self.conn):
            self.store.replace(seq, row)
            if vector is not None:
                self._store_vectors([(seq, row.values["content_hash"], vector)])
        return self.store.get(lesson_id)

    def delete_lesson(self, lesson_id: str) -> Lesson:
        lesson = self.store.get(lesson_id)
        self.store.delete(lesson_id)
        return lesson

    def _row(self, lesson_id: str, data: LessonFields, existing: Lesson | None,
             times: tuple[str, str] | None = None) -> LessonRow:
        base = existing.to_dict() if existing else {}
        # The one door for lesson text (CLI, MCP, import, learning): secrets never reach the
        # lessons, their evidence or the embedding model.
        given = cast("dict[str, Any]", redact_value(data.model_dump(exclude_none=True)))

        def pick(name: str, default: Any = None) -> Any:
            if name in given:
                return given[name]
            return base.get(name, default) if existing else default

        values: dict[str, Any] = {}
        for name in ("title", "content", "source_notes", "project", "summary", "problem_solved",
                     "when_to_apply", "when_not_to_apply", "source", "score"):
            values[name] = pick(name)
        values["content"] = values["content"] or ""
        if not values["title"]:
            raise InvalidInput("title must not be empty")
        for name in ("kind", "status", "confidence"):
            values[name] = pick(name, DEFAULTS[name])
        if "confidence" not in given and "score" in given and not existing:
            values["confidence"] = self.store.confidence_for_score(given["score"])
        for name in ("kind", "status", "confidence"):
            self.store.check_reference(name, values[name])
        if values["source"] is not None:
            self.store.check_reference("source", values["source"])
        if values["project"] is not None:
            values["project"] = values["project"].strip() or None
        pref = given.get("preference", base.get("preference") if existing else None) or {}
        for col, key in zip(PREFERENCE_COLUMNS, ("context", "rejected", "preferred", "reasoning"),
                            strict=True):
            values[col] = pref.get(key) or None
        values["metadata"] = json.dumps(pick("metadata", {}) or {}, sort_keys=True)
        created, updated = times or ((existing.created_at if existing else now()), now())
        values["created_at"] = created
        values["updated_at"] = updated
        values["content_hash"] = content_hash(values["title"], values["content"])
        aliases = self.tag_aliases()
        return LessonRow(
            id=lesson_id,
            values=values,
            tags=normalize.tags(pick("tags", ()) or (), aliases),
            contexts=normalize.unique(pick("contexts", ()) or (), normalize.context),
            anti_contexts=normalize.unique(pick("anti_contexts", ()) or (), normalize.context),
            file_types=normalize.unique(pick("file_types", ()) or (), normalize.file_type),
            examples=tuple(CodeExample(**e) for e in pick("examples", ()) or ()),
            trade_offs=tuple(TradeOff(**t) for t in pick("trade_offs", ()) or ()),
            evidence=tuple(Evidence(**e) for e in pick("evidence", ()) or ()),
        )

    def tag_aliases(self) -> dict[str, str]:
        aliases = self.store.tag_aliases()
        for k, v in self.config.tag_aliases.items():
            aliases[normalize.tag(k)] = normalize.tag(v)
        return aliases

    # ---- recall -----------------------------------------------------------------------
    def recall(
        self,
        query: str,
        filters: Filters | None = None,
        limit: int | None = None,
        *,
        mode: hybrid.Mode = "hybrid",
        track: bool = True,
        interface: str = "api",
    ) -> list[SearchResult]:
        """Hybrid search. Usage stats are bumped for the results returned; the query is logged."""
        started = time.perf_counter()
        filters = self.resolve_filters(filters or Filters())
        limit = limit or self.config.search.default_limit
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1 (got {limit})")
        embed = None
        if mode != "keyword" and self.store.meta("embedding_model") is not None:
            self.check_model()
            embed = self.embedder.embed_query
        results = hybrid.search(self.store, query, filters, limit, self.config.search, embed,
                                self.vectors, mode)
        if track:
            took = (time.perf_counter() - started) * 1000
            ids = [r.id for r in results]
            stamp = now()
            try:
                with atomic(self.conn):
                    if self.config.search.track_usage:
                        self.store.record_usage(ids, stamp)
                    self.store.log_search(stamp, query, filters.to_dict(), ids, took, interface)
            except StoreBusy:
                pass  # statistics are best-effort: a busy writer must not fail a search
        return results

    def resolve_filters(self, f: Filters) -> Filters:
        """Normalise and check filter values; unknown reference values list the valid ones."""
        if f.min_confidence:
            self.store.check_reference("confidence", f.min_confidence)
        for s in f.sources:
            self.store.check_reference("source", s)
        for k in f.kinds:
            self.store.check_reference("kind", k)
        for s in f.statuses:
            self.store.check_reference("status", s)
        return Filters(
            tags=normalize.tags(f.tags, self.tag_aliases()),
            contexts=normalize.unique(f.contexts, normalize.context),
            min_confidence=f.min_confidence,
            sources=tuple(f.sources),
            kinds=tuple(f.kinds),
            statuses=tuple(f.statuses),
            project=f.project,
            file_types=normalize.unique(f.file_types, normalize.file_type),
        )

    # ---- graph ------------------------------------------------------------------------
    def link(self, from_id: str, to_id: str, relation: str = "related_to") -> Edge:
        relation = relation.strip()
        if not relation:
            raise InvalidInput("relation must not be empty")
        if from_id == to_id:
            raise InvalidInput("a lesson cannot be linked to itself")
        for lid in (from_id, to_id):
            self.store.seq_of(lid)
        edge = Edge(from_id, to_id, relation, now())
        self.store.add_edge(edge)
        return edge

    def unlink(self, from_id: str, to_id: str, relation: str | None = None) -> int:
        for lid in (from_id, to_id):
            self.store.seq_of(lid)
        relation = relation.strip() if relation is not None else None
        removed = self.store.remove_edges(from_id, to_id, relation)
        if removed == 0:
            what = f" '{relation}'" if relation else ""
            raise NotFound(f"no{what} link from {from_id} to {to_id}")
        return removed

    def related(self, lesson_id: str, depth: int = 1, relations: Sequence[str] = (),
                direction: str = "both") -> list[RelatedLesson]:
        return graph_ops.related(self.store, lesson_id, depth, relations, direction)

    def path(self, start: str, goal: str, max_depth: int = 6, relations: Sequence[str] = (),
             directed: bool = False) -> list[graph_ops.PathStep]:
        return graph_ops.shortest_path(self.store, start, goal, max_depth, relations, directed)

    def subgraph(self, lesson_id: str, depth: int = 1, relations: Sequence[str] = (),
                 direction: str = "both") -> graph_ops.Subgraph:
        return graph_ops.subgraph(self.store, lesson_id, depth, relations, direction)

    # ---- reference data and tags ------------------------------------------------------
    def list_confidence_levels(self) -> list[RefItem]:
        return self.store.reference("confidence")

    def list_sources(self) -> list[RefItem]:
        return self.store.reference("source")

    def list_kinds(self) -> list[RefItem]:
        return self.store.reference("kind")

    def list_statuses(self) -> list[RefItem]:
        return self.store.reference("status")

    def list_relations(self) -> list[RefItem]:
        return self.store.reference("relation")

    def list_tags(self) -> list[tuple[str, int]]:
        return self.store.tag_counts()

    def unknown_tags(self, tags: Iterable[str]) -> list[str]:
        """Tags not in config ``known_tags`` (empty when known_tags is not configured)."""
        known = {normalize.tag(t) for t in self.config.known_tags}
        if not known:
            return []
        return [t for t in normalize.tags(tags, self.tag_aliases()) if t not in known]

    def merge_tags(self, old: str, new: str) -> int:
        old_n, new_n = normalize.tag(old), normalize.tag(new)
        if not old_n or not new_n:
            raise InvalidInput("both tags must be non-empty")
        if old_n == new_n:
            raise InvalidInput(f"'{old}' and '{new}' are the same tag")
        if not any(t == old_n for t, _ in self.store.tag_counts()):
            raise NotFound(f"no lesson is tagged '{old_n}'; `lore recall tags` lists the tags")
        return len(self.store.merge_tag(old_n, new_n))

    # ---- statistics -------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        path = self.settings.db_path
        size = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
        model, dims = self.stored_model()
        s = self.store
        return {
            "database": str(path),
            "size_bytes": size,
            "schema_version": SCHEMA_VERSION,
            "lessons": s.count(),
            "by_kind": dict(s.grouped_counts("kind")),
            "by_status": dict(s.grouped_counts("status")),
            "by_confidence": dict(s.grouped_counts("confidence")),
            "by_project": {k or "(global)": v for k, v in s.grouped_counts("project")},
            "by_source": {k or "(none)": v for k, v in s.grouped_counts("source")},
            "tags": len(s.tag_counts()),
            "edges": s.table_count("edges"),
            "vectors": s.vector_count(),
            "embedding_model": model,
            "embedding_dimensions": dims,
            "configured_model": self.configured_model(),
            "searches": s.table_count("search_log"),
            "top_queries": [{"query": q, "count": n} for q, n in s.top_queries(5)],
            "most_used": [{"id": i, "title": t, "usage_count": n} for i, t, n in s.most_used(5)],
        }

    # ---- export / import --------------------------------------------------------------
    def export(self) -> Iterator[dict[str, Any]]:
        """One dict per lesson, with only its outgoing edges (so each edge appears once)."""
        for lesson in self.store.iter_lessons():
            data = lesson.to_dict()
            data["edges"] = [e for e in data["edges"] if e["from"] == lesson.id]
            yield data

    def import_lines(self, lines: Iterable[str], *, skip_invalid: bool = False,
                     progress: Progress | None = None) -> ImportReport:
        from lore.transfer import import_records

        report = import_records(self, lines, skip_invalid=skip_invalid, progress=progress)
        if report.added + report.updated:
            self.store.analyze()  # fresh statistics: the planner picks selective indexes
        return report

    def reembed(self, *, force: bool = False, progress: Progress | None = None) -> int:
        """Embed every lesson whose vector is missing or stale; everything if the model changed."""
        stored, _ = self.stored_model()
        changed = stored is not None and stored != self.configured_model()
        if changed or force:
            todo = self.store.lesson_texts()
        else:
            todo = self.store.lessons_needing_vectors()
        vectors = self._embed([document_text(t, c) for _, t, c, _ in todo], progress)
        with atomic(self.conn):
            if changed or force:
                self.store.drop_vectors()
                for key in ("embedding_model", "embedding_dimensions", "embedding_backend"):
                    self.store.delete_meta(key)
            rows = [(seq, h, v) for (seq, _, _, h), v in zip(todo, vectors, strict=True)]
            if rows:
                self._store_vectors(rows)
        return len(todo)


def require_id(value: str) -> str:
    value = value.strip()
    if not is_id(value):
        raise NotFound(f"'{value}' is not a lesson id (ids look like 01JD8X3Q5M0000000000000000)")
    return value
