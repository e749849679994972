"""Lessons on Postgres: the SQLite backend's table code where its SQL is portable, and here
what differs: identity keys (RETURNING), the keyword index (tsvector, ``ts_rank_cd``), pgvector
(cosine distance, an HNSW index), ``ON CONFLICT DO NOTHING``, the graph walk's grouping.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lore.ids import now
from lore.models import Filters
from lore.store.postgres.db import atomic, chunks
from lore.store.sqlite.lessons import LessonTables
from lore.store.sqlite.sync import tombstone

# The text search configuration: English stemming, as FTS5's porter tokenizer on SQLite.
TS_CONFIG = "english"


# A lesson's keywords: the title (weight A), the tags (B), the other text fields (C), over
# ``lessons l``; the same fields as the FTS5 columns title, tags, body on SQLite.
LESSON_DOC = (
    f"setweight(to_tsvector('{TS_CONFIG}', l.title), 'A') || "
    f"setweight(to_tsvector('{TS_CONFIG}', replace(coalesce((SELECT string_agg(t.tag, ' ') "
    "FROM lesson_tags t WHERE t.lesson_id = l.id), ''), '-', ' ')), 'B') || "
    f"setweight(to_tsvector('{TS_CONFIG}', concat_ws(E'\\n', l.content, l.summary, "
    "l.problem_solved, l.when_to_apply, l.pref_context, l.pref_rejected, l.pref_preferred, "
    "l.pref_reasoning)), 'C')"
)


def unquote(term: str) -> str:
    """An FTS5-quoted term (``"word"``, see ``store.fts_terms``) as its plain word."""
    if len(term) >= 2 and term[0] == term[-1] == '"':
        return term[1:-1].replace('""', '"')
    return term


def tsquery(terms: Sequence[str]) -> tuple[str, list[str]]:
    """The terms OR-ed as one tsquery expression (each through ``plainto_tsquery``, so any
    text is a valid query) and its parameters."""
    parts = [f"plainto_tsquery('{TS_CONFIG}', ?)" for _ in terms]
    return "(" + " || ".join(parts) + ")", [unquote(t) for t in terms]


def rank_weights(weights: Sequence[float]) -> str:
    """ts_rank_cd's weight array {D, C, B, A} from (A, B, C) weights, scaled to at most 1."""
    top = max(max(weights), 1e-9)
    a, b, c = (w / top for w in weights)
    return f"'{{0.0, {c:.6f}, {b:.6f}, {a:.6f}}}'"


def vector_bytes(v: Any) -> bytes:
    """A pgvector value (numpy array through pgvector's loader) as float32 bytes."""
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v)
    arr = v.to_numpy() if hasattr(v, "to_numpy") else np.asarray(v)
    return np.asarray(arr, dtype=np.float32).tobytes()


def vector_value(blob: bytes) -> Any:
    return np.frombuffer(blob, dtype=np.float32)


class PGLessonTables(LessonTables):
    """The lesson tables on Postgres (implements ``LessonStore``)."""

    # ---- rows -------------------------------------------------------------------------
    def delete(self, lesson_id: str) -> None:
        seq = self.seq_of(lesson_id)
        with atomic(self.conn):
            self.conn.execute("DELETE FROM lessons WHERE seq = ?", (seq,))  # index rows cascade
            self.delete_vector(seq)
            tombstone(self.conn, lesson_id, now(), self.who[1] or "")

    # ---- keywords ---------------------------------------------------------------------
    def index_keywords(self, seq: int, lesson_id: str) -> None:
        """One lesson's tsvector (see ``LESSON_DOC``), in the same transaction as the write."""
        self.conn.execute(
            f"INSERT INTO lessons_fts (seq, doc) SELECT l.seq, {LESSON_DOC} "
            "FROM lessons l WHERE l.seq = ? "
            "ON CONFLICT (seq) DO UPDATE SET doc = excluded.doc", (seq,))

    def keyword_search(
        self, terms: Sequence[str], weights: tuple[float, float, float], limit: int,
        filters: Filters, max_postings: int, narrow: bool = True, *,
        anti_contexts_exclude: bool = False,
    ) -> list[tuple[int, float]]:
        """(seq, -rank) best first: lower is better, as BM25's convention on SQLite."""
        if not terms:
            return []
        if len(terms) > 1:
            terms = self._prune_terms(terms, max_postings)
        query, qparams = tsquery(terms)
        where, params = self._filter(filters, anti_contexts_exclude)
        sql = (
            f"SELECT f.seq, -ts_rank_cd({rank_weights(weights)}, f.doc, q.q) AS s "
            f"FROM (SELECT {query} AS q) q, lessons_fts f JOIN lessons l ON l.seq = f.seq "
            f"WHERE f.doc @@ q.q AND {where} ORDER BY s, f.seq LIMIT ?"
        )
        return [(r[0], float(r[1])) for r in self.conn.execute(sql, [*qparams, *params, limit])]

    def _prune_terms(self, terms: Sequence[str], max_postings: int) -> list[str]:
        from lore.store.sqlite.search import prune_terms

        counts = []
        for t in terms:
            query, qparams = tsquery([t])
            counts.append(int(self.conn.execute(
                f"SELECT count(*) FROM lessons_fts WHERE doc @@ {query}", qparams).fetchone()[0]))
        return prune_terms(terms, counts, max_postings)

    # ---- vectors ----------------------------------------------------------------------
    def has_vector_index(self) -> bool:
        return bool(self.conn.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() "
            "AND indexname = 'idx_lesson_vectors_hnsw'").fetchone())

    def create_vector_index(self, dimensions: int) -> None:
        """Fix the column to the model's dimensions and build the HNSW index (cosine)."""
        if self.has_vector_index():
            return
        dims = int(dimensions)
        with atomic(self.conn):
            # Building the graph in memory is several times faster than spilling to disk.
            self.conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
            self.conn.execute(
                f"ALTER TABLE lesson_vectors ALTER COLUMN embedding TYPE vector({dims})")
            self.conn.execute(
                "CREATE INDEX IF NOT EXISTS idx_lesson_vectors_hnsw ON lesson_vectors "
                "USING hnsw (embedding vector_cosine_ops)")

    def drop_vectors(self) -> None:
        with atomic(self.conn):
            self.conn.execute("DROP INDEX IF EXISTS idx_lesson_vectors_hnsw")
            self.conn.execute("DELETE FROM lesson_vectors")
            self.conn.execute("ALTER TABLE lesson_vectors ALTER COLUMN embedding TYPE vector")
            self._bump_vectors(reset=True)

    def _bump_vectors(self, reset: bool = False) -> int:
        """The next vector version, counted by the server: two writers never get the same."""
        version = int(self.conn.execute(
            "INSERT INTO meta (key, value) VALUES ('vectors_version', '1') ON CONFLICT (key) "
            "DO UPDATE SET value = (meta.value::bigint + 1)::text RETURNING value").fetchone()[0])
        if reset:
            self.set_meta("vectors_reset", str(version))
        return version

    def put_vectors(self, rows: Sequence[tuple[int, str, bytes]]) -> None:
        with atomic(self.conn):
            version = self._bump_vectors()
            self.conn.executemany(
                "INSERT INTO lesson_vectors (seq, content_hash, version, embedding) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (seq) DO UPDATE SET "
                "content_hash = excluded.content_hash, version = excluded.version, "
                "embedding = excluded.embedding",
                [(seq, h, version, vector_value(blob)) for seq, h, blob in rows])

    def delete_vector(self, seq: int) -> None:
        self._bump_vectors(reset=True)

    def knn(self, query: bytes, k: int) -> list[int]:
        """Nearest by cosine distance through the HNSW index, nearest first."""
        with atomic(self.conn):
            # The index returns at most ef_search rows, and a wider search finds the true
            # neighbours among many near-duplicates (bench/postgres_bench.py): 4 k, 200..1000.
            self.conn.execute(f"SET LOCAL hnsw.ef_search = {max(200, min(4 * int(k), 1000))}")
            return [r[0] for r in self.conn.execute(
                "SELECT seq FROM lesson_vectors ORDER BY embedding <=> ? LIMIT ?",
                (vector_value(query), k))]

    def vectors_since(self, version: int) -> list[tuple[int, bytes]]:
        return [(r[0], vector_bytes(r[1])) for r in self.conn.execute(
            "SELECT seq, embedding FROM lesson_vectors WHERE version > ? ORDER BY seq",
            (version,), binary=True)]

    def vector_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM lesson_vectors").fetchone()[0])

    def vectors_for(self, seqs: Sequence[int]) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        for chunk in chunks(list(seqs)):
            out += [(r[0], vector_bytes(r[1])) for r in self.conn.execute(
                "SELECT seq, embedding FROM lesson_vectors WHERE seq = ANY(?)", (chunk,),
                binary=True)]
        return out

    # ---- graph ------------------------------------------------------------------------
    def walk(self, start: str, depth: int, relations: Sequence[str],
             direction: str) -> list[tuple[str, int, str, str, str]]:
        """Breadth-first N-hop walk: each lesson once, at its shortest distance."""
        rel = "AND e.relation = ANY(?)" if relations else ""
        # Postgres allows one reference to the walk in its recursive term: both directions
        # are one join, the edge's far end and direction read from which end matched.
        far, way, near = {
            "out": ("e.to_id", "'out'::text", "e.from_id = w.id"),
            "in": ("e.from_id", "'in'::text", "e.to_id = w.id"),
        }.get(direction, ("CASE WHEN e.from_id = w.id THEN e.to_id ELSE e.from_id END",
                          "CASE WHEN e.from_id = w.id THEN 'out' ELSE 'in' END",
                          "(e.from_id = w.id OR e.to_id = w.id)"))
        visible, who = self.visible("v")  # never through a lesson its user may not see
        step = (f"SELECT {far}, w.depth + 1, e.relation, {way}, w.id FROM edges e "
                f"JOIN walk w ON {near} {self._join(visible, far)}WHERE w.depth < ? {rel}")
        params = [*who, depth, *([list(relations)] if relations else [])]
        sql = ("WITH RECURSIVE walk(id, depth, relation, direction, via) AS ("
               f"SELECT ?::text, 0, NULL::text, NULL::text, NULL::text UNION {step}"
               ") SELECT id, depth, relation, direction, via FROM (SELECT DISTINCT ON (id) * "
               "FROM walk WHERE id <> ? ORDER BY id, depth, relation, direction, via) s "
               "ORDER BY depth, id")
        return [(r[0], r[1], r[2], r[3], r[4])
                for r in self.conn.execute(sql, [start, *params, start])]

    # ---- tags, usage ------------------------------------------------------------------
    def merge_usage(self, seq: int, usage_count: int, last_used: str | None) -> None:
        self.conn.execute(
            "UPDATE lessons SET usage_count = greatest(usage_count, ?), "
            "last_used = coalesce(greatest(last_used, ?), last_used, ?) WHERE seq = ?",
            (usage_count, last_used, last_used, seq))

    def optimize(self) -> None:
        """Nothing per connection: autovacuum keeps the statistics on Postgres."""
