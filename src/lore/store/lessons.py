"""SQLite implementation of the lesson store: rows, child tables, keyword and vector indexes.

Every SQL statement about lessons lives here. Values are always bound; long
``IN`` lists are chunked; user text reaches FTS5 only through :func:`fts_query`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lore.errors import InvalidInput, NotFound
from lore.ids import new_id
from lore.models import (
    CodeExample,
    Edge,
    Evidence,
    Filters,
    Lesson,
    Preference,
    RefItem,
    TradeOff,
)
from lore.store.db import atomic

CHUNK = 500  # bound parameters per IN (...) list

# Columns of `lessons` a caller may set directly, with their Lesson attribute names.
SCALARS = (
    "title", "content", "kind", "status", "confidence", "score", "source", "source_notes",
    "project", "summary", "problem_solved", "when_to_apply", "when_not_to_apply",
)
PREFERENCE_COLUMNS = ("pref_context", "pref_rejected", "pref_preferred", "pref_reasoning")

REF_TABLES = {
    "confidence": ("confidence_levels", "confidence level"),
    "source": ("source_types", "source"),
    "kind": ("lesson_kinds", "kind"),
    "status": ("lesson_statuses", "status"),
}

_STOPWORDS = frozenset(
    "a an and are as at be by do does for from how i in is it of on or that the this to was "
    "what when where which why with you your we our can should".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)


def fts_terms(text: str) -> list[str]:
    """Any user text as quoted FTS5 terms, stop words dropped (unless nothing else is left).

    Every term is wrapped in double quotes, so operators, parentheses, colons and
    stray quotes in the input are plain text to FTS5 and can never be a syntax error.
    """
    words = [w.lower() for w in _WORD.findall(text)]
    kept = [w for w in words if w not in _STOPWORDS] or words
    return ['"' + w.replace('"', '""') + '"' for w in dict.fromkeys(kept)]


def fts_query(text: str) -> str | None:
    """The terms of :func:`fts_terms` joined by OR; None when the text has no word at all."""
    return " OR ".join(fts_terms(text)) or None


def prune_terms(terms: Sequence[str], counts: Sequence[int], max_postings: int) -> list[str]:
    """Keep the rarest terms while their rows add up to at most ``max_postings`` (BM25 weighs
    frequent terms least, and they are what makes a query scan the whole index)."""
    kept: list[tuple[int, str]] = []
    total = 0
    for n, i, t in sorted((n, i, t) for i, (t, n) in enumerate(zip(terms, counts, strict=True))):
        if n == 0:
            continue
        if kept and total + n > max_postings:
            break
        kept.append((i, t))
        total += n
    return [t for _, t in sorted(kept)] or list(terms[:1])


@dataclass(frozen=True, slots=True)
class LessonRow:
    """What the store needs to write a lesson; the core API builds it after validation."""

    id: str
    values: dict[str, Any]  # SCALARS + pref_* + metadata(json text) + times + hash
    tags: tuple[str, ...]
    contexts: tuple[str, ...]
    anti_contexts: tuple[str, ...]
    file_types: tuple[str, ...]
    examples: tuple[CodeExample, ...]
    trade_offs: tuple[TradeOff, ...]
    evidence: tuple[Evidence, ...]


class SQLiteStore:
    """The lesson tables of one database connection."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    # ---- meta -------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def analyze(self) -> None:
        self.conn.execute("ANALYZE")

    def optimize(self) -> None:
        # SQLite's advice for every connection: cheap, and re-runs ANALYZE only where the
        # statistics are stale, so filters keep using their selective indexes as data grows.
        self.conn.execute("PRAGMA optimize")

    def delete_meta(self, key: str) -> None:
        self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    # ---- reference tables -------------------------------------------------------------
    def reference(self, field: str) -> list[RefItem]:
        if field == "confidence":
            rows = self.conn.execute(
                "SELECT name, ordinal, description FROM confidence_levels ORDER BY ordinal"
            )
            return [RefItem(r[0], r[2], ordinal=r[1]) for r in rows]
        if field == "source":
            rows = self.conn.execute(
                "SELECT name, description, typical_confidence FROM source_types ORDER BY name"
            )
            return [RefItem(r[0], r[1], typical_confidence=r[2]) for r in rows]
        table = {"kind": "lesson_kinds", "status": "lesson_statuses", "relation": "relation_types"}[
            field
        ]
        rows = self.conn.execute(f"SELECT name, description FROM {table} ORDER BY name")
        return [RefItem(r[0], r[1]) for r in rows]

    def check_reference(self, field: str, value: str) -> None:
        """Raise InvalidInput listing the valid values when ``value`` is not one of them."""
        table, label = REF_TABLES[field]
        if self.conn.execute(f"SELECT 1 FROM {table} WHERE name = ?", (value,)).fetchone():
            return
        valid = ", ".join(item.name for item in self.reference(field))
        raise InvalidInput(f"invalid {label} '{value}'; valid: {valid}")

    def confidence_ordinal(self, name: str) -> int:
        self.check_reference("confidence", name)
        row = self.conn.execute(
            "SELECT ordinal FROM confidence_levels WHERE name = ?", (name,)
        ).fetchone()
        return int(row[0])

    def confidence_for_score(self, score: float) -> str:
        row = self.conn.execute(
            "SELECT name FROM confidence_levels WHERE min_score <= ? "
            "ORDER BY min_score DESC, ordinal DESC LIMIT 1",
            (score,),
        ).fetchone()
        return row[0] if row else "very-low"

    def max_confidence_ordinal(self) -> int:
        return int(self.conn.execute("SELECT max(ordinal) FROM confidence_levels").fetchone()[0])

    # ---- lessons ----------------------------------------------------------------------
    def seq_of(self, lesson_id: str) -> int:
        row = self.conn.execute("SELECT seq FROM lessons WHERE id = ?", (lesson_id,)).fetchone()
        if row is None:
            raise NotFound(f"no lesson with id {lesson_id}; `lore recall search` finds ids")
        return int(row[0])

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        found: set[str] = set()
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0] for r in self.conn.execute(f"SELECT id FROM lessons WHERE id IN ({marks})", chunk)
            )
        return found

    def insert(self, row: LessonRow) -> int:
        cols = ["id", *row.values]
        marks = ",".join("?" * len(cols))
        with atomic(self.conn):
            cur = self.conn.execute(
                f"INSERT INTO lessons ({','.join(cols)}) VALUES ({marks})",
                [row.id, *row.values.values()],
            )
            seq = int(cur.lastrowid)
            self._write_children(row)
            self._index_keywords(seq, row.id)
        return seq

    def replace(self, seq: int, row: LessonRow) -> None:
        """Overwrite a lesson's columns and children (update and import both use this)."""
        sets = ", ".join(f"{c} = ?" for c in row.values)
        with atomic(self.conn):
            self.conn.execute(
                f"UPDATE lessons SET {sets} WHERE seq = ?", [*row.values.values(), seq]
            )
            for table in ("lesson_tags", "lesson_contexts", "lesson_file_types", "code_examples",
                          "trade_offs", "evidence"):
                self.conn.execute(f"DELETE FROM {table} WHERE lesson_id = ?", (row.id,))
            self._write_children(row)
            self._index_keywords(seq, row.id)

    def delete(self, lesson_id: str) -> None:
        seq = self.seq_of(lesson_id)
        with atomic(self.conn):
            self.conn.execute("DELETE FROM lessons_fts WHERE rowid = ?", (seq,))
            self._delete_vector_index(seq)
            self.conn.execute("DELETE FROM lessons WHERE seq = ?", (seq,))

    def _write_children(self, row: LessonRow) -> None:
        lid = row.id
        self.conn.executemany(
            "INSERT INTO lesson_tags (lesson_id, tag) VALUES (?, ?)", [(lid, t) for t in row.tags]
        )
        self.conn.executemany(
            "INSERT INTO lesson_contexts (lesson_id, context, applies) VALUES (?, ?, ?)",
            [(lid, c, 1) for c in row.contexts] + [(lid, c, 0) for c in row.anti_contexts],
        )
        self.conn.executemany(
            "INSERT INTO lesson_file_types (lesson_id, file_type) VALUES (?, ?)",
            [(lid, f) for f in row.file_types],
        )
        self.conn.executemany(
            "INSERT INTO code_examples (id, lesson_id, position, language, code, context) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(new_id(), lid, i, e.language, e.code, e.context) for i, e in enumerate(row.examples)],
        )
        self.conn.executemany(
            "INSERT INTO trade_offs (id, lesson_id, position, type, description) "
            "VALUES (?, ?, ?, ?, ?)",
            [(new_id(), lid, i, t.type, t.description) for i, t in enumerate(row.trade_offs)],
        )
        if not row.evidence:
            return
        self.conn.executemany(
            "INSERT INTO evidence (id, lesson_id, position, quote, session_id, message_id, "
            "observed_at, source, context) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (new_id(), lid, i, e.quote, e.session_id, e.message_id, e.observed_at, e.source,
                 e.context)
                for i, e in enumerate(row.evidence)
            ],
        )

    def _index_keywords(self, seq: int, lesson_id: str) -> None:
        r = self.conn.execute(
            "SELECT title, content, summary, problem_solved, when_to_apply, pref_context, "
            "pref_rejected, pref_preferred, pref_reasoning FROM lessons WHERE seq = ?",
            (seq,),
        ).fetchone()
        tags = " ".join(
            t[0] for t in self.conn.execute(
                "SELECT tag FROM lesson_tags WHERE lesson_id = ?", (lesson_id,)
            )
        )
        body = "\n".join(v for v in tuple(r)[1:] if v)
        self.conn.execute("DELETE FROM lessons_fts WHERE rowid = ?", (seq,))
        self.conn.execute(
            "INSERT INTO lessons_fts (rowid, title, tags, body) VALUES (?, ?, ?, ?)",
            (seq, r[0], tags.replace("-", " "), body),
        )

    def get(self, lesson_id: str) -> Lesson:
        row = self.conn.execute("SELECT * FROM lessons WHERE id = ?", (lesson_id,)).fetchone()
        if row is None:
            raise NotFound(f"no lesson with id {lesson_id}; `lore recall search` finds ids")
        return self._hydrate(row)

    def _hydrate(self, row: Any) -> Lesson:
        lid = row["id"]
        q = self.conn.execute
        contexts = q(
            "SELECT context, applies FROM lesson_contexts WHERE lesson_id = ? ORDER BY context",
            (lid,),
        ).fetchall()
        pref = Preference(*(row[c] or "" for c in PREFERENCE_COLUMNS))
        return Lesson(
            id=lid,
            title=row["title"],
            content=row["content"],
            kind=row["kind"],
            status=row["status"],
            confidence=row["confidence"],
            score=row["score"],
            source=row["source"],
            source_notes=row["source_notes"],
            project=row["project"],
            summary=row["summary"],
            problem_solved=row["problem_solved"],
            when_to_apply=row["when_to_apply"],
            when_not_to_apply=row["when_not_to_apply"],
            preference=None if pref.is_empty() else pref,
            file_types=tuple(
                r[0] for r in q(
                    "SELECT file_type FROM lesson_file_types WHERE lesson_id = ? ORDER BY file_type",
                    (lid,),
                )
            ),
            tags=tuple(
                r[0] for r in q("SELECT tag FROM lesson_tags WHERE lesson_id = ? ORDER BY tag", (lid,))
            ),
            contexts=tuple(c for c, applies in contexts if applies),
            anti_contexts=tuple(c for c, applies in contexts if not applies),
            examples=tuple(
                CodeExample(code=r[0], language=r[1], context=r[2])
                for r in q(
                    "SELECT code, language, context FROM code_examples WHERE lesson_id = ? "
                    "ORDER BY position",
                    (lid,),
                )
            ),
            trade_offs=tuple(
                TradeOff(type=r[0], description=r[1])
                for r in q(
                    "SELECT type, description FROM trade_offs WHERE lesson_id = ? ORDER BY position",
                    (lid,),
                )
            ),
            evidence=tuple(
                Evidence(quote=r[0], session_id=r[1], message_id=r[2], observed_at=r[3], source=r[4],
                         context=r[5])
                for r in q(
                    "SELECT quote, session_id, message_id, observed_at, source, context FROM evidence "
                    "WHERE lesson_id = ? ORDER BY position",
                    (lid,),
                )
            ),
            edges=tuple(self.edges_of(lid)),
            metadata=json.loads(row["metadata"] or "{}"),
            usage_count=row["usage_count"],
            last_used=row["last_used"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            content_hash=row["content_hash"],
        )

    def iter_lessons(self, order: str = "seq") -> Iterator[Lesson]:
        for row in self.conn.execute(f"SELECT * FROM lessons ORDER BY {order}").fetchall():
            yield self._hydrate(row)

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM lessons").fetchone()[0])

    def brief(self, seqs: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The columns a search result needs, for these lessons."""
        out: dict[int, dict[str, Any]] = {}
        for chunk in _chunks(list(seqs)):
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(
                "SELECT l.seq, l.id, l.title, l.kind, l.confidence, l.usage_count, "
                "l.updated_at, c.ordinal FROM lessons l "
                "JOIN confidence_levels c ON c.name = l.confidence "
                f"WHERE l.seq IN ({marks})",
                chunk,
            ):
                out[r[0]] = dict(r)
        return out

    def contents(self, seqs: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for chunk in _chunks(list(seqs)):
            marks = ",".join("?" * len(chunk))
            out.update(self.conn.execute(
                f"SELECT seq, content FROM lessons WHERE seq IN ({marks})", chunk
            ).fetchall())
        return out

    def anti_context_hits(self, seqs: Sequence[int], contexts: Sequence[str]) -> set[int]:
        if not seqs or not contexts:
            return set()
        hits: set[int] = set()
        cmarks = ",".join("?" * len(contexts))
        for chunk in _chunks(list(seqs)):
            marks = ",".join("?" * len(chunk))
            hits.update(
                r[0] for r in self.conn.execute(
                    "SELECT l.seq FROM lessons l JOIN lesson_contexts c ON c.lesson_id = l.id "
                    f"WHERE c.applies = 0 AND c.context IN ({cmarks}) AND l.seq IN ({marks})",
                    [*contexts, *chunk],
                )
            )
        return hits

    # ---- filters ----------------------------------------------------------------------
    def filter_sql(self, f: Filters, *, anti_contexts_exclude: bool) -> tuple[str, list[Any]]:
        """A WHERE clause over ``lessons l`` for the filters, and its parameters."""
        where: list[str] = []
        params: list[Any] = []
        if f.statuses:
            where.append(f"l.status IN ({','.join('?' * len(f.statuses))})")
            params += f.statuses
        if f.kinds:
            where.append(f"l.kind IN ({','.join('?' * len(f.kinds))})")
            params += f.kinds
        if f.sources:
            where.append(f"l.source IN ({','.join('?' * len(f.sources))})")
            params += f.sources
        if f.min_confidence:
            where.append(
                "l.confidence IN (SELECT name FROM confidence_levels WHERE ordinal >= "
                "(SELECT ordinal FROM confidence_levels WHERE name = ?))"
            )
            params.append(f.min_confidence)
        if f.project is not None:
            where.append("(l.project IS NULL OR l.project = ?)")
            params.append(f.project)
        if f.tags:
            where.append(
                "l.id IN (SELECT lesson_id FROM lesson_tags WHERE tag IN "
                f"({','.join('?' * len(f.tags))}))"
            )
            params += f.tags
        if f.file_types:
            marks = ",".join("?" * len(f.file_types))
            where.append(
                "(NOT EXISTS (SELECT 1 FROM lesson_file_types t WHERE t.lesson_id = l.id) OR "
                f"l.id IN (SELECT lesson_id FROM lesson_file_types WHERE file_type IN ({marks})))"
            )
            params += f.file_types
        if f.contexts:
            marks = ",".join("?" * len(f.contexts))
            # A lesson with contexts applies only there; one without applies everywhere.
            where.append(
                "(NOT EXISTS (SELECT 1 FROM lesson_contexts c WHERE c.lesson_id = l.id "
                "AND c.applies = 1) OR l.id IN (SELECT lesson_id FROM lesson_contexts WHERE "
                f"applies = 1 AND context IN ({marks})))"
            )
            params += f.contexts
            if anti_contexts_exclude:
                where.append(
                    "l.id NOT IN (SELECT lesson_id FROM lesson_contexts WHERE applies = 0 AND "
                    f"context IN ({marks}))"
                )
                params += f.contexts
        return (" AND ".join(where) or "1"), params

    def count_where(self, where: str, params: Sequence[Any]) -> int:
        return int(
            self.conn.execute(f"SELECT count(*) FROM lessons l WHERE {where}", params).fetchone()[0]
        )

    # ---- keyword search ---------------------------------------------------------------
    def keyword_search(
        self, terms: Sequence[str], weights: tuple[float, float, float], limit: int,
        where: str, params: Sequence[Any], max_postings: int, narrow: bool = True,
    ) -> list[tuple[int, float]]:
        """(seq, bm25) best first; bm25 is negative, lower is better (FTS5 convention).

        BM25 scores every row that matches any term, so a query full of common words
        costs as much as the corpus is large. Past ``max_postings`` matching rows, the
        most frequent terms are dropped (rarest first are kept): they carry the least
        weight in BM25 anyway, and the cost stays bounded at 100,000 lessons.
        """
        if not terms:
            return []
        if len(terms) > 1:
            terms = self._prune_terms(terms, max_postings)
        match = " OR ".join(terms)
        if not narrow:
            # Only a status filter: rank without touching the (wide) lessons rows, then
            # drop the few hits in other statuses; join only if that leaves too few.
            hits = [(r[0], r[1]) for r in self.conn.execute(
                "SELECT rowid, bm25(lessons_fts, ?, ?, ?) AS s FROM lessons_fts "
                "WHERE lessons_fts MATCH ? ORDER BY s LIMIT ?", [*weights, match, 2 * limit])]
            keep = self.seqs_where([s for s, _ in hits], where, params)
            kept = [h for h in hits if h[0] in keep][:limit]
            if len(kept) == limit or len(hits) < 2 * limit:
                return kept
        sql = (
            "SELECT f.rowid, bm25(lessons_fts, ?, ?, ?) AS s FROM lessons_fts f "
            "JOIN lessons l ON l.seq = f.rowid "
            f"WHERE lessons_fts MATCH ? AND {where} ORDER BY s LIMIT ?"
        )
        return [(r[0], r[1]) for r in self.conn.execute(sql, [*weights, match, *params, limit])]

    def _prune_terms(self, terms: Sequence[str], max_postings: int) -> list[str]:
        counts = [int(self.conn.execute(
            "SELECT count(*) FROM lessons_fts WHERE lessons_fts MATCH ?", (t,)).fetchone()[0])
            for t in terms]
        return prune_terms(terms, counts, max_postings)

    # ---- vectors ----------------------------------------------------------------------
    # Float32 blobs in lesson_vectors are the truth; lesson_vec_i8 is a sqlite-vec index of
    # the same vectors quantised to int8 (a quarter of the size) for KNN inside SQLite.
    def has_vector_index(self) -> bool:
        return bool(
            self.conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'lesson_vec_i8'").fetchone()
        )

    def create_vector_index(self, dimensions: int) -> None:
        self.conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS lesson_vec_i8 USING "
            f"vec0(embedding int8[{int(dimensions)}] distance_metric=cosine)"
        )

    def drop_vectors(self) -> None:
        with atomic(self.conn):
            self.conn.execute("DROP TABLE IF EXISTS lesson_vec_i8")
            self.conn.execute("DELETE FROM lesson_vectors")
            self._bump_vectors(reset=True)

    def vector_versions(self) -> tuple[int, int]:
        """(last write, last write that removed vectors): tells caches what to reload."""
        rows = dict(self.conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('vectors_version', 'vectors_reset')"
        ).fetchall())
        return int(rows.get("vectors_version", 0)), int(rows.get("vectors_reset", 0))

    def _bump_vectors(self, reset: bool = False) -> int:
        version = self.vector_versions()[0] + 1
        self.set_meta("vectors_version", str(version))
        if reset:
            self.set_meta("vectors_reset", str(version))
        return version

    def lesson_texts(self) -> list[tuple[int, str, str, str]]:
        """(seq, title, content, content_hash) of every lesson."""
        return [
            (r[0], r[1], r[2], r[3])
            for r in self.conn.execute(
                "SELECT seq, title, content, content_hash FROM lessons ORDER BY seq"
            )
        ]

    def lessons_needing_vectors(self) -> list[tuple[int, str, str, str]]:
        """(seq, title, content, content_hash) of lessons without an up-to-date vector."""
        return [
            (r[0], r[1], r[2], r[3])
            for r in self.conn.execute(
                "SELECT l.seq, l.title, l.content, l.content_hash FROM lessons l "
                "LEFT JOIN lesson_vectors v ON v.seq = l.seq "
                "WHERE v.seq IS NULL OR v.content_hash <> l.content_hash ORDER BY l.seq"
            )
        ]

    def put_vectors(self, rows: Sequence[tuple[int, str, bytes]]) -> None:
        """Store (seq, content_hash, float32 bytes) and their index entries."""
        with atomic(self.conn):
            version = self._bump_vectors()
            self.conn.executemany(
                "INSERT INTO lesson_vectors (seq, content_hash, version, embedding) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(seq) DO UPDATE SET "
                "content_hash = excluded.content_hash, version = excluded.version, "
                "embedding = excluded.embedding",
                [(seq, h, version, blob) for seq, h, blob in rows],
            )
            self.conn.executemany(
                "DELETE FROM lesson_vec_i8 WHERE rowid = ?", [(r[0],) for r in rows]
            )
            self.conn.executemany(
                "INSERT INTO lesson_vec_i8 (rowid, embedding) VALUES (?, vec_quantize_int8(?, 'unit'))",
                [(r[0], r[2]) for r in rows],
            )

    def _delete_vector_index(self, seq: int) -> None:
        if self.has_vector_index():
            self.conn.execute("DELETE FROM lesson_vec_i8 WHERE rowid = ?", (seq,))
        self._bump_vectors(reset=True)

    def knn(self, query: bytes, k: int) -> list[int]:
        """Nearest neighbours by the int8 index, nearest first (re-score them exactly)."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT rowid FROM lesson_vec_i8 WHERE embedding MATCH "
                "vec_quantize_int8(?, 'unit') AND k = ?",
                (query, k),
            )
        ]

    def vectors_since(self, version: int) -> list[tuple[int, bytes]]:
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT seq, embedding FROM lesson_vectors WHERE version > ? ORDER BY seq", (version,)
            )
        ]

    def vector_count(self) -> int:
        # Counted through the version index: the table itself is mostly blob pages.
        return int(self.conn.execute(
            "SELECT count(*) FROM lesson_vectors INDEXED BY idx_lesson_vectors_version"
        ).fetchone()[0])

    def allowed_seqs(self, where: str, params: Sequence[Any]) -> list[int]:
        return [r[0] for r in self.conn.execute(f"SELECT l.seq FROM lessons l WHERE {where}", params)]

    def vectors_for(self, seqs: Sequence[int]) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        for chunk in _chunks(list(seqs)):
            marks = ",".join("?" * len(chunk))
            out += [
                (r[0], r[1])
                for r in self.conn.execute(
                    f"SELECT seq, embedding FROM lesson_vectors WHERE seq IN ({marks})", chunk
                )
            ]
        return out

    def vectors_where(self, where: str, params: Sequence[Any]) -> list[tuple[int, bytes]]:
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT v.seq, v.embedding FROM lesson_vectors v JOIN lessons l ON l.seq = v.seq "
                f"WHERE {where}",
                params,
            )
        ]

    def seqs_where(self, seqs: Sequence[int], where: str, params: Sequence[Any]) -> set[int]:
        if where == "1":
            return set(seqs)
        keep: set[int] = set()
        for chunk in _chunks(list(seqs)):
            marks = ",".join("?" * len(chunk))
            keep.update(
                r[0] for r in self.conn.execute(
                    f"SELECT l.seq FROM lessons l WHERE l.seq IN ({marks}) AND {where}",
                    [*chunk, *params],
                )
            )
        return keep

    # ---- usage and the search log -----------------------------------------------------
    def merge_usage(self, seq: int, usage_count: int, last_used: str | None) -> None:
        """Keep the larger usage count and the later last-used time (import of another copy)."""
        self.conn.execute(
            "UPDATE lessons SET usage_count = max(usage_count, ?), "
            "last_used = coalesce(max(last_used, ?), last_used, ?) WHERE seq = ?",
            (usage_count, last_used, last_used, seq),
        )

    def record_usage(self, ids: Sequence[str], at: str) -> None:
        if not ids:
            return
        with atomic(self.conn):
            self.conn.executemany(
                "UPDATE lessons SET usage_count = usage_count + 1, last_used = ? WHERE id = ?",
                [(at, i) for i in ids],
            )

    def log_search(
        self, at: str, query: str, filters: dict[str, Any], ids: Sequence[str], took_ms: float,
        interface: str,
    ) -> None:
        with atomic(self.conn):
            self.conn.execute(
                "INSERT INTO search_log (at, query, filters, result_ids, took_ms, interface) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (at, query, json.dumps(filters), json.dumps(list(ids)), took_ms, interface),
            )

    # ---- graph ------------------------------------------------------------------------
    def edges_of(self, lesson_id: str) -> list[Edge]:
        return [
            Edge(r[0], r[1], r[2], r[3])
            for r in self.conn.execute(
                "SELECT from_id, to_id, relation, created_at FROM edges "
                "WHERE from_id = ? OR to_id = ? ORDER BY created_at, relation",
                (lesson_id, lesson_id),
            )
        ]

    def add_edge(self, edge: Edge) -> bool:
        with atomic(self.conn):
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO edges (from_id, to_id, relation, created_at) "
                "VALUES (?, ?, ?, ?)",
                (edge.from_id, edge.to_id, edge.relation, edge.created_at),
            )
        return cur.rowcount > 0

    def remove_edges(self, from_id: str, to_id: str, relation: str | None) -> int:
        sql = "DELETE FROM edges WHERE from_id = ? AND to_id = ?"
        params: list[Any] = [from_id, to_id]
        if relation is not None:
            sql += " AND relation = ?"
            params.append(relation)
        with atomic(self.conn):
            cur = self.conn.execute(sql, params)
        return cur.rowcount

    def walk(
        self, start: str, depth: int, relations: Sequence[str], direction: str
    ) -> list[tuple[str, int, str, str, str]]:
        """Breadth-first N-hop walk with a recursive CTE: (id, depth, relation, direction, via).

        Each lesson is reported once, at its shortest distance.
        """
        rel_filter = ""
        rel_params: list[Any] = []
        if relations:
            rel_filter = f"AND e.relation IN ({','.join('?' * len(relations))})"
            rel_params = list(relations)
        steps = []
        params: list[Any] = []
        if direction in ("out", "both"):
            steps.append(
                "SELECT e.to_id, w.depth + 1, e.relation, 'out', w.id FROM edges e "
                f"JOIN walk w ON e.from_id = w.id WHERE w.depth < ? {rel_filter}"
            )
            params += [depth, *rel_params]
        if direction in ("in", "both"):
            steps.append(
                "SELECT e.from_id, w.depth + 1, e.relation, 'in', w.id FROM edges e "
                f"JOIN walk w ON e.to_id = w.id WHERE w.depth < ? {rel_filter}"
            )
            params += [depth, *rel_params]
        sql = (
            "WITH RECURSIVE walk(id, depth, relation, direction, via) AS ("
            "SELECT ?, 0, NULL, NULL, NULL UNION "
            + " UNION ".join(steps)
            + ") SELECT id, min(depth) AS d, relation, direction, via FROM walk "
            "WHERE id <> ? GROUP BY id ORDER BY d, id"
        )
        # UNION (not UNION ALL) drops repeated rows, and the depth bound ends cycles.
        rows = self.conn.execute(sql, [start, *params, start]).fetchall()
        return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def neighbours(self, ids: Sequence[str], relations: Sequence[str]) -> list[Edge]:
        """Every edge touching any of ``ids`` (both directions)."""
        out: list[Edge] = []
        rel_filter = ""
        if relations:
            rel_filter = f" AND relation IN ({','.join('?' * len(relations))})"
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            out += [
                Edge(r[0], r[1], r[2], r[3])
                for r in self.conn.execute(
                    "SELECT from_id, to_id, relation, created_at FROM edges "
                    f"WHERE (from_id IN ({marks}) OR to_id IN ({marks})){rel_filter}",
                    [*chunk, *chunk, *relations],
                )
            ]
        return out

    def titles(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(
                f"SELECT id, title, kind FROM lessons WHERE id IN ({marks})", chunk
            ):
                out[r[0]] = (r[1], r[2])
        return out

    # ---- tags -------------------------------------------------------------------------
    def tag_counts(self) -> list[tuple[str, int]]:
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT tag, count(*) FROM lesson_tags GROUP BY tag ORDER BY count(*) DESC, tag"
            )
        ]

    def tag_aliases(self) -> dict[str, str]:
        return {
            r[0]: r[1]
            for r in self.conn.execute(
                "SELECT from_tag, to_tag FROM tag_relations WHERE relation = 'alias_of'"
            )
        }

    def merge_tag(self, old: str, new: str) -> list[str]:
        """Move every lesson tagged ``old`` to ``new``; return the ids touched."""
        with atomic(self.conn):
            ids = [
                r[0] for r in self.conn.execute(
                    "SELECT lesson_id FROM lesson_tags WHERE tag = ?", (old,)
                )
            ]
            self.conn.execute(
                "INSERT OR IGNORE INTO lesson_tags (lesson_id, tag) "
                "SELECT lesson_id, ? FROM lesson_tags WHERE tag = ?",
                (new, old),
            )
            self.conn.execute("DELETE FROM lesson_tags WHERE tag = ?", (old,))
            self.conn.execute(
                "INSERT OR IGNORE INTO tag_relations (from_tag, to_tag, relation) "
                "VALUES (?, ?, 'alias_of')",
                (old, new),
            )
            # Aliases that pointed at the old tag follow it.
            self.conn.execute(
                "UPDATE OR IGNORE tag_relations SET to_tag = ? WHERE to_tag = ? AND relation = 'alias_of'",
                (new, old),
            )
            for lid in ids:
                self._index_keywords(self.seq_of(lid), lid)
        return ids

    # ---- statistics -------------------------------------------------------------------
    def grouped_counts(self, column: str) -> list[tuple[str | None, int]]:
        assert column in ("kind", "status", "confidence", "project", "source")
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                f"SELECT {column}, count(*) FROM lessons GROUP BY {column} ORDER BY count(*) DESC"
            )
        ]

    def table_count(self, table: str) -> int:
        assert table in ("edges", "search_log", "lesson_tags", "evidence")
        return int(self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def top_queries(self, limit: int) -> list[tuple[str, int]]:
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT query, count(*) FROM search_log GROUP BY query ORDER BY count(*) DESC, "
                "query LIMIT ?",
                (limit,),
            )
        ]

    def most_used(self, limit: int) -> list[tuple[str, str, int]]:
        return [
            (r[0], r[1], r[2])
            for r in self.conn.execute(
                "SELECT id, title, usage_count FROM lessons WHERE usage_count > 0 "
                "ORDER BY usage_count DESC, id LIMIT ?",
                (limit,),
            )
        ]


def _chunks(items: list[Any], size: int = CHUNK) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
